#!/usr/bin/env python3
"""What the transformer ops keep for backward (torch 2.x CPU): each saved tensor's shape, dtype
and whether it is the input, the output, a parameter or a new tensor, as saved_tensors_hooks
sees it.   /work/venv213/bin/python validation/probe_transformer_ops.py [NAME...]
(the matmul_* cases also under torch 1.13: /usr/bin/python3 ... matmul_swapped ...);
--ready-order prints the order backward makes Linear's and Conv1D's parameter gradients ready."""
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)
B, T, H, D = 2, 8, 4, 16  # batch, sequence, heads, head size
E = H * D


def sdpa(backend, **kw):  # backend: SDPBackend's name (torch 2.x)
    def f(q, k, v):
        with torch.nn.attention.sdpa_kernel([getattr(torch.nn.attention.SDPBackend, backend)]):
            return F.scaled_dot_product_attention(q, k, v, **kw)
    return f


def hf_rmsnorm(x, w):  # transformers' LlamaRMSNorm.forward
    h = x.to(torch.float32)
    var = h.pow(2).mean(-1, keepdim=True)
    h = h * torch.rsqrt(var + 1e-6)
    return w * h.to(x.dtype)


def hf_conv1d(x, w, b):  # transformers.pytorch_utils.Conv1D.forward: weight [nx, nf], bias [nf]
    return torch.addmm(b, x.view(-1, x.size(-1)), w).view(x.size()[:-1] + (w.size(1),))


def bf16_autocast(f):  # the same under CPU autocast to bfloat16 (validation/measure.py's --amp)
    def g(*args):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return f(*args)
    return g


qkv = [(B, H, T, D)] * 3
CASES = {
    "embedding": (lambda ids, w: F.embedding(ids, w), [("ids", (B, T)), ("w", (100, E))]),
    "embedding_padding": (lambda ids, w: F.embedding(ids, w, padding_idx=0), [("ids", (B, T)), ("w", (100, E))]),
    # GPT-2's Conv1D (addmm of the input's rows and an [in, out] weight) against nn.Linear's F.linear
    "linear": (lambda x, w, b: F.linear(x, w, b), [("x", (B, T, E)), ("w", (3 * E, E)), ("b", (3 * E,))]),
    "hf_conv1d": (hf_conv1d, [("x", (B, T, E)), ("w", (E, 3 * E)), ("b", (3 * E,))]),
    "linear_autocast": (bf16_autocast(lambda x, w, b: F.linear(x, w, b)), [("x", (B, T, E)), ("w", (3 * E, E)), ("b", (3 * E,))]),
    "hf_conv1d_autocast": (bf16_autocast(hf_conv1d), [("x", (B, T, E)), ("w", (E, 3 * E)), ("b", (3 * E,))]),
    "layer_norm": (lambda x, w, b: F.layer_norm(x, (E,), w, b), [("x", (B, T, E)), ("w", (E,)), ("b", (E,))]),
    "layer_norm_noaffine": (lambda x: F.layer_norm(x, (E,)), [("x", (B, T, E))]),
    "rms_norm": (lambda x, w: F.rms_norm(x, (E,), w, 1e-6), [("x", (B, T, E)), ("w", (E,))]),
    "hf_rmsnorm": (hf_rmsnorm, [("x", (B, T, E)), ("w", (E,))]),
    "group_norm": (lambda x, w, b: F.group_norm(x, 2, w, b), [("x", (B, 8, 4, 4)), ("w", (8,)), ("b", (8,))]),
    "instance_norm": (lambda x: F.instance_norm(x), [("x", (B, 8, 4, 4))]),
    "matmul4d": (lambda a, b: a @ b, [("a", (B, H, T, D)), ("b", (B, H, D, T))]),
    "matmul_bcast": (lambda a, b: a @ b, [("a", (B, H, T, D)), ("b", (D, T))]),
    # HF's eager attention: q and k are [B, T, H, D] projections viewed .transpose(1, 2); matmul folds
    # the batch and head dimensions with reshape, which copies such a view (and an expanded one)
    "matmul_swapped": (lambda a, b: a.transpose(1, 2) @ b.transpose(1, 2).transpose(-1, -2),
                       [("a", (B, T, H, D)), ("b", (B, T, H, D))]),
    "matmul_transposed_last": (lambda a, b: a @ b.transpose(-1, -2), [("a", (B, H, T, D)), ("b", (B, H, T, D))]),
    "matmul_weights_v": (lambda w, v: w @ v.transpose(1, 2), [("w", (B, H, T, T)), ("v", (B, T, H, D))]),
    "matmul_bcast4d": (lambda a, b: a @ b, [("a", (1, H, T, D)), ("b", (B, H, D, T))]),
    "matmul_swapped_2d": (lambda a, b: a.transpose(1, 2) @ b, [("a", (B, T, H, D)), ("b", (D, T))]),
    "matmul_transposed_last_2d": (lambda a, b: a.transpose(-1, -2) @ b, [("a", (B, H, D, T)), ("b", (D, T))]),
    "matmul_2d_transposed_last": (lambda a, b: a @ b.transpose(-1, -2), [("a", (T, D)), ("b", (B, H, T, D))]),
    "matmul_2d_swapped": (lambda a, b: a @ b.transpose(1, 2), [("a", (T, D)), ("b", (B, D, H, T))]),
    "matmul_3d_4d": (lambda a, b: a @ b, [("a", (H, T, D)), ("b", (B, H, D, T))]),
    "matmul_3d_transposed": (lambda a, b: a.transpose(1, 2) @ b, [("a", (B, D, T)), ("b", (B, D, T))]),
    "transpose": (lambda x: x.transpose(1, 2), [("x", (B, T, H, D))]),
    "contiguous": (lambda x: x.transpose(1, 2).contiguous(), [("x", (B, T, H, D))]),
    "split": (lambda x: x.split(E, dim=2)[1], [("x", (B, T, 3 * E))]),
    "select": (lambda x: x[:, 0], [("x", (B, T, E))]),
    "slice": (lambda x: x[..., : D // 2], [("x", (B, T, D))]),
    "div_scalar": (lambda x: x / 8.0, [("x", (B, T, E))]),
    "mul_scalar": (lambda x: x * 8.0, [("x", (B, T, E))]),
    "neg": (lambda x: -x, [("x", (B, T, E))]),
    "masked_fill": (lambda x: x.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), -1e9), [("x", (B, H, T, T))]),
    "where": (lambda x: torch.where(torch.ones(T, T, dtype=torch.bool).tril(), x, torch.tensor(-1e9)), [("x", (B, H, T, T))]),
    "mean": (lambda x: x.mean(-1, keepdim=True), [("x", (B, T, E))]),
    "sum": (lambda x: x.sum(1), [("x", (B, T, E))]),
    "amax": (lambda x: x.amax(-1), [("x", (B, T, E))]),
    "pow2": (lambda x: x.pow(2), [("x", (B, T, E))]),
    "rsqrt": (lambda x: torch.rsqrt(x.abs() + 1), [("x", (B, T, 1))]),
    "expand": (lambda x: x.expand(B, -1, -1), [("x", (1, 1, E))]),
    "repeat_interleave": (lambda x: x.repeat_interleave(2, dim=1), [("x", (B, H, T, D))]),
    "gqa_expand_reshape": (lambda x: x[:, :, None].expand(B, H, 2, T, D).reshape(B, 2 * H, T, D), [("x", (B, H, T, D))]),
    "sdpa_math": (sdpa("MATH"), [("q", qkv[0]), ("k", qkv[1]), ("v", qkv[2])]),
    "sdpa_math_causal": (sdpa("MATH", is_causal=True), [("q", qkv[0]), ("k", qkv[1]), ("v", qkv[2])]),
    "sdpa_math_dropout": (sdpa("MATH", dropout_p=0.1), [("q", qkv[0]), ("k", qkv[1]), ("v", qkv[2])]),
    "sdpa_math_mask": (lambda q, k, v: sdpa("MATH", attn_mask=torch.zeros(T, T))(q, k, v), [("q", qkv[0]), ("k", qkv[1]), ("v", qkv[2])]),
    "sdpa_flash": (sdpa("FLASH_ATTENTION"), [("q", qkv[0]), ("k", qkv[1]), ("v", qkv[2])]),
    "sdpa_flash_causal": (sdpa("FLASH_ATTENTION", is_causal=True), [("q", qkv[0]), ("k", qkv[1]), ("v", qkv[2])]),
    "sdpa_flash_mask": (lambda q, k, v: sdpa("FLASH_ATTENTION", attn_mask=torch.zeros(T, T))(q, k, v), [("q", qkv[0]), ("k", qkv[1]), ("v", qkv[2])]),
    "sdpa_default": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v), [("q", qkv[0]), ("k", qkv[1]), ("v", qkv[2])]),
    "sdpa_default_mask": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=torch.zeros(T, T)), [("q", qkv[0]), ("k", qkv[1]), ("v", qkv[2])]),
    "sdpa_default_dropout": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, dropout_p=0.1), [("q", qkv[0]), ("k", qkv[1]), ("v", qkv[2])]),
    "sdpa_gqa": (lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True), [("q", qkv[0]), ("k", (B, 2, T, D)), ("v", (B, 2, T, D))]),
    "sdpa_bf16": (lambda q, k, v: F.scaled_dot_product_attention(q.bfloat16(), k.bfloat16(), v.bfloat16()), [("q", qkv[0]), ("k", qkv[1]), ("v", qkv[2])]),
    "cross_entropy_3d": (lambda x: F.cross_entropy(x.view(-1, 50), torch.zeros(B * T, dtype=torch.long)), [("x", (B, T, 50))]),
}


def storage(t):  # torch 2.x: untyped_storage(); 1.13 (where the matmul_* cases run too): storage()
    return t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage().untyped()


def describe(t, named):
    key = storage(t).data_ptr()
    for name, ref in named.items():
        if storage(ref).data_ptr() == key:
            same = "" if (t.shape == ref.shape and t.data_ptr() == ref.data_ptr()) else " (view)"
            return f"{name}{same}"
    return "new"


def run(name):
    fn, specs = CASES[name]
    args = []
    for n, shape in specs:
        if n == "ids":
            args.append(torch.randint(0, 100, shape))
        else:
            args.append(torch.randn(shape, requires_grad=True))
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        out = fn(*args)
    named = {n: a for (n, _), a in zip(specs, args)}
    named["out"] = out
    lines = []
    seen = set()
    for t in saved:
        key = (storage(t).data_ptr(), tuple(t.shape), t.dtype)
        if key in seen:
            continue
        seen.add(key)
        lines.append(f"{list(t.shape)} {str(t.dtype).replace('torch.', '')} {storage(t).nbytes()}B = {describe(t, named)}")
    print(f"{name}: out {list(out.shape)} {out.grad_fn.name() if out.grad_fn else None}")
    for l in lines:
        print("   ", l)


def ready_order():
    """The order backward makes nn.Linear's and Conv1D's gradients ready (DDP buckets them so)."""
    for name, (fn, specs) in (("linear", CASES["linear"]), ("hf_conv1d", CASES["hf_conv1d"])):
        args = [torch.randn(shape, requires_grad=n != "x") for n, shape in specs]
        order = []
        for (n, _), a in zip(specs, args):
            if a.requires_grad:
                a.register_post_accumulate_grad_hook(lambda t, n=n: order.append(n))
        fn(*args).sum().backward()
        print(f"{name}: ready {order}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--ready-order"]:
        ready_order()
    for n in [a for a in sys.argv[1:] if a != "--ready-order"] or ([] if "--ready-order" in sys.argv else CASES):
        run(n)
