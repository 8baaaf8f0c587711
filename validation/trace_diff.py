#!/usr/bin/env python3
"""Where does nnmem's simulated step part from PyTorch's, allocation by allocation?

    python3 validation/trace_diff.py NETWORK --batch B --optimizer adam [--keep-grads]
            [--amp bfloat16] [--dtype bfloat16] [--foreach | --fused] [--torch 2.13] [--nnmem build/nnmem] [--all]
            [--mode eval]

Measures the run with `measure.py --trace` under the interpreter of --torch (1.13:
/usr/bin/python3, 2.13: /work/venv213/bin/python), estimates it with `nnmem estimate
--format json` (passing `--torch` only if the binary has it), and aligns the two event
sequences of the step (measured: iteration 2's non-excluded allocator events; nnmem: its
`timeline` after the persistent tensors) with difflib on (phase, signed bytes). Prints the
runs of events that differ, with the measured op and module and nnmem's tensor name, the
running totals of both sides, and both peaks. `--all` prints the matching events too.
The zero_grad phase is collapsed to one event per side (PyTorch frees each .grad, nnmem all
of them at once).

--mode eval compares the inference forward instead (measure.py's no_grad forward in eval(),
`--trace-eval`; nnmem's `--mode eval` timeline): --optimizer only picks the training run
that precedes it.

--segments compares layer by layer instead: the events are cut into segments of one phase
and one module (nnmem: one layer, its call suffix _N dropped), the segments aligned by name,
and every aligned pair whose multiset of sizes differs is printed with what only PyTorch did
(<) and what only nnmem did (>), and the peak inside the segment on each side."""
import argparse
import difflib
import collections
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from compare import Nnmem  # noqa: E402

PYTHON = {"1.13": "/usr/bin/python3", "2.13": "/work/venv213/bin/python"}
NNMEM_PHASE = {"forward": "forward", "backward": "backward", "optimizer": "step"}


def measured_events(args):
    if args.keep_trace and os.path.exists(args.keep_trace + ".json"):   # measured before: read it again
        with open(args.keep_trace + ".json") as f:
            return parse_trace(json.load(f), args.keep_trace)
    if args.keep_trace:
        path = args.keep_trace
    else:
        with tempfile.NamedTemporaryFile(suffix=".tsv", delete=False) as f:
            path = f.name
    cmd = [PYTHON[args.torch], os.path.join(HERE, "measure.py"), args.network, "--batch", str(args.batch),
           "--optimizer", args.optimizer, "--keep-grads" if args.keep_grads else "--set-to-none",
           "--trace-eval" if args.mode == "eval" else "--trace", path]
    if args.amp:
        cmd += ["--amp", args.amp]
    if args.foreach:
        cmd.append("--foreach")
    if args.fused:
        cmd.append("--fused")
    if args.dtype:
        cmd += ["--dtype", args.dtype]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd="/tmp")
    if p.returncode != 0:
        sys.exit(p.stderr)
    res = json.loads(p.stdout)
    if args.keep_trace:
        with open(path + ".json", "w") as f:
            f.write(p.stdout)
    measured = parse_trace(res, path)
    if not args.keep_trace:
        os.unlink(path)
    return measured


def parse_trace(res, path):
    """(measure.py's result, the trace's events: (phase, signed bytes, "module: op", running total))."""
    events, zero = [], 0
    with open(path) as f:
        for line in f:
            if line.startswith("#"):
                continue
            phase, module, outer, inner, size, total, shapes = line.rstrip("\n").split("\t")
            if phase == "zero_grad":
                zero += int(size)
                continue
            if phase == "None":     # between the loss and backward: leaving autocast (its cache)
                phase = "forward"
            if zero:
                events.append(("zero_grad", zero, "zero_grad", int(total) - int(size)))
                zero = 0
            op = inner if inner == outer or not outer else "%s > %s" % (outer.replace("autograd::engine::evaluate_function: ", ""), inner)
            events.append((phase, int(size), "%s: %s" % (module, op), int(total)))
    return res, events


def nnmem_events(args):
    nnmem = Nnmem(args.nnmem)
    if args.fused and not nnmem.has_fused:
        print("note: this nnmem has no --fused; it estimates the single-tensor loop\n")
    est = nnmem.run(args.torch, args.network, args.batch, args.optimizer, not args.keep_grads, mode=args.mode,
                    amp=args.amp, foreach=args.foreach, fused=args.fused and nnmem.has_fused,
                    variant_args=("--dtype", args.dtype) if args.dtype else ())
    events, started = [], False
    for t in est["timeline"]:
        if t["delta"] == 0:
            continue
        if not started:
            if t["tensor"] == "gradients (from the previous step)" and t["delta"] < 0:
                events.append(("zero_grad", t["delta"], "zero_grad", t["live"]))
            if t["layer"] == "" or t["tensor"] == "gradients (from the previous step)":
                continue
            started = True
        phase = "eval" if args.mode == "eval" else NNMEM_PHASE[t["phase"]]
        if t["layer"] == "loss" and phase == "forward":
            phase = "loss"
        events.append((phase, t["delta"], "%s: %s" % (t["layer"], t["tensor"]), t["live"]))
    return est, events


def canonical(events):
    """Sort each run of consecutive frees of one phase by size (the order in which one node
    releases its kept tensors and its incoming gradient is not a memory difference); the
    running total is recomputed from the run's first event."""
    out, i = [], 0
    while i < len(events):
        j = i
        while j < len(events) and events[j][1] < 0 and events[j][0] == events[i][0]:
            j += 1
        if j == i:
            out.append(events[i])
            i += 1
            continue
        total = events[i][3] - events[i][1]
        for p, s, label, _ in sorted(events[i:j], key=lambda e: e[1]):
            total += s
            out.append((p, s, label, total))
        i = j
    return out


def segments(events, measured):
    """[(key, [events])]: runs of one phase and one module.  A measured run of frees outside
    any module (<functional> or None) joins the segment before it: PyTorch frees a layer's
    input when the call that read it returns, after the module's range has closed (and
    AccumulateGrad, which frees a keep-grads gradient, has no module), where nnmem names the
    layer that read it."""
    out = []
    for e in events:
        label = e[2].split(": ", 1)[0]
        if not measured:     # nnmem's names for what the harness sees outside any module
            label = re.sub(r"_[0-9]+$", "", label)
            label = {"out = model(x)": "None", "": "None", "loss": "<loss>", "autocast exit": "None"}.get(label, label)
            if label == "<loss>" and e[2].endswith("grad of loss"):
                label = "None"   # ones_like(loss), made by backward() outside the loss's module
            if e[0] == "step":
                label = "None"   # the optimizer runs outside any module
        key = (e[0], label)
        joins = (e[0] == "forward" and label == "<functional>") or \
                (e[0] == "backward" and label == "None" and "AccumulateGrad" in e[2])
        if measured and e[1] < 0 and joins and out and out[-1][0][0] == e[0] \
                and out[-1][0][1] not in ("<functional>", "None", "<loss>"):
            out[-1][1].append(e)
            continue
        if out and out[-1][0] == key:
            out[-1][1].append(e)
        else:
            out.append((key, [e]))
    return out


def print_segments(meas, mine):
    a, b = segments(meas, True), segments(mine, False)
    sm = difflib.SequenceMatcher(a=[k for k, _ in a], b=[k for k, _ in b], autojunk=False)
    same = scalars = 0
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        pairs = list(zip(a[i1:i2], b[j1:j2])) if tag == "equal" else [(x, None) for x in a[i1:i2]] + [(None, y) for y in b[j1:j2]]
        for left, right in pairs:
            lm = collections.Counter(e[1] for e in left[1]) if left else collections.Counter()
            rm = collections.Counter(e[1] for e in right[1]) if right else collections.Counter()
            if left and right and lm == rm:
                same += 1
                continue
            lpeak = max(e[3] for e in left[1]) if left else None
            rpeak = max(e[3] for e in right[1]) if right else None
            diff = (lm - rm) + (rm - lm)
            if left and right and lpeak == rpeak and set(diff) <= {8, -8} and (lm - rm)[8] == (lm - rm)[-8] \
                    and (rm - lm)[8] == (rm - lm)[-8]:
                scalars += 1       # only wrapped Python scalars (8-byte, freed at once), same peak
                continue
            key = (left or right)[0]
            lpeak = max(e[3] for e in left[1]) if left else None
            rpeak = max(e[3] for e in right[1]) if right else None
            print("%-9s %-28s measured peak %s, nnmem peak %s" % (key[0], key[1] if left and right else
                  ("%s (measured only)" % key[1] if left else "%s (nnmem only)" % key[1]),
                  "{:,}".format(lpeak) if lpeak is not None else "-", "{:,}".format(rpeak) if rpeak is not None else "-"))
            # unmatched events, with their own labels: each event is paired with the first
            # unused event of the same size on the other side
            lev, rev = (left[1] if left else []), (right[1] if right else [])
            used = [False] * len(rev)
            for e in lev:
                k = next((k for k, f in enumerate(rev) if not used[k] and f[1] == e[1]), None)
                if k is None:
                    print("   <  %+12d  %s" % (e[1], e[2].partition(": ")[2][:100]))
                else:
                    used[k] = True
            for k, f in enumerate(rev):
                if not used[k]:
                    print("    > %+12d  %s" % (f[1], f[2].partition(": ")[2]))
    print("   (%d segments alike, %d more that differ only by 8-byte wrapped scalars, same peak)" % (same, scalars))


def print_events(meas, mine, show_all):
    """Event by event, aligned by difflib on (phase, signed bytes)."""
    sm = difflib.SequenceMatcher(a=[(p, s) for p, s, _, _ in meas], b=[(p, s) for p, s, _, _ in mine],
                                 autojunk=False)
    w = 62
    print("%-9s %12s %14s  %-*s | %12s %14s  %s" % ("phase", "measured", "total", w, "op", "nnmem", "total", "tensor"))
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal" and not show_all:
            print("   ... %d events alike" % (i2 - i1))
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            left = meas[i1 + k] if i1 + k < i2 else None
            right = mine[j1 + k] if j1 + k < j2 else None
            mark = "  " if tag == "equal" else "<>" if left and right else "< " if left else " >"
            print("%s %-8s %12s %14s  %-*s | %12s %14s  %s" % (
                mark, (left or right)[0],
                "%+d" % left[1] if left else "", "{:,}".format(left[3]) if left else "", w, left[2][:w] if left else "",
                "%+d" % right[1] if right else "", "{:,}".format(right[3]) if right else "", right[2] if right else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("network")
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--optimizer", required=True)
    ap.add_argument("--keep-grads", action="store_true")
    ap.add_argument("--amp")
    ap.add_argument("--dtype", choices=("bfloat16", "float16"), help="a 16-bit model (measure.py's --dtype)")
    ap.add_argument("--foreach", action="store_true")
    ap.add_argument("--fused", action="store_true")
    ap.add_argument("--torch", default="2.13", choices=sorted(PYTHON))
    ap.add_argument("--nnmem", default=os.path.join(ROOT, "build", "nnmem"))
    ap.add_argument("--all", action="store_true", help="print matching events too")
    ap.add_argument("--keep-trace", metavar="PATH",
                    help="keep the measured trace in PATH (and its result in PATH.json); if they exist, "
                         "compare with them instead of measuring again")
    ap.add_argument("--segments", action="store_true", help="compare layer by layer")
    ap.add_argument("--mode", choices=("train", "eval"), default="train",
                    help="eval: compare the inference forward (no_grad, eval()) instead of the step")
    args = ap.parse_args()
    res, meas = measured_events(args)
    est, mine = nnmem_events(args)
    meas, mine = canonical(meas), canonical(mine)
    if args.segments:
        print_segments(meas, mine)
    else:
        print_events(meas, mine, args.all)
    t = est["totals"]
    if args.mode == "eval":   # both above parameters, buffers and input (compare.py's eval_rows)
        base = t["param_bytes"] + t["buffer_bytes"] + t["input_bytes"]
        measured, mine = res["eval_peak_bytes"] - res["eval_start_bytes"], t["peak_bytes"] - base
        print("\ninference peak: measured %s (%s), nnmem %s (%s): %+d bytes" % (
            "{:,}".format(measured), res["eval_peak_module"], "{:,}".format(mine), t["peak_layer"], mine - measured))
        return
    print("\npeak: measured %s (%s, %s), nnmem %s (%s, %s): %+d bytes" % (
        "{:,}".format(res["peak_bytes"]), res["peak_phase"], res["peak_module"], "{:,}".format(t["peak_bytes"]),
        t["peak_phase"], t["peak_layer"], t["peak_bytes"] - res["peak_bytes"]))
    print("iteration start: measured %s; saved: measured %s, nnmem %s" % (
        "{:,}".format(res["iter_start_bytes"]), "{:,}".format(res["saved_bytes"]), "{:,}".format(t["saved_bytes"])))


if __name__ == "__main__":
    main()
