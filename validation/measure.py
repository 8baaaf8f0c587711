#!/usr/bin/python3
"""One training-memory measurement in this (fresh) process; prints one JSON
object.  Usage (torch 1.13: /usr/bin/python3; torch 2.13: /work/venv213/bin/python):
  PYTHON validation/measure.py NETWORK --batch B --optimizer sgd|momentum|adam|adamw
                   [--set-to-none | --keep-grads] [--amp bfloat16|float16] [--dtype bfloat16|float16] [--foreach | --fused] [--loop plain|function]
                   [--checkpoint blocks|every:K|selective [--checkpoint-impl reentrant|non-reentrant]] [--grad-accum K]
                   [--trace FILE] [--threads N]
See README.md for what every field means."""
import argparse
import contextlib
import functools
import json
import os
import sys
import time

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import checkpointing  # noqa: E402
import data_parallel  # noqa: E402
import memtrace  # noqa: E402
from instrument import (ModuleTracker, SavedRecorder, graph_saved,  # noqa: E402
                        storage_key, summarise_saved)
from memtrace import Marker  # noqa: E402
from networks import NETWORKS  # noqa: E402


def storage_bytes(tensors):
    """Bytes of the distinct storages of some tensors (a DTensor's: its local shard's)."""
    seen = {}
    for t in tensors:
        if t is not None:
            ptr, n = storage_key(data_parallel.local(t))
            seen[ptr] = n
    return sum(seen.values())


def grad_tensors(g):
    """The tensors behind a .grad: itself, or a sparse one's indices and values (its size is theirs,
    whatever storage they share: Embedding(sparse=True)'s indices view the ids)."""
    if g is None:
        return []
    return [g._indices(), g._values()] if g.is_sparse else [g]


def make_optimizer(name, params, foreach=False, fused=False):
    """foreach is always passed explicitly (False: the single-tensor loop); fused
    only when asked for (torch 1.13's fused Adam is CUDA-only, its SGD and
    AdamW have no such argument: torch itself refuses those runs)."""
    kw = {"foreach": foreach}
    if fused:
        kw = {"fused": True}
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-3, momentum=0, **kw)
    if name == "momentum":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9, **kw)
    if name == "adam":
        return torch.optim.Adam(params, lr=1e-3, **kw)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-3, **kw)
    raise ValueError(name)


LOSSES = {"cross_entropy": F.cross_entropy, "nll": F.nll_loss, "mse": F.mse_loss, "l1": F.l1_loss,
          "smooth_l1": F.smooth_l1_loss, "huber": F.huber_loss, "bce_with_logits": F.binary_cross_entropy_with_logits,
          # a language model's loss as Hugging Face's Trainer smooths it (ignore_index its -100)
          "cross_entropy_smoothed": lambda out, y: F.cross_entropy(out, y, ignore_index=-100, label_smoothing=0.1)}
CLASS_LOSSES = ("cross_entropy", "nll", "cross_entropy_smoothed", "causal_lm")  # int64 class targets


def causal_lm_loss(logits, labels, ignore_index=-100):
    """transformers' ForCausalLMLoss as written (loss/loss_utils.py; 5.23.0's the same, its
    num_items_in_batch None: reduction "mean"): logits.float() (a float32 copy of 16-bit logits,
    a no-op on float32 ones), the labels [B, T] padded with ignore_index and shifted by one into a
    new tensor (the padded ones live until it returns), cross_entropy with ignore_index."""
    logits = logits.float()
    labels = F.pad(labels, (0, 1), value=ignore_index)
    shift_labels = labels[..., 1:].contiguous()
    return F.cross_entropy(logits.view(-1, logits.shape[-1]), shift_labels.view(-1), ignore_index=ignore_index)


def loss_fn(kind, out, y, batch=None):
    """causal_lm: y is [batch * T] ids, read as the labels [batch, T] (a view)."""
    if kind == "causal_lm":
        return causal_lm_loss(out, y.view(batch, -1))
    return LOSSES[kind](out, y) if kind in LOSSES else out.mean()


def loss_terms(net):
    """The network's loss as (kind, weight) terms: one unweighted term, or networks.py's list."""
    return [(net.loss, None)] if isinstance(net.loss, str) else list(net.loss)


def total_loss(terms, outs, ys, batch=None):
    """`w1 * l1(out1, y1) + w2 * l2(out2, y2) + ...` as one Python expression evaluates it: each
    term (times its weight, a Python number) added to the sum as soon as it is made, no name
    keeping a term or an unweighted loss alive. A single unweighted term is loss_fn's."""
    if len(terms) == 1 and terms[0][1] is None:
        return loss_fn(terms[0][0], outs, ys[0], batch)
    total = None
    for (kind, weight), out, y in zip(terms, outs, ys):
        term = loss_fn(kind, out, y, batch) if weight is None else weight * loss_fn(kind, out, y, batch)
        total = term if total is None else total + term
        del term
    return total


def make_target(kind, oshape):
    """The target a loss kind reads for an output of that shape (None: `mean` has none)."""
    if kind in CLASS_LOSSES and len(oshape) > 2:  # per pixel: [B, C, d1, ...] -> [B, d1, ...]
        return torch.randint(0, oshape[1], [oshape[0]] + oshape[2:])
    if kind in CLASS_LOSSES:
        return torch.randint(0, oshape[-1], (oshape[0],))  # [B], or [B * T] for a language model
    if kind in ("mse", "l1", "smooth_l1", "huber"):
        return torch.randn(oshape)
    if kind == "bce_with_logits":
        return torch.rand(oshape)
    return None


def optimizer_state(opt):
    """Total and per-slot bytes of the optimizer state (dedup by storage)."""
    seen, slots = {}, {}
    for st in opt.state.values():
        for slot, t in st.items():
            if isinstance(t, torch.Tensor):
                ptr, n = storage_key(data_parallel.local(t))
                if ptr not in seen:
                    seen[ptr] = n
                    slots[slot] = slots.get(slot, 0) + n
    return sum(seen.values()), slots


def run(args):
    net = NETWORKS[args.network]
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    memtrace.patch_record_function()
    set_to_none = not args.keep_grads
    res = {"network": args.network, "batch": args.batch, "optimizer": args.optimizer,
           "set_to_none": set_to_none, "foreach": args.foreach, "threads": args.threads,
           "amp": args.amp, "torch_version": torch.__version__}
    if args.fused:                  # only then, so that earlier fixtures stay as they are
        res["fused"] = True
    if args.loop != "plain":  # plain runs' fixtures stay as they were
        res["loop"] = args.loop
    if args.checkpoint:
        res["checkpoint"], res["checkpoint_impl"] = args.checkpoint, args.checkpoint_impl
    if args.grad_accum > 1:
        res["grad_accum"] = args.grad_accum
    if args.dtype:  # likewise
        res["dtype"] = args.dtype
    if args.parallel:
        rank, world = data_parallel.setup()
        res.update(parallel=args.parallel, world_size=world, rank=rank)
        if args.parallel == "ddp" and args.bucket_cap_mb is not None:
            res["bucket_cap_mb"] = args.bucket_cap_mb
    # Mixed precision: forward and loss under CPU autocast, as `with torch.autocast(...):`
    # wraps them in a training loop; backward and the step run outside it.
    autocast = (lambda: torch.autocast("cpu", dtype=getattr(torch, args.amp))) if args.amp \
        else contextlib.nullcontext
    t0 = time.time()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True,
                 record_shapes=True) as prof:
        with Marker("nnmem::build"):
            model = net.build()
            if args.dtype:  # a 16-bit model, as `model.to(torch.bfloat16)` makes one
                model = model.to(getattr(torch, args.dtype))
            model.train()
            if net.input_dtype == "int64":
                x = torch.randint(0, net.vocab, (args.batch, *net.input_shape))
            else:
                x = torch.randn(args.batch, *net.input_shape, dtype=getattr(torch, args.dtype or net.input_dtype))
            # A network whose model computes its own loss (Hugging Face's labels=...) is called
            # with the targets in training: forward(ys) returns its output, whose .loss is it.
            forward = (lambda ys=None: net.call(model, x, ys) if ys is not None else net.call(model, x)) if net.call \
                else (lambda: model(x))
            tracker = ModuleTracker(model)
            # An eval-mode forward (no BN stat update) to learn the output shape
            # for the target and each layer's output shape. With grad enabled: under
            # no_grad, 1.13's nn.TransformerEncoderLayer takes its fast path (one
            # fused op) and calls none of its modules.
            model.eval()
            tracker.record_shapes = True
            with torch.enable_grad():
                outs = forward()
                oshapes = [list(o.shape) for o in (outs if isinstance(outs, tuple) else (outs,))]
                del outs
            oshape = oshapes[0] if len(oshapes) == 1 else oshapes
            tracker.record_shapes = False
            model.train()
            inner = model
            if args.parallel:
                with Marker("nnmem::wrap"):
                    model = data_parallel.wrap(model, args.parallel, args.bucket_cap_mb)
                shards = data_parallel.shard_storages(model)
            terms = loss_terms(net)
            ys = [make_target(kind, shape) for (kind, _), shape in zip(terms, oshapes)]
            trainable = [p for p in model.parameters() if p.requires_grad]
            opt = make_optimizer(args.optimizer, trainable, args.foreach, args.fused)

        params = {storage_key(data_parallel.local(p))[0] for p in model.parameters()}
        if args.parallel and args.parallel != "ddp":
            params = functools.partial(data_parallel.param_storages, model)
        buffers = {storage_key(b)[0] for b in model.buffers()}
        named = {storage_key(x)[0]: "input"}
        for y in ys:
            if y is not None:
                named[storage_key(y)[0]] = "target"
        rec = SavedRecorder(tracker, params, buffers, named)
        graph_map = {}
        recording = [False]  # the forward whose saved tensors are recorded
        restore_forward = None
        if args.checkpoint:
            # What a checkpointed segment keeps is its inputs (saved for backward in 2.x's and
            # in the reentrant implementation, held by a closure in 1.13's non-reentrant one:
            # recorded here in every case, as saved tensors).
            def on_segment(names, inputs):
                if recording[0]:
                    for t in inputs:
                        rec.pack(t)
            restore_forward = checkpointing.install(inner, args.checkpoint, args.checkpoint_impl, on_segment)

        def iteration(it, held):
            """One step; `out` and `loss` are bound in `held`. The plain loop passes the same
            dict every time, as a loop's variables: the previous step's out and loss live until
            rebound. --loop function passes a new one, as `def train_step(): ...; return
            loss.item()` has locals: they are freed when it returns."""
            k = args.grad_accum
            for micro in range(k):
                with Marker(f"nnmem::micro{micro}"):
                    micro_step(it, micro, k, held)
            return held["loss"].item()

        def micro_step(it, micro, k, held):
            """With --grad-accum K, K of these make an iteration: zero_grad() before the first,
            the loss divided by K, step() after the last."""
            record = it == 2 and micro == 0  # it 2: record saved tensors
            if micro == 0:
                with Marker("nnmem::zero_grad"):
                    opt.zero_grad(set_to_none=set_to_none)
            recording[0] = record
            with rec.hooks() if record else contextlib.nullcontext(), autocast():
                with Marker("nnmem::forward"):
                    held["out"] = forward(ys) if net.own_loss else forward()
                with Marker("nnmem::loss"), Marker("module::<loss>"):
                    if net.own_loss:  # computed in the model's forward: its output holds it
                        held["loss"] = held["out"].loss if k == 1 else held["out"].loss / k
                    else:
                        held["loss"] = total_loss(terms, held["out"], ys, args.batch) if k == 1 else \
                            total_loss(terms, held["out"], ys, args.batch) / k
            recording[0] = False
            # Reading a checkpointed node's saved tensors would recompute its segment.
            if record and not args.checkpoint:
                with Marker("nnmem::inspect"):
                    graph_map.update(graph_saved(held["loss"].grad_fn))
            with Marker("nnmem::backward"):
                held["loss"].backward()
            if micro == k - 1:
                with Marker("nnmem::step"):
                    opt.step()

        held = {}
        for it in range(3):
            with Marker(f"nnmem::iter{it}"):
                loss_value = iteration(it, held if args.loop == "plain" else {})

        # Static figures after the last step.
        res["param_count"] = sum(p.numel() for p in model.parameters())
        res["trainable_param_count"] = sum(p.numel() for p in trainable)
        res["param_bytes"] = storage_bytes(model.parameters())
        res["trainable_param_bytes"] = storage_bytes(trainable)
        res["buffer_bytes"] = storage_bytes(model.buffers())
        res["grad_bytes"] = storage_bytes(t for p in model.parameters() for t in grad_tensors(p.grad))
        res["optimizer_state_bytes"], res["optimizer_state_slots"] = optimizer_state(opt)
        res["input_bytes"] = storage_bytes([x])
        res["target_bytes"] = storage_bytes(ys)
        res["output_shape"] = oshape
        res["loss_value"] = loss_value

        # Eval: free optimizer, grads, out and loss, then one no-grad forward (never
        # checkpointed: checkpoint() stashes the RNG state even without grad).
        if restore_forward is not None:
            restore_forward()
        del opt
        held.clear()
        for p in model.parameters():
            p.grad = None
        tracker.release_fast_paths(model)
        model.eval()
        with Marker("nnmem::eval"):
            with torch.no_grad():
                eout = forward()
            del eout
    res["wall_seconds_measured"] = round(time.time() - t0, 2)

    workspace = None
    if args.parallel == "ddp":
        res["bucket_bytes"] = data_parallel.ddp_bucket_bytes(model)
        res["bucket_params"] = data_parallel.ddp_bucket_params(model)
        workspace = data_parallel.ddp_workspace(res["bucket_bytes"])
    elif args.parallel:
        workspace = data_parallel.fsdp_workspace(shards)
    tr = memtrace.analyse(prof, workspace)
    w = memtrace.window(tr, "nnmem::iter2")
    if args.grad_accum > 1:
        res["peak_micro_step"] = w["peak_micro_step"]
    res.update({"peak_bytes": w["peak_bytes"], "peak_phase": w["peak_phase"],
                "peak_op": w["peak_op"], "peak_op_outer": w["peak_op_outer"],
                "peak_module": w["peak_module"], "iter_start_bytes": w["start_bytes"],
                "iter_end_bytes": w["end_bytes"],
                "peak_unfiltered_bytes": w["peak_unfiltered_bytes"],
                "phases": w["phases"],
                "excluded_workspace_peak": tr.excluded_workspace_peak,
                "unmatched_free_bytes": tr.unmatched_free_bytes,
                "unseen_free_bytes": tr.unseen_free_bytes,
                "framework_workspace_bytes": tr.framework_workspace_bytes})
    # Same figure one iteration earlier, without the saved-tensor hooks: a
    # check that the instrumentation does not change the memory behaviour.
    res["iter1_peak_bytes"] = memtrace.window(tr, "nnmem::iter1")["peak_bytes"]
    ev = memtrace.window(tr, "nnmem::eval")
    res.update({"eval_start_bytes": ev["start_bytes"], "eval_peak_bytes": ev["peak_bytes"],
                "eval_peak_op_outer": ev["peak_op_outer"], "eval_peak_module": ev["peak_module"]})
    res.update(summarise_saved(rec.records, graph_map))
    # A module's own parameters, each tensor counted once, for the module that registered it
    # first (model.parameters()' order): a tied weight (a decoder's tied to the embedding) is
    # the embedding's.
    first_owner = {}
    for m in model.modules():
        for p in m.parameters(recurse=False):
            first_owner.setdefault(id(p), m)
    res["layers"] = [{"name": n, "type": type(m).__name__,
                      "output_shapes": tracker.shapes.get(n, []),
                      "params": sum(p.numel() for p in m.parameters(recurse=False) if first_owner[id(p)] is m)}
                     for n, m in tracker.leaves.items()]
    if args.trace:
        memtrace.write_trace(tr, "nnmem::iter2", args.trace.format(rank=res.get("rank", 0)))
    if args.trace_eval:
        memtrace.write_trace(tr, "nnmem::eval", args.trace_eval)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("network", choices=sorted(NETWORKS))
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--optimizer", choices=["sgd", "momentum", "adam", "adamw"], required=True)
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--set-to-none", action="store_true", help="zero_grad(set_to_none=True) (default)")
    g.add_argument("--keep-grads", action="store_true", help="zero_grad(set_to_none=False)")
    ap.add_argument("--amp", choices=["bfloat16", "float16"], help="run forward and loss under CPU autocast")
    ap.add_argument("--dtype", choices=["bfloat16", "float16"], help="the model (model.to(dtype)) and its float input in this dtype")
    f = ap.add_mutually_exclusive_group()
    f.add_argument("--foreach", action="store_true", help="the optimizer's multi-tensor implementation")
    f.add_argument("--fused", action="store_true", help="the optimizer's fused kernel (torch 2.x on the CPU)")
    ap.add_argument("--loop", choices=["plain", "function"], default="plain",
                    help="plain: a loop binding out and loss (default); function: each step in a "
                         "function that returns loss.item()")
    ap.add_argument("--checkpoint", help="checkpoint the units (networks_scaling.py): blocks | every:K; or selective: "
                    "each scaled_dot_product_attention call")
    ap.add_argument("--checkpoint-impl", choices=checkpointing.IMPLS, default="non-reentrant",
                    help="torch.utils.checkpoint's use_reentrant=True or False (default)")
    ap.add_argument("--grad-accum", type=int, default=1,
                    help="micro-steps per optimizer step (loss / K; zero_grad before the first)")
    ap.add_argument("--parallel", choices=data_parallel.STRATEGIES,
                    help="data parallelism, one rank of a torchrun launch (measure_dist.py)")
    ap.add_argument("--bucket-cap-mb", type=float, help="DDP's bucket_cap_mb (default: DDP's own, 25 with a first bucket of 1)")
    ap.add_argument("--out", help="write the JSON here instead of stdout ({rank}: the rank)")
    ap.add_argument("--trace", help="write iteration 2's filtered allocator events here")
    ap.add_argument("--trace-eval", help="write the eval forward's filtered allocator events here")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    args = ap.parse_args()
    res = run(args)
    if args.out:
        with open(args.out.format(rank=res.get("rank", 0)), "w") as f:
            json.dump(res, f, sort_keys=True)
    else:
        print(json.dumps(res, sort_keys=True))


if __name__ == "__main__":
    main()
