#!/usr/bin/env python3
"""What HF's MixtralSparseMoeBlock keeps for backward, op by op (each autograd node's saved
tensors), on torch 2.13 with random weights, for several seeds whose routings differ: the
evidence for layers/moe.cpp (MoEExperts) and the section of validation/ops_saved_transformers.md.
    /work/venv213/bin/python validation/probe_hf_moe.py [grouped_mm|eager] [--dtype bfloat16|float16]
--dtype: the block as a 16-bit model's (`block.to(dtype)`, the input too; no autocast).
Hidden 64, intermediate 128, 4 experts, top 2, input [2, 32, 64] (T = 64 tokens, S = 128 pairs).
"saved" counts every storage the saved_tensors_hooks see that is not a parameter's (the
input x is among them: in a model it is the post-attention RMSNorm's output, which the router
keeps)."""
import sys

import torch
import transformers as T
from transformers.models.mixtral.modeling_mixtral import MixtralSparseMoeBlock

torch.set_num_threads(1)
args = sys.argv[1:]
model_dtype = torch.float32
if "--dtype" in args:
    i = args.index("--dtype")
    model_dtype = getattr(torch, args[i + 1])
    del args[i:i + 2]
impl = args[0] if args else "grouped_mm"
E, H = 4, 64
cfg = T.MixtralConfig(hidden_size=H, intermediate_size=128, num_local_experts=E, num_experts_per_tok=2)
cfg._experts_implementation = impl  # what a model sets from its config (grouped_mm: the CPU default)


def saved_by_node(root):
    rows, stack, done = [], [root], set()
    while stack:
        n = stack.pop()
        if n is None or n in done:
            continue
        done.add(n)
        for a in dir(n):
            if a.startswith("_saved_"):
                v = getattr(n, a)
                for t in v if isinstance(v, (tuple, list)) else [v]:
                    if isinstance(t, torch.Tensor):
                        rows.append((n.name(), a[len("_saved_"):], tuple(t.shape), str(t.dtype)[6:], t.untyped_storage().nbytes()))
        stack += [f for f, _ in n.next_functions]
    return sorted(rows)


for seed in range(4):
    torch.manual_seed(seed)
    block = MixtralSparseMoeBlock(cfg).train()
    for p in block.parameters():  # standalone, the block's parameters are torch.empty
        torch.nn.init.normal_(p, std=0.02)
    block.to(model_dtype)
    x = torch.randn(2, 32, H, dtype=model_dtype, requires_grad=True)
    params = {p.untyped_storage().data_ptr() for p in block.parameters()}
    seen = {}

    def pack(t):
        st = t.untyped_storage()
        if st.data_ptr() not in params:
            seen[st.data_ptr()] = st.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y = block(x)
    _, _, idx = block.gate(x.detach().view(-1, H))
    print("%s %s seed %d: tokens per expert %s, saved %d bytes" %
          (impl, str(model_dtype)[6:], seed, torch.bincount(idx.flatten(), minlength=E).tolist(), sum(seen.values())))
    if seed == 0:
        for node, what, shape, dtype, nbytes in saved_by_node(y.grad_fn):
            print("  %-20s %-12s %-16s %-8s %8d" % (node, what, shape, dtype, nbytes))
