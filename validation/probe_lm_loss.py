#!/usr/bin/env python3
"""What a language model's cross-entropy keeps and allocates, option by option (torch 1.13 and
2.x, CPU): F.cross_entropy over [B*T, V] logits with ignore_index, label_smoothing, the float32
upcast Hugging Face's ForCausalLMLoss does (`logits.float()`) and its shifted labels, each on
float32 and bfloat16 logits. Prints, per case, the tensors autograd keeps (saved_tensors_hooks,
one line per storage) and the allocator events of the loss's forward and of its backward (the
profiler; an op's workspace, allocated and freed inside it, marked `ws`), with the running total
above the logits, their gradient excluded.
   /work/venv213/bin/python validation/probe_lm_loss.py [CASE...]     (torch 2.13)
   /usr/bin/python3 validation/probe_lm_loss.py [CASE...]             (torch 1.13)
The notes in validation/ops_saved_transformers.md quote its output."""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import memtrace  # noqa: E402

torch.manual_seed(0)
torch.set_num_threads(1)
B, T, V = 2, 16, 50
N = B * T


def shifted(labels, ignore_index=-100):  # ForCausalLMLoss: pad with ignore_index, shift by one
    padded = F.pad(labels, (0, 1), value=ignore_index)
    return padded[..., 1:].contiguous().view(-1)


# name -> (logits dtype, loss of (logits [B, T, V], labels [B, T]))
CASES = {
    "plain": (torch.float32, lambda x, y: F.cross_entropy(x.view(-1, V), y.view(-1))),
    "ignore_index": (torch.float32, lambda x, y: F.cross_entropy(x.view(-1, V), y.view(-1), ignore_index=-100)),
    "ignore_index_hit": (torch.float32, lambda x, y: F.cross_entropy(x.view(-1, V), y.view(-1).masked_fill(
        torch.arange(N) % 3 == 0, -100), ignore_index=-100)),
    "label_smoothing": (torch.float32, lambda x, y: F.cross_entropy(x.view(-1, V), y.view(-1), label_smoothing=0.1)),
    "label_smoothing_ignore": (torch.float32, lambda x, y: F.cross_entropy(x.view(-1, V), y.view(-1), ignore_index=0,
                                                                           label_smoothing=0.1)),
    "label_smoothing_noignore": (torch.float32, lambda x, y: F.cross_entropy(x.view(-1, V), y.view(-1), ignore_index=-1,
                                                                             label_smoothing=0.1)),
    "hf_shifted": (torch.float32, lambda x, y: F.cross_entropy(x.float().view(-1, V), shifted(y), ignore_index=-100)),
    "float_upcast_f32": (torch.float32, lambda x, y: F.cross_entropy(x.float().view(-1, V), y.view(-1))),
    "bf16_autocast_cast": (torch.bfloat16, lambda x, y: F.cross_entropy(x.view(-1, V).float(), y.view(-1))),
    "bf16_upcast_first": (torch.bfloat16, lambda x, y: F.cross_entropy(x.float().view(-1, V), y.view(-1))),
    "bf16_label_smoothing": (torch.bfloat16, lambda x, y: F.cross_entropy(x.float().view(-1, V), y.view(-1),
                                                                          label_smoothing=0.1)),
}


def describe(t):
    """(storage address, shape, dtype, storage bytes): recorded without keeping a reference, so
    that what backward frees shows in the events."""
    st = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    nbytes = st.nbytes() if hasattr(st, "nbytes") else st.size() * t.element_size()
    return st.data_ptr(), list(t.shape), str(t.dtype)[6:], nbytes


def run(name):
    dtype, fn = CASES[name]
    x = torch.randn(B, T, V).to(dtype).requires_grad_()
    y = torch.randint(1, V, (B, T))  # class 0 once: ignore_index 0 ignores it
    y[0, 0] = 0
    saved = []
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True,
                                record_shapes=True) as prof:
        with memtrace.Marker("nnmem::forward"):
            with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(describe(t)) or t, lambda t: t):
                loss = fn(x, y)
        with memtrace.Marker("nnmem::backward"):
            loss.backward()
    print(f"{name}: logits {list(x.shape)} {str(dtype)[6:]}, loss {loss.item():.4f}")
    seen = set()
    for key, shape, dtype, nbytes in saved:
        if key in seen:
            continue
        seen.add(key)
        what = "logits" if key == describe(x)[0] else "labels" if key == describe(y)[0] else "new"
        print(f"    saved {shape} {dtype} {nbytes} B = {what}")
    tr = memtrace.analyse(prof)
    for e in tr.events:
        if e.ignored:
            continue
        ws = " ws" if e.excluded else ""
        print(f"    {e.phase or '-':8s} {e.size:+8d} {e.total:8d}{ws}  {e.outer_op} > {e.inner_op}")


if __name__ == "__main__":
    for n in sys.argv[1:] or CASES:
        run(n)
