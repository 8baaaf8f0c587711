#!/usr/bin/env python3
"""What nn.MultiheadAttention and nn.Transformer{Encoder,Decoder}Layer keep for backward, op by
op: the autograd nodes of one forward in execution order, and every tensor saved_tensors_hooks
packs (shape, dtype, storage bytes; which input/parameter/output it is, else "new").
Runs under torch 2.x and 1.13:
    /work/venv213/bin/python validation/probe_mha.py [CASE...]
    /usr/bin/python3 validation/probe_mha.py [CASE...]
Cases named amp_* run the forward under CPU bfloat16 autocast."""
import contextlib
import sys

import torch
import torch.nn as nn

torch.manual_seed(0)
torch.set_num_threads(1)
N, L, S, E, H = 2, 5, 7, 16, 4  # batch, target length, source length, width, heads


def storage_ptr(t):
    return t.untyped_storage().data_ptr() if hasattr(t, "untyped_storage") else t.storage().data_ptr()


def storage_bytes(t):
    if hasattr(t, "untyped_storage"):
        return t.untyped_storage().nbytes()
    return t.storage().size() * t.element_size()


def masks(kind, l, s):
    """The mask arguments of a case: "causal" (bool, True above the diagonal: not attended),
    "causal_float" (0 and -inf), "mask3d" (bool [N*H, L, S]), "kpm" (key_padding_mask, bool
    [N, S], the last two keys padded), "is_causal" (2.x: the causal bool mask with the hint),
    joined by "+"."""
    out = {}
    for k in kind.split("+"):
        causal = torch.ones(l, s, dtype=torch.bool).triu(1)
        if k in ("causal", "is_causal"):
            out["attn_mask"] = causal
            if k == "is_causal":
                out["is_causal"] = True
        elif k == "causal_float":
            out["attn_mask"] = torch.zeros(l, s).masked_fill(causal, float("-inf"))
        elif k == "mask3d":
            out["attn_mask"] = causal.expand(N * H, l, s).contiguous()
        elif k == "kpm":
            kpm = torch.zeros(N, s, dtype=torch.bool)
            kpm[:, -2:] = True
            out["key_padding_mask"] = kpm
    return out


def mha(**kw):
    def make(self_attn=True, need_weights=True, average=True, batch_first=False, kdim=None, vdim=None, mask="",
             kv_shared=False, key_grad=True):
        m = nn.MultiheadAttention(E, H, batch_first=batch_first, kdim=kdim, vdim=vdim, **kw)
        def shape(n, l, e):
            return (n, l, e) if batch_first else (l, n, e)
        def call(q, k=None, v=None):
            if self_attn:
                k = v = q
            elif kv_shared:  # a decoder's cross-attention: attn(x, memory, memory)
                v = k
            args = {"need_weights": need_weights}
            if mask:
                args.update(masks(mask, L, L if self_attn else S))
            if need_weights and hasattr(nn.MultiheadAttention.forward, "__code__") and \
                    "average_attn_weights" in nn.MultiheadAttention.forward.__code__.co_varnames:
                args["average_attn_weights"] = average
            out, w = m(q, k, v, **args)
            return out
        ins = [("q", shape(N, L, E))] if self_attn else \
            [("q", shape(N, L, E)), ("k", shape(N, S, kdim or E), key_grad)] if kv_shared else \
            [("q", shape(N, L, E)), ("k", shape(N, S, kdim or E)), ("v", shape(N, S, vdim or E))]
        return m, call, ins
    return make


def enc(**kw):
    def make():
        m = nn.TransformerEncoderLayer(E, H, dim_feedforward=32, **kw)
        return m, (lambda x: m(x)), [("x", (L, N, E))]
    return make


def dec(**kw):
    def make():
        m = nn.TransformerDecoderLayer(E, H, dim_feedforward=32, **kw)
        return m, (lambda x, mem: m(x, mem)), [("x", (L, N, E)), ("mem", (S, N, E))]
    return make


CASES = {
    "mha_self_weights": lambda: mha()(),
    "mha_self_noweights": lambda: mha()(need_weights=False),
    "mha_self_noavg": lambda: mha()(average=False),
    "mha_self_dropout": lambda: mha(dropout=0.1)(need_weights=False),
    "mha_self_dropout_weights": lambda: mha(dropout=0.1)(),
    "mha_self_batch_first": lambda: mha()(batch_first=True, need_weights=False),
    "mha_cross": lambda: mha()(self_attn=False, need_weights=False),
    "mha_cross_weights": lambda: mha()(self_attn=False),
    "mha_kvdim": lambda: mha()(self_attn=False, kdim=8, vdim=12, need_weights=False),
    "mha_bias_kv": lambda: mha(add_bias_kv=True, add_zero_attn=True)(need_weights=False),
    "mha_nobias": lambda: mha(bias=False)(need_weights=False),
    # masks (constants: they keep nothing of their own, but change which path runs)
    "mha_self_causal": lambda: mha()(need_weights=False, mask="causal"),
    "mha_self_causal_float": lambda: mha()(need_weights=False, mask="causal_float"),
    "mha_self_is_causal": lambda: mha()(need_weights=False, mask="is_causal"),
    "mha_self_mask3d": lambda: mha()(need_weights=False, mask="mask3d"),
    "mha_self_kpm": lambda: mha()(need_weights=False, mask="kpm"),
    "mha_self_kpm_causal": lambda: mha()(need_weights=False, mask="kpm+causal"),
    "mha_self_kpm_causal_weights": lambda: mha()(mask="kpm+causal"),
    "mha_self_batch_first_kpm": lambda: mha()(batch_first=True, need_weights=False, mask="kpm"),
    "mha_cross_kpm": lambda: mha()(self_attn=False, need_weights=False, mask="kpm"),
    "encoder": lambda: enc(dropout=0.1)(),
    "encoder_norm_first_gelu": lambda: enc(dropout=0.1, norm_first=True, activation="gelu")(),
    "decoder": lambda: dec(dropout=0.1)(),
    # CPU bfloat16 autocast (torch_encoder, torch_decoder): batch_first, dropout, no weights; the
    # cross-attention's key is its value and needs no gradient (the decoder's memory, an input)
    "amp_self_dropout": lambda: mha(dropout=0.1)(batch_first=True, need_weights=False),
    "amp_cross_dropout": lambda: mha(dropout=0.1)(self_attn=False, kv_shared=True, key_grad=False,
                                                  batch_first=True, need_weights=False),
}


def run(name):
    module, fn, specs = CASES[name]()
    module.train()
    args = [torch.randn(s[1], requires_grad=s[2] if len(s) > 2 else True) for s in specs]
    saved = []
    amp = torch.autocast("cpu", dtype=torch.bfloat16) if name.startswith("amp_") else contextlib.nullcontext()
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t), amp:
        out = fn(*args)
    named = {s[0]: a for s, a in zip(specs, args)}
    named.update({"param " + n: p for n, p in module.named_parameters()})
    named["out"] = out
    params = sum(p.numel() for p in module.parameters())
    print(f"{name}: torch {torch.__version__} params {params} "
          f"({', '.join(f'{n} {list(p.shape)}' for n, p in module.named_parameters())}) out {list(out.shape)}")
    nodes, stack, seen_nodes = [], [out.grad_fn], set()
    while stack:
        g = stack.pop()
        if g is None or g in seen_nodes:
            continue
        seen_nodes.add(g)
        nodes.append(g.name())
        stack.extend(f for f, _ in g.next_functions)
    print("    nodes:", " ".join(reversed(nodes)))
    seen, total = set(), 0
    for t in saved:
        key = (storage_ptr(t), tuple(t.shape), t.dtype)
        if key in seen:
            continue
        seen.add(key)
        who = "new"
        for n, ref in named.items():
            if storage_ptr(ref) == storage_ptr(t):
                who = n + ("" if t.shape == ref.shape else " (view)")
        print(f"    {list(t.shape)} {str(t.dtype).replace('torch.', '')} {storage_bytes(t)}B = {who}")
    stores = {}
    for t in saved:
        stores[storage_ptr(t)] = storage_bytes(t)
    print(f"    distinct storages kept: {sum(stores.values())}B")


if __name__ == "__main__":
    for n in sys.argv[1:] or CASES:
        try:
            run(n)
        except Exception as e:  # a case the version lacks
            print(f"{n}: {type(e).__name__}: {e}")
