#!/usr/bin/python3
"""networks.py's ResNet-18/50, VGG16, DAVEnet's VGG16, EfficientNet-B0 and ConvNeXt (tiny, and
the small convnext_valid) against torchvision's
(run under torch 1.13 with torchvision 0.14: /usr/bin/python3 validation/check_torchvision.py).

For each pair, built after the same torch.manual_seed(0), it checks that both have
* the same modules (qualified names, in order, and their types),
* the same parameters and buffers (names, in order, shapes, dtypes, requires_grad),
* the same values (so the same random numbers were drawn, in the same order), and the
  state of the random generator afterwards is the same (so x, the targets and dropout
  masks of measure.py are the same),
* the same output of one training-mode forward on the same input,
* the same allocator events (sizes, in order, workspace or not) in an eval-mode no_grad
  forward and in a training forward + backward: forward() code decides how long Python
  variables hold tensors, which the module structure alone does not fix.
Prints one line per network and exits 1 if any differs."""
import os
import sys

import torch
import torchvision
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import memtrace  # noqa: E402
import networks  # noqa: E402
import networks_convnext  # noqa: E402
from memtrace import Marker  # noqa: E402

PAIRS = [
    ("resnet18", torchvision.models.resnet18, (2, 3, 64, 64)),
    ("resnet50", torchvision.models.resnet50, (2, 3, 64, 64)),
    ("vgg16", torchvision.models.vgg16, (1, 3, 224, 224)),
    ("davenet_vgg16", None, (1, 3, 64, 64)),
    ("efficientnet_b0", torchvision.models.efficientnet_b0, (2, 3, 64, 64)),
    ("convnext_tiny", torchvision.models.convnext_tiny, (2, 3, 64, 64)),
    ("convnext_valid", lambda: torchvision.models.convnext.ConvNeXt(
        [torchvision.models.convnext.CNBlockConfig(c, c * 2 if c < 128 else None, 3) for c in (16, 32, 64, 128)],
        stochastic_depth_prob=0.1), (4, 3, 32, 32)),
]
# networks checked that are no validation network of networks.py
OURS = {"convnext_tiny": networks_convnext.ConvNeXt}


class TorchvisionDavenetVGG16(torch.nn.Module):
    """DAVEnet's image model exactly as dharwath/DAVEnet-pytorch builds it."""

    def __init__(self, embedding_dim=1024):
        super().__init__()
        seed_model = torchvision.models.vgg16().features
        seed_model = torch.nn.Sequential(*list(seed_model.children())[:-1])
        seed_model.add_module(str(len(seed_model)), torch.nn.Conv2d(512, embedding_dim, kernel_size=(3, 3),
                                                                    stride=(1, 1), padding=(1, 1)))
        self.image_model = seed_model

    def forward(self, x):
        return self.image_model(x)


def build(make):
    torch.manual_seed(0)
    model = make()
    return model, torch.get_rng_state()


def describe(model):
    mods = [(n, type(m).__name__) for n, m in model.named_modules() if n]
    params = [(n, tuple(p.shape), p.dtype, p.requires_grad) for n, p in model.named_parameters()]
    bufs = [(n, tuple(b.shape), b.dtype) for n, b in model.named_buffers()]
    return mods, params, bufs


def memory_events(model, x):
    """(size, excluded) of every allocator event of an eval no_grad forward, then of a
    training forward + backward, in time order."""
    memtrace.patch_record_function()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        with Marker("nnmem::eval"), torch.no_grad():
            model.eval()(x)
        model.train()
        with Marker("nnmem::train"):
            model(x).sum().backward()
    tr = memtrace.analyse(prof)
    return [(m, e.size, e.excluded) for e in tr.events for m in ("nnmem::eval", "nnmem::train") if m in e.markers]


def check(name, reference, shape):
    ours, rng_ours = build(OURS[name] if name in OURS else networks.NETWORKS[name].build)
    theirs, rng_theirs = build(reference)
    fail = []
    for what, a, b in zip(("modules", "parameters", "buffers"), describe(ours), describe(theirs)):
        if a != b:
            fail.append("%s differ: %s" % (what, [(x, y) for x, y in zip(a, b) if x != y][:3] or (len(a), len(b))))
    if not fail:
        for (n, a), (_, b) in zip(list(ours.state_dict().items()), list(theirs.state_dict().items())):
            if not torch.equal(a, b):
                fail.append("values of %s differ" % n)
                break
        if not torch.equal(rng_ours, rng_theirs):
            fail.append("the random generator's state after building differs")
    if not fail:
        x = torch.randn(*shape)
        torch.manual_seed(1)
        out_ours = ours.train()(x)
        torch.manual_seed(1)
        out_theirs = theirs.train()(x)
        if not torch.equal(out_ours, out_theirs):
            fail.append("outputs differ")
    if not fail:
        ev_ours, ev_theirs = memory_events(ours, x), memory_events(theirs, x)
        if ev_ours != ev_theirs:
            k = next((i for i, (a, b) in enumerate(zip(ev_ours, ev_theirs)) if a != b), min(len(ev_ours), len(ev_theirs)))
            fail.append("allocator events differ from event %d on (%d and %d events)" % (k, len(ev_ours), len(ev_theirs)))
    n_params = sum(p.numel() for p in ours.parameters())
    print("%-14s %3d modules, %3d parameters (%s elements), %3d buffers: %s" % (
        name, len(describe(ours)[0]), len(describe(ours)[1]), "{:,}".format(n_params), len(describe(ours)[2]),
        "identical to torchvision %s" % torchvision.__version__ if not fail else "; ".join(fail)))
    return not fail


def main():
    torch.set_num_threads(1)
    ok = all([check(name, ref or TorchvisionDavenetVGG16, shape) for name, ref, shape in PAIRS])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
