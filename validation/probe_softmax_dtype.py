#!/usr/bin/env python3
"""Hugging Face's eager attention on a 16-bit model, allocation by allocation (torch 2.x CPU):
    attn_weights = attn_weights + attention_mask
    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(query.dtype)
each allocator event with its outermost and innermost op, and whether measure.py's rule
(memtrace.py: a tensor made and freed inside one outermost aten:: call is that op's workspace)
excludes it; with and without autograd. The evidence for Softmax's `dtype` (layers/elementwise.cpp)
and validation/ops_saved_transformers.md.
    /work/venv213/bin/python validation/probe_softmax_dtype.py [bfloat16|float16]
Scores [2, 4, 32, 32] (16,384 bytes in 16 bits, 32,768 in float32), the mask [2, 1, 32, 32]."""
import os
import sys

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import memtrace  # noqa: E402

torch.set_num_threads(1)
dtype = getattr(torch, sys.argv[1] if len(sys.argv) > 1 else "bfloat16")


def attention_tail(scores, mask):
    attn_weights = scores + mask
    attn_weights = F.softmax(attn_weights, dim=-1, dtype=torch.float32).to(dtype)
    return attn_weights


for grad in (False, True):
    scores = torch.randn(2, 4, 32, 32, dtype=dtype, requires_grad=grad)
    mask = torch.zeros(2, 1, 32, 32, dtype=dtype)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True) as prof:
        with torch.set_grad_enabled(grad):
            out = attention_tail(scores, mask)
        del out
    tr = memtrace.analyse(prof)
    print("%s, %s:" % (str(dtype)[6:], "autograd" if grad else "no_grad"))
    for e in tr.events:
        print("  %+8d  %-9s %-16s > %-22s running %7d" % (e.size, "excluded" if e.excluded else "", e.outer_op, e.inner_op,
                                                           e.total))
    print("  peak (counted): %d" % max([0] + [e.total for e in tr.events]))
