#!/usr/bin/env python3
"""What the recurrent layers (nn.RNN, nn.GRU, nn.LSTM and the cells) keep for backward and
allocate in forward and backward on the CPU, with the torch this interpreter has, and the size
of oneDNN's LSTM workspace over many shapes.  Rewrites that version's section of
validation/ops_saved_recurrent.md (the findings above the generated sections are kept):

  /work/venv213/bin/python validation/probe_recurrent.py     # torch 2.13 (~20 s)
  /usr/bin/python3 validation/probe_recurrent.py             # torch 1.13

Each case runs the layer in training mode on a fresh input inside the profiler, as
probe_zoo.py does (its `probe`): the saved storages (role: dtype, shape, bytes, the autograd
attributes holding them), the forward's allocations and frees (a workspace freed inside the
same outermost aten op is left out, as in every fixture), what is left after forward (the
output included), and backward's.  The layer returns its first output (the sequence, or h');
the others are dropped at once, as `out, _ = lstm(x)` drops them.  "kept beside the input and
output" is what nnmem's rule adds as its own tensors (tests/layers/test_recurrent.cpp).
"""
import os
import random
import re
import sys
import warnings

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import probe_zoo  # noqa: E402

warnings.filterwarnings("ignore")  # "LSTM with projections is not supported with oneDNN"
torch.set_num_threads(1)
VERSION = ".".join(torch.__version__.split(".")[:2])
DOC = os.path.join(HERE, "ops_saved_recurrent.md")
BEGIN = "<!-- probe_recurrent.py: torch {} begins (generated, rewritten by each run) -->"
END = "<!-- probe_recurrent.py: torch {} ends -->"


class First:
    """Applies a module (in training mode) and keeps its first output."""

    def __init__(self, module):
        self.module = module.train()

    def __call__(self, xs):
        if len(xs) == 1:
            r = self.module(xs[0])
        else:
            r = self.module(xs[0], (xs[1], xs[2]) if len(xs) == 3 else xs[1])
        return r[0] if isinstance(r, tuple) else r


class UnderAutocast(First):
    """The same under CPU bfloat16 autocast (the module's weights stay float32)."""

    def __call__(self, xs):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return super().__call__(xs)


T, N, I, H = 3, 2, 4, 5
SEQ = (T, N, I)
CASES = [
    ("RNN(4, 5)", lambda: nn.RNN(I, H), [SEQ]),
    ("RNN(4, 5, relu)", lambda: nn.RNN(I, H, nonlinearity="relu"), [SEQ]),
    ("RNN(4, 5, bias=False)", lambda: nn.RNN(I, H, bias=False), [SEQ]),
    ("GRU(4, 5)", lambda: nn.GRU(I, H), [SEQ]),
    ("GRU(4, 5, bias=False)", lambda: nn.GRU(I, H, bias=False), [SEQ]),
    ("GRU(4, 5, batch_first)", lambda: nn.GRU(I, H, batch_first=True), [(N, T, I)]),
    ("GRU(4, 5, 2 layers, bidirectional)", lambda: nn.GRU(I, H, num_layers=2, bidirectional=True), [SEQ]),
    ("GRU(4, 5, batch_first, bidirectional)", lambda: nn.GRU(I, H, batch_first=True, bidirectional=True), [(N, T, I)]),
    ("GRU(4, 5) frozen", lambda: nn.GRU(I, H).requires_grad_(False), [SEQ]),
    ("LSTM(4, 5)", lambda: nn.LSTM(I, H), [SEQ]),
    ("LSTM(4, 5, 2 layers)", lambda: nn.LSTM(I, H, num_layers=2), [SEQ]),
    ("LSTM(4, 5, 2 layers, dropout 0.5)", lambda: nn.LSTM(I, H, num_layers=2, dropout=0.5), [SEQ]),
    ("LSTM(4, 5, bidirectional)", lambda: nn.LSTM(I, H, bidirectional=True), [SEQ]),
    ("LSTM(4, 5, batch_first)", lambda: nn.LSTM(I, H, batch_first=True), [(N, T, I)]),
    ("LSTM(4, 5, batch_first, bidirectional)", lambda: nn.LSTM(I, H, batch_first=True, bidirectional=True), [(N, T, I)]),
    ("LSTM(4, 5) frozen", lambda: nn.LSTM(I, H).requires_grad_(False), [SEQ]),
    ("LSTM(4, 5, proj_size=3)", lambda: nn.LSTM(I, H, proj_size=3), [SEQ]),
    ("RNNCell(4, 5)", lambda: nn.RNNCell(I, H), [(N, I)]),
    ("RNNCell(4, 5), h given", lambda: nn.RNNCell(I, H), [(N, I), (N, H)]),
    ("GRUCell(4, 5)", lambda: nn.GRUCell(I, H), [(N, I)]),
    ("GRUCell(4, 5), h given", lambda: nn.GRUCell(I, H), [(N, I), (N, H)]),
    ("LSTMCell(4, 5)", lambda: nn.LSTMCell(I, H), [(N, I)]),
    ("LSTMCell(4, 5), h and c given", lambda: nn.LSTMCell(I, H), [(N, I), (N, H), (N, H)]),
]
# Under bfloat16 autocast (what the fixtures' amp runs do): the generic GRU, and what the LSTM
# and the cells do there (not modelled yet).
AUTOCAST_CASES = [
    ("GRU(4, 5)", lambda: nn.GRU(I, H), [SEQ]),
    ("GRU(4, 5, batch_first)", lambda: nn.GRU(I, H, batch_first=True), [(N, T, I)]),
    ("GRU(4, 5, 2 layers, bidirectional, dropout 0.5)", lambda: nn.GRU(I, H, num_layers=2, bidirectional=True, dropout=0.5),
     [SEQ]),
    ("LSTM(4, 5)", lambda: nn.LSTM(I, H), [SEQ]),
    ("LSTM(4, 5, 2 layers, batch_first)", lambda: nn.LSTM(I, H, num_layers=2, batch_first=True), [(N, T, I)]),
    ("LSTM(4, 5, 2 layers, dropout 0.5)", lambda: nn.LSTM(I, H, num_layers=2, dropout=0.5), [SEQ]),
    ("LSTM(4, 5, bidirectional)", lambda: nn.LSTM(I, H, bidirectional=True), [SEQ]),
    ("LSTM(4, 5) frozen", lambda: nn.LSTM(I, H).requires_grad_(False), [SEQ]),
    ("GRUCell(4, 5)", lambda: nn.GRUCell(I, H), [(N, I)]),
    ("GRUCell(4, 5), h given", lambda: nn.GRUCell(I, H), [(N, I), (N, H)]),
    ("LSTMCell(4, 5)", lambda: nn.LSTMCell(I, H), [(N, I)]),
    ("LSTMCell(4, 5), h and c given", lambda: nn.LSTMCell(I, H), [(N, I), (N, H), (N, H)]),
]


def kept_beside(r):
    """Bytes of the saved storages that are neither an input, the output nor a parameter."""
    total = 0
    for row in r["saved"].split("<br>"):
        role, _, rest = row.partition(": ")
        if role == "new":
            total += int(re.search(r"\] (\d+) B", rest).group(1))
    return total


def good_ld(dim, size):
    """oneDNN's get_good_ld for elements of `size` bytes."""
    ld = -(-dim // (64 // size)) * (64 // size)
    return ld + 64 // size if ld % 256 == 0 else ld


def workspace_formula(t, n, i, h, size=4):
    """nnmem's oneDNN LSTM workspace (layers/onednn_lstm.hpp), one layer and direction, its data in
    elements of `size` bytes (4: float32, 2: bfloat16 under autocast; diff states float32)."""
    pages = lambda b: -(-b // 4096) * 4096  # noqa: E731
    steps = 2 * (t + 1) * n
    diff_states = steps * good_ld(max(i, h), 4) * 4
    parts = [t * n * good_ld(4 * h, size) * size, t * n * good_ld(h, size) * size, steps * good_ld(max(i, h), size) * size,
             steps * h * size, diff_states, diff_states, steps * h * 4]
    return sum(pages(p) for p in parts)


def workspace_table(amp=False):
    """Every MkldnnRnnLayerBackward0's workspace over random shapes, against the formula (under
    bfloat16 autocast with `amp`)."""
    random.seed(13)
    rows = ["| T | N | input | hidden | layers | directions | workspace per node (bytes, measured) | formula |",
            "|---|---|---|---|---|---|---|---|"]
    misses = 0
    for _ in range(60):
        t, n, i = random.randint(1, 40), random.randint(1, 33), random.randint(1, 300)
        h = random.choice([random.randint(1, 300), 64, 128, 192, 256])
        layers, dirs = random.randint(1, 2), random.choice([1, 2])
        m = nn.LSTM(i, h, num_layers=layers, bidirectional=dirs == 2)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=amp):
            out = m(torch.randn(t, n, i))[0]
        nodes, todo, seen = [], [out.grad_fn], set()
        while todo:
            fn = todo.pop()
            if fn is None or fn in seen:
                continue
            seen.add(fn)
            if fn.name() == "MkldnnRnnLayerBackward0":
                nodes.append((fn._saved_input.shape[-1], fn._saved_result3.numel()))
            todo.extend(f for f, _ in fn.next_functions)
        if not nodes:
            return "No MkldnnRnnLayerBackward0: this version runs the generic path."
        got = sorted({b for _, b in nodes})
        want = sorted({workspace_formula(t, n, layer_in, h, 2 if amp else 4) for layer_in, _ in nodes})
        misses += got != want
        rows.append(f"| {t} | {n} | {i} | {h} | {layers} | {dirs} | {', '.join(map(str, got))} | "
                    f"{', '.join(map(str, want))}{'' if got == want else ' **differs**'} |")
    return f"{60 - misses} of 60 shapes as the formula says.\n\n" + "\n".join(rows)


def main():
    rows = ["| layer | input shapes | grad_fn | output | kept beside the input and output (bytes) | saved storages | "
            "forward: allocations and frees | left after forward | backward peak above its start |",
            "|---|---|---|---|---|---|---|---|---|"]
    cases = [(name, make, shapes, First) for name, make, shapes in CASES] + \
        [(name + ", bfloat16 autocast", make, shapes, UnderAutocast) for name, make, shapes in AUTOCAST_CASES]
    for name, make, shapes, wrap in cases:
        r = probe_zoo.probe(name, lambda: wrap(make()), shapes, True)
        rows.append(f"| {name} | {shapes} | {r['grad_fn']} | {r['out']} | {kept_beside(r)} | {r['saved']} | "
                    f"{r['fwd']} | {r['fwd_left']} | {r['bwd_peak']} |")
    section = (BEGIN.format(VERSION) + f"\n\n## torch {torch.__version__}, CPU\n\n" + "\n".join(rows)
               + "\n\n### oneDNN's LSTM workspace\n\n" + workspace_table()
               + "\n\n### oneDNN's LSTM workspace under bfloat16 autocast\n\n" + workspace_table(amp=True)
               + "\n\n" + END.format(VERSION))
    old = open(DOC).read() if os.path.exists(DOC) else "# What the recurrent layers keep and allocate\n\n"
    pattern = re.compile(re.escape(BEGIN.format(VERSION)) + ".*?" + re.escape(END.format(VERSION)), re.S)
    new = pattern.sub(lambda _: section, old) if pattern.search(old) else old.rstrip("\n") + "\n\n" + section
    with open(DOC, "w") as fh:
        fh.write(new.rstrip("\n") + "\n")
    print(section)


if __name__ == "__main__":
    main()
