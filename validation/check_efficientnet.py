#!/usr/bin/python3
"""networks.py's EfficientNetB0 against torchvision's efficientnet_b0 (run under torch 1.13
with torchvision 0.14: /usr/bin/python3 validation/check_efficientnet.py).

Built after the same torch.manual_seed(0), both must have the same modules (qualified names
in order, types), the same parameters and buffers (names in order, shapes, values: the same
random numbers drawn in the same order), the same random state afterwards, the same output of
a training-mode forward (stochastic depth and dropout draw the same noise), and the same
allocator events (sizes in order) in a training forward + backward: forward() code decides how
long tensors live.  Prints what differs and exits 1, or prints one line and exits 0."""
import os
import sys

import torch
import torchvision
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import memtrace  # noqa: E402
import networks  # noqa: E402


def build(make):
    torch.manual_seed(0)
    model = make()
    return model, torch.get_rng_state()


def events(model, x):
    memtrace.patch_record_function()
    torch.manual_seed(1)
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        out = model(x)
        out.sum().backward()
    return [e.size for e in memtrace.analyse(prof).events if not e.excluded], out


def main():
    (ours, ours_rng), (theirs, theirs_rng) = build(networks.EfficientNetB0), build(torchvision.models.efficientnet_b0)
    problems = []
    mods = [(n, type(m).__name__) for n, m in ours.named_modules()]
    tv = [(n, type(m).__name__) for n, m in theirs.named_modules()]
    # torchvision's container classes (Conv2dNormActivation, MBConv, …) have the names ours have
    if [n for n, _ in mods] != [n for n, _ in tv]:
        problems.append("module names differ")
    leaves = lambda m: [(n, type(x).__name__) for n, x in m.named_modules() if not list(x.children())]  # noqa: E731
    if leaves(ours) != leaves(theirs):
        problems.append("leaf modules differ")
    for kind in ("named_parameters", "named_buffers"):
        a, b = list(getattr(ours, kind)()), list(getattr(theirs, kind)())
        if [(n, t.shape, t.dtype) for n, t in a] != [(n, t.shape, t.dtype) for n, t in b]:
            problems.append(f"{kind}: names or shapes differ")
        elif not all(torch.equal(t, u) for (_, t), (_, u) in zip(a, b)):
            problems.append(f"{kind}: values differ")
    if not torch.equal(ours_rng, theirs_rng):
        problems.append("random state after construction differs")
    x = torch.randn(2, 3, 64, 64)
    ev_ours, out_ours = events(ours.train(), x)
    ev_theirs, out_theirs = events(theirs.train(), x)
    if not torch.equal(out_ours, out_theirs):
        problems.append("training-mode outputs differ")
    if ev_ours != ev_theirs:
        problems.append(f"allocator events differ ({len(ev_ours)} vs {len(ev_theirs)})")
    params = sum(p.numel() for p in ours.parameters())
    if problems:
        print("efficientnet_b0: " + "; ".join(problems))
        sys.exit(1)
    print(f"efficientnet_b0: identical to torchvision {torchvision.__version__}'s ({params:,} parameters, "
          f"{len(mods)} modules, {len(ev_ours)} allocator events in a training step)")


if __name__ == "__main__":
    main()
