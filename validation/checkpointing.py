"""Activation checkpointing for the validation networks, as nnmem's --checkpoint names it:
the model's units (networks_scaling.Units.units()) regrouped, each group of a checkpointed
plan run through torch.utils.checkpoint.checkpoint.

  blocks    every unit that is a block instance is checkpointed on its own
  every:K   consecutive groups of K units, each checkpointed (the last may be shorter)
  selective Megatron's selective recomputation: every call of
            torch.nn.functional.scaled_dot_product_attention (the attention core) checkpointed
            on its own, the units run as they are

impl: "reentrant" (use_reentrant=True) or "non-reentrant" (use_reentrant=False). Both keep
preserve_rng_state=True, PyTorch's default.
"""
import torch
from torch.utils.checkpoint import checkpoint

IMPLS = ("reentrant", "non-reentrant")


def groups(units, plan):
    """[(checkpointed, [unit, ...])] in order, for a plan 'blocks' or 'every:K'."""
    if plan == "blocks":
        return [(is_block, [(n, m)]) for n, m, is_block in units]
    if plan.startswith("every:"):
        k = int(plan[len("every:"):])
        if k < 1:
            raise ValueError(plan)
        flat = [(n, m) for n, m, _ in units]
        return [(True, flat[i:i + k]) for i in range(0, len(flat), k)]
    raise ValueError("unknown checkpoint plan " + plan)


def _chain(modules):
    def run(x):
        for _, m in modules:
            x = m(x)
        return x
    return run


def install(model, plan, impl, on_segment=None):
    """Replaces model.forward by the grouped, checkpointed forward. on_segment(names, inputs)
    is called with each checkpointed group's unit names and tensor inputs as it starts, with
    grad enabled (the harness records what the checkpoint keeps). Returns a function that puts
    the plain forward back."""
    if impl not in IMPLS:
        raise ValueError(impl)
    if plan == "selective":
        return _install_selective(impl, on_segment)
    plan_groups = groups(model.units(), plan)
    reentrant = impl == "reentrant"

    def forward(x):
        for checkpointed, members in plan_groups:
            if not checkpointed:
                x = _chain(members)(x)
                continue
            if on_segment is not None and torch.is_grad_enabled():
                on_segment([n for n, _ in members], [x])
            x = checkpoint(_chain(members), x, use_reentrant=reentrant)
        return x

    model.forward = forward
    return lambda: delattr(model, "forward")


def _install_selective(impl, on_segment):
    """torch.nn.functional.scaled_dot_product_attention replaced by its checkpointed call (the
    module's attribute, which transformers' sdpa_attention_forward looks up at each call)."""
    import torch.nn.functional as F
    core = F.scaled_dot_product_attention
    reentrant = impl == "reentrant"

    def checkpointed(query, key, value, *args, **kwargs):
        if on_segment is not None and torch.is_grad_enabled():
            on_segment(["scaled_dot_product_attention"], [query, key, value])
        return checkpoint(lambda q, k, v: core(q, k, v, *args, **kwargs), query, key, value, use_reentrant=reentrant)

    F.scaled_dot_product_attention = checkpointed

    def restore():
        F.scaled_dot_product_attention = core
    return restore
