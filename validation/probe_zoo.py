#!/usr/bin/env python3
"""What the issue-13 layers and losses keep for backward and allocate in forward and
backward, on the torch this interpreter has.  Rewrites that version's section of
validation/ops_saved_zoo.md (the findings above the generated sections are kept):

  /work/venv213/bin/python validation/probe_zoo.py     # torch 2.13
  /usr/bin/python3 validation/probe_zoo.py             # torch 1.13

Each case runs one op on fresh inputs inside the profiler (profile_memory=True) and
saved_tensors_hooks.  Allocations are filtered as the fixtures are (memtrace.py: a
workspace freed inside the same outermost aten op is left out).  The forward column lists
what the op allocates (+) and frees (-) while it runs, and what is left afterwards; the
backward column what `out.backward(g)` allocates and frees with `g = ones_like(out)` made
beforehand (so `g` itself is never freed there), in order.  Inputs that need a gradient are
clones of leaves (so in-place ops are legal); the leaves' gradients are the last allocations.
"""
import math
import os
import re
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import memtrace  # noqa: E402
from memtrace import Marker  # noqa: E402

torch.set_num_threads(1)
VERSION = ".".join(torch.__version__.split(".")[:2])
DOC = os.path.join(HERE, "ops_saved_zoo.md")
BEGIN = "<!-- probe_zoo.py: torch {} begins (generated, rewritten by each run) -->"
END = "<!-- probe_zoo.py: torch {} ends -->"


def storage_key(t):
    """(data_ptr, nbytes) of a tensor's storage on 1.13 (.storage()) and 2.x (.untyped_storage())."""
    st = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return st.data_ptr(), st.nbytes()


def stochastic_depth(x, p, mode, training=True):
    """torchvision.ops.stochastic_depth (0.14 and later), line for line."""
    if not training or p == 0.0:
        return x
    survival_rate = 1.0 - p
    size = [x.shape[0]] + [1] * (x.ndim - 1) if mode == "row" else [1] * x.ndim
    noise = torch.empty(size, dtype=x.dtype, device=x.device)
    noise = noise.bernoulli_(survival_rate)
    if survival_rate > 0.0:
        noise.div_(survival_rate)
    return x * noise


def layer_norm_2d(x, ln):
    """torchvision.models.convnext.LayerNorm2d.forward (0.14 and later), line for line."""
    x = x.permute(0, 2, 3, 1)
    x = F.layer_norm(x, ln.normalized_shape, ln.weight, ln.bias, ln.eps)
    x = x.permute(0, 3, 1, 2)
    return x


def has(name):
    return hasattr(nn, name)


class m:
    """Applies a module (in training mode) to the first input."""

    def __init__(self, module):
        self.module = module.train()

    def __call__(self, xs):
        return self.module(xs[0])


def f(fn):
    return lambda xs: fn(*xs)


X4 = (2, 3, 8, 8)
X2 = (4, 16)
# name, op on the list of inputs, input shapes ("long:K" = int64 [N] targets < K,
# "long4:K" = int64 [N, H, W], "prob" = floats in [0, 1] shaped like input 0), available?
CASES = [
    # spatial
    ("Upsample(2, nearest) 4-D", lambda: m(nn.Upsample(scale_factor=2)), [X4]),
    ("Upsample(size=12, nearest) 4-D", lambda: m(nn.Upsample(size=12)), [X4]),
    ("Upsample(2, nearest) 3-D", lambda: m(nn.Upsample(scale_factor=2)), [(2, 3, 8)]),
    ("Upsample(2, nearest) 5-D", lambda: m(nn.Upsample(scale_factor=2)), [(2, 3, 4, 4, 4)]),
    ("Upsample(2, nearest-exact)", lambda: m(nn.Upsample(scale_factor=2, mode="nearest-exact")), [X4]),
    ("Upsample(2, linear)", lambda: m(nn.Upsample(scale_factor=2, mode="linear")), [(2, 3, 8)]),
    ("Upsample(2, bilinear)", lambda: m(nn.Upsample(scale_factor=2, mode="bilinear")), [X4]),
    ("Upsample(2, bilinear, align_corners)",
     lambda: m(nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)), [X4]),
    ("Upsample(1.5, bicubic)", lambda: m(nn.Upsample(scale_factor=1.5, mode="bicubic")), [X4]),
    ("Upsample(2, trilinear)", lambda: m(nn.Upsample(scale_factor=2, mode="trilinear")), [(2, 3, 4, 4, 4)]),
    ("F.interpolate(size=(5,7), bilinear)",
     lambda: (lambda xs: F.interpolate(xs[0], size=(5, 7), mode="bilinear")), [X4]),
    ("ZeroPad1d(2)", lambda: m(nn.ZeroPad1d(2)) if has("ZeroPad1d") else None, [(2, 3, 8)]),
    ("ZeroPad2d((1,2,3,4))", lambda: m(nn.ZeroPad2d((1, 2, 3, 4))), [X4]),
    ("ZeroPad3d(1)", lambda: m(nn.ZeroPad3d(1)) if has("ZeroPad3d") else None, [(2, 3, 4, 4, 4)]),
    ("ConstantPad1d(2, 0.5)", lambda: m(nn.ConstantPad1d(2, 0.5)), [(2, 3, 8)]),
    ("ConstantPad2d(-1, 0.5)", lambda: m(nn.ConstantPad2d(-1, 0.5)), [X4]),
    ("ConstantPad3d(1, 0.5)", lambda: m(nn.ConstantPad3d(1, 0.5)), [(2, 3, 4, 4, 4)]),
    ("ReflectionPad1d(2)", lambda: m(nn.ReflectionPad1d(2)), [(2, 3, 8)]),
    ("ReflectionPad2d(2)", lambda: m(nn.ReflectionPad2d(2)), [X4]),
    ("ReflectionPad3d(1)", lambda: m(nn.ReflectionPad3d(1)), [(2, 3, 4, 4, 4)]),
    ("ReplicationPad1d(2)", lambda: m(nn.ReplicationPad1d(2)), [(2, 3, 8)]),
    ("ReplicationPad2d(2)", lambda: m(nn.ReplicationPad2d(2)), [X4]),
    ("ReplicationPad3d(1)", lambda: m(nn.ReplicationPad3d(1)), [(2, 3, 4, 4, 4)]),
    ("CircularPad1d(2)", lambda: m(nn.CircularPad1d(2)) if has("CircularPad1d") else None, [(2, 3, 8)]),
    ("CircularPad2d(2)", lambda: m(nn.CircularPad2d(2)) if has("CircularPad2d") else None, [X4]),
    ("CircularPad3d(1)", lambda: m(nn.CircularPad3d(1)) if has("CircularPad3d") else None, [(2, 3, 4, 4, 4)]),
    ("F.pad(2, circular) 4-D", lambda: (lambda xs: F.pad(xs[0], (2, 2, 2, 2), mode="circular")), [X4]),
    ("PixelShuffle(2)", lambda: m(nn.PixelShuffle(2)), [(2, 8, 4, 4)]),
    ("PixelUnshuffle(2)", lambda: m(nn.PixelUnshuffle(2)), [(2, 2, 8, 8)]),
    ("ChannelShuffle(2)", lambda: m(nn.ChannelShuffle(2)), [(2, 8, 4, 4)]),
    ("Unfold(3, padding=1)", lambda: m(nn.Unfold(3, padding=1)), [X4]),
    ("Fold(8, 3, padding=1)", lambda: m(nn.Fold(8, 3, padding=1)), [(2, 27, 64)]),
    # global average pooling (squeeze-and-excitation, classifier heads): mean in both versions
    ("AdaptiveAvgPool1d(1)", lambda: m(nn.AdaptiveAvgPool1d(1)), [(2, 3, 8)]),
    ("AdaptiveAvgPool2d(1)", lambda: m(nn.AdaptiveAvgPool2d(1)), [X4]),
    ("AdaptiveAvgPool2d(2)", lambda: m(nn.AdaptiveAvgPool2d(2)), [X4]),
    ("AdaptiveAvgPool3d(1)", lambda: m(nn.AdaptiveAvgPool3d(1)), [(2, 3, 4, 4, 4)]),
    # regularisation
    ("stochastic_depth(0.2, row)", lambda: (lambda xs: stochastic_depth(xs[0], 0.2, "row")), [X4]),
    ("stochastic_depth(0.2, batch)", lambda: (lambda xs: stochastic_depth(xs[0], 0.2, "batch")), [X4]),
    ("stochastic_depth(1.0, row)", lambda: (lambda xs: stochastic_depth(xs[0], 1.0, "row")), [X4]),
    ("LayerNorm2d(3) (ConvNeXt's)", lambda: (lambda ln: lambda xs: layer_norm_2d(xs[0], ln))(nn.LayerNorm(3, eps=1e-6)), [X4]),
    ("AlphaDropout(0.5)", lambda: m(nn.AlphaDropout(0.5)), [X2]),
    ("AlphaDropout(0.5, inplace)", lambda: m(nn.AlphaDropout(0.5, inplace=True)), [X2]),
    ("AlphaDropout(1.0)", lambda: m(nn.AlphaDropout(1.0)), [X2]),
    # activations
    ("PReLU()", lambda: m(nn.PReLU()), [X4]),
    ("PReLU(3)", lambda: m(nn.PReLU(3)), [X4]),
    ("PReLU(16) 2-D", lambda: m(nn.PReLU(16)), [X2]),
    ("Hardtanh(-2, 2)", lambda: m(nn.Hardtanh(-2.0, 2.0)), [X2]),
    ("Hardtanh(inplace)", lambda: m(nn.Hardtanh(inplace=True)), [X2]),
    ("ReLU6(inplace)", lambda: m(nn.ReLU6(inplace=True)), [X2]),
    ("GLU(dim=1)", lambda: m(nn.GLU(dim=1)), [X2]),
    ("GLU(dim=-1) 4-D", lambda: m(nn.GLU()), [X4]),
    ("SELU", lambda: m(nn.SELU()), [X2]),
    ("SELU(inplace)", lambda: m(nn.SELU(inplace=True)), [X2]),
    ("CELU(0.5)", lambda: m(nn.CELU(0.5)), [X2]),
    ("CELU(inplace)", lambda: m(nn.CELU(inplace=True)), [X2]),
    ("LogSigmoid", lambda: m(nn.LogSigmoid()), [X2]),
    ("Softsign", lambda: m(nn.Softsign()), [X2]),
    ("Softmin(dim=1)", lambda: m(nn.Softmin(dim=1)), [X2]),
    ("Threshold(0.1, 20)", lambda: m(nn.Threshold(0.1, 20.0)), [X2]),
    ("Threshold(inplace)", lambda: m(nn.Threshold(0.1, 20.0, inplace=True)), [X2]),
    ("Tanhshrink", lambda: m(nn.Tanhshrink()), [X2]),
    # losses, on [4, 10] (and 4-D for nll)
    ("F.binary_cross_entropy_with_logits",
     lambda: f(F.binary_cross_entropy_with_logits), [(4, 10), "prob"]),
    ("F.nll_loss", lambda: f(F.nll_loss), [(4, 10), "long:10"]),
    ("F.nll_loss 4-D", lambda: f(F.nll_loss), [(2, 10, 4, 4), "long4:10"]),
    ("F.l1_loss", lambda: f(F.l1_loss), [(4, 10), "like"]),
    ("F.smooth_l1_loss", lambda: f(F.smooth_l1_loss), [(4, 10), "like"]),
    ("F.huber_loss", lambda: f(F.huber_loss), [(4, 10), "like"]),
    ("F.mse_loss", lambda: f(F.mse_loss), [(4, 10), "like"]),
    ("F.cross_entropy", lambda: f(F.cross_entropy), [(4, 10), "long:10"]),
]


def make_inputs(shapes, rg):
    leaves, xs = [], []
    first = None
    for s in shapes:
        if isinstance(s, str):
            kind, _, k = s.partition(":")
            if kind == "long":
                xs.append(torch.randint(0, int(k), (first[0],)))
            elif kind == "long4":
                xs.append(torch.randint(0, int(k), (first[0],) + tuple(first[2:])))
            elif kind == "prob":
                xs.append(torch.rand(first))
            else:
                xs.append(torch.randn(first))
            continue
        first = s
        leaf = torch.randn(*s, requires_grad=rg)
        leaves.append(leaf)
        xs.append(leaf.clone() if rg else leaf)
    return leaves, xs


def graph_saved(root):
    """storage ptr -> ['Node.attr', …] for every _saved_* tensor reachable from root."""
    out, seen, todo = {}, set(), [root]
    while todo:
        fn = todo.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        for attr in dir(fn):
            if attr.startswith("_saved_") and not attr.endswith("_raw"):
                try:
                    val = getattr(fn, attr)
                except Exception:
                    continue
                for v in val if isinstance(val, (tuple, list)) else [val]:
                    if isinstance(v, torch.Tensor):
                        out.setdefault(storage_key(v)[0], []).append(f"{fn.name()}.{attr[7:]}")
        todo.extend(nf for nf, _ in fn.next_functions)
    return out


def events_in(tr, marker):
    return [e for e in tr.events if marker in e.markers and not e.excluded and not e.ignored]


def fmt_events(evs):
    parts = []
    for e in evs:
        op = re.sub(r"^aten::", "", e.inner_op or "?")
        parts.append(f"{e.size:+d} {op}" if e.size > 0 else f"{e.size:+d}")
    return " ".join(parts) or "nothing"


def probe(name, make, shapes, rg):
    fn = make()
    if fn is None:
        return None
    torch.manual_seed(0)
    memtrace.patch_record_function()
    packed, error = [], None

    def pack(t):
        packed.append((storage_key(t), str(t.dtype)[6:], list(t.shape)))
        return t.detach()

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        leaves, xs = make_inputs(shapes, rg)
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            with Marker("nnmem::forward"):
                out = fn(xs)
        if out.grad_fn is None:
            grad_fn, gmap = "(no graph)", {}
        else:
            grad_fn, gmap = out.grad_fn.name(), graph_saved(out.grad_fn)
            g = torch.ones_like(out)
            with Marker("nnmem::backward"):
                try:
                    out.backward(g)
                except RuntimeError as err:  # 1.13's channel_shuffle has no derivative
                    error = str(err).splitlines()[0]
    tr = memtrace.analyse(prof)
    in_ptrs = {storage_key(x)[0]: f"input{i}" for i, x in enumerate(xs)}
    out_ptr = storage_key(out)[0]
    rows, seen = [], set()
    for (ptr, nbytes), dtype, shape in packed:
        if ptr in seen:
            continue
        seen.add(ptr)
        roles = [in_ptrs[ptr]] if ptr in in_ptrs else []
        if ptr == out_ptr:
            roles.append("output")
        params = {storage_key(p)[0] for p in getattr(fn, "module", nn.Module()).parameters()}
        role = "=".join(roles) or ("param" if ptr in params else "new")
        rows.append(f"{role}: {dtype} {shape} {nbytes} B ({','.join(sorted(set(gmap.get(ptr, []))))})")
    fwd = events_in(tr, "nnmem::forward")
    bwd = events_in(tr, "nnmem::backward")
    return {"name": name, "rg": rg, "grad_fn": grad_fn, "out": list(out.shape),
            "out_alias": "in place" if out_ptr in in_ptrs else "",
            "saved": "<br>".join(rows) or "nothing",
            "fwd": fmt_events(fwd), "fwd_left": sum(e.size for e in fwd),
            "bwd": error or (fmt_events(bwd) if bwd else "-"), "bwd_peak": peak_above(bwd)}


def peak_above(evs):
    best = run = 0
    for e in evs:
        run += e.size
        best = max(best, run)
    return best


def table(results):
    out = ["| op | input needs grad | grad_fn | output | saved storages (role: dtype shape bytes (node.attr)) | "
           "forward: allocations and frees (bytes, op) | left after forward | backward: allocations and frees | "
           "backward peak above its start |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        out.append(f"| {r['name']} | {r['rg']} | {r['grad_fn']} | {r['out']} {r['out_alias']} | {r['saved']} | "
                   f"{r['fwd']} | {r['fwd_left']} | {r['bwd']} | {r['bwd_peak']} |")
    return "\n".join(out)


# The op each layer runs, on a bfloat16 input inside CPU autocast: the output's dtype says
# whether autocast runs it in float32 (then it casts the input first) or in the input's dtype.
AUTOCAST = [
    ("Upsample nearest 1-D/2-D/3-D", lambda x3, x4, x5: [F.interpolate(x, scale_factor=2) for x in (x3, x4, x5)]),
    ("Upsample linear/bilinear/bicubic/trilinear", lambda x3, x4, x5: [
        F.interpolate(x3, scale_factor=2, mode="linear"), F.interpolate(x4, scale_factor=2, mode="bilinear"),
        F.interpolate(x4, scale_factor=2, mode="bicubic"), F.interpolate(x5, scale_factor=2, mode="trilinear")]),
    ("ReflectionPad1d/2d/3d", lambda x3, x4, x5: [F.pad(x3, (1, 1), mode="reflect"),
                                                 F.pad(x4, (1,) * 4, mode="reflect"), F.pad(x5, (1,) * 6, mode="reflect")]),
    ("ReplicationPad1d/2d/3d", lambda x3, x4, x5: [F.pad(x3, (1, 1), mode="replicate"),
                                                  F.pad(x4, (1,) * 4, mode="replicate"), F.pad(x5, (1,) * 6, mode="replicate")]),
    ("ZeroPad2d, circular", lambda x3, x4, x5: [F.pad(x4, (1,) * 4), F.pad(x4, (1,) * 4, mode="circular")]),
    ("PixelShuffle, Unfold", lambda x3, x4, x5: [F.pixel_shuffle(x4, 2), F.unfold(x4, 3)]),
    ("PReLU, GLU, LogSigmoid, Softmin", lambda x3, x4, x5: [
        F.prelu(x4, torch.ones(1)), F.glu(x4, 1), F.logsigmoid(x4), F.softmin(x4, 1)]),
    ("SELU, CELU, Hardtanh, Threshold, Softsign, Tanhshrink", lambda x3, x4, x5: [
        F.selu(x4), F.celu(x4), F.hardtanh(x4), F.threshold(x4, 0.1, 2.0), F.softsign(x4), F.tanhshrink(x4)]),
    ("losses: bce_with_logits, l1, smooth_l1, huber, mse", lambda x3, x4, x5: [
        F.binary_cross_entropy_with_logits(x4, x4), F.l1_loss(x4, x4), F.smooth_l1_loss(x4, x4),
        F.huber_loss(x4, x4), F.mse_loss(x4, x4)]),
    ("loss: nll", lambda x3, x4, x5: [F.nll_loss(x4[:, :, 0, 0], torch.zeros(2, dtype=torch.long))]),
]


def autocast_table():
    x3, x4, x5 = (torch.randn(*s).bfloat16() for s in [(2, 4, 8), (2, 4, 8, 8), (2, 4, 4, 4, 4)])
    rows = ["| ops (bfloat16 input, `torch.autocast('cpu', torch.bfloat16)`) | output dtypes |", "|---|---|"]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        for name, fn in AUTOCAST:
            rows.append(f"| {name} | {', '.join(str(t.dtype)[6:] for t in fn(x3, x4, x5))} |")
    return "\n".join(rows)


def prelu_autocast_table():
    """PReLU(3) on a float32 input under CPU autocast: whether autocast casts it (2.x's lower-precision
    list has prelu, 1.13's CPU list does not) and what its backward keeps of the weight."""
    weight = torch.nn.Parameter(torch.full((3,), 0.25))
    kept = []

    def pack(t):
        kept.append("the parameter itself" if t.data_ptr() == weight.data_ptr() else
                    "%s %s %d B" % (str(t.dtype)[6:], list(t.shape), t.numel() * t.element_size()))
        return t
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), torch.autocast("cpu", dtype=torch.bfloat16):
        y = F.prelu(torch.randn(2, 3, 8, 8), weight)
    return ("| PReLU(3), float32 input [2, 3, 8, 8] under CPU autocast | output | kept for backward |\n|---|---|---|\n"
            "| F.prelu | %s | %s |" % (str(y.dtype)[6:], "<br>".join(kept)))


def dtype_table():
    """Which dtypes F.pad takes in each mode on the CPU (what the kernels dispatch on)."""
    dtypes = [torch.int64, torch.bool, torch.float16, torch.bfloat16, torch.float64]
    rows = ["| F.pad on the CPU | " + " | ".join(str(d)[6:] for d in dtypes) + " |", "|---" * (len(dtypes) + 1) + "|"]
    for mode in ("constant", "reflect", "replicate", "circular"):
        for rank in (1, 2, 3):
            cells = []
            for dt in dtypes:
                try:
                    F.pad(torch.zeros((1, 2) + (4,) * rank, dtype=dt), (1,) * (2 * rank), mode=mode)
                    cells.append("yes")
                except (RuntimeError, NotImplementedError):
                    cells.append("no")
            rows.append(f"| {mode} {rank}-D | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main():
    results, missing = [], []
    for name, make, shapes in CASES:
        for rg in (True, False):
            if rg is False and isinstance(shapes[-1], str):
                continue  # a loss always has an input that needs a gradient
            r = probe(name, make, shapes, rg)
            if r is None:
                missing.append(name)
                break
            results.append(r)
    section = (BEGIN.format(VERSION) + f"\n\n## torch {torch.__version__}, CPU\n\n"
               + (f"Not in this version: {', '.join(missing)}.\n\n" if missing else "")
               + table(results) + "\n\n### Under CPU autocast\n\n" + autocast_table() + "\n\n" + prelu_autocast_table()
               + "\n\n### The dtypes padding takes\n\n" + dtype_table() + "\n\n" + END.format(VERSION))
    old = open(DOC).read() if os.path.exists(DOC) else "# What the zoo's ops keep and allocate\n\n"
    pattern = re.compile(re.escape(BEGIN.format(VERSION)) + ".*?" + re.escape(END.format(VERSION)), re.S)
    new = pattern.sub(lambda _: section, old) if pattern.search(old) else old.rstrip("\n") + "\n\n" + section
    with open(DOC, "w") as fh:
        fh.write(new.rstrip("\n") + "\n")
    print(section)


if __name__ == "__main__":
    main()
