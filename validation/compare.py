#!/usr/bin/env python3
"""Compares nnmem's estimates with the PyTorch measurements in validation/fixtures/.

    python3 validation/compare.py [--nnmem build/nnmem] [--markdown docs/accuracy.md] [--only a,b]

For every measured run (network, batch, optimizer, set_to_none) it runs
`nnmem estimate --format json --device cpu ...` on the network's spec and compares the
exact byte counts (parameters, buffers, gradients, optimizer state, input, target, saved
for backward) and the peak of the steady-state step. Standard library only: CI runs it
against the committed fixtures, without PyTorch.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "validation", "fixtures")

# network -> (spec, extra nnmem arguments)
SPECS = {"seed_conv_256": ("examples/seed_conv.yaml", ["--set", "size=256"])}

EXACT = ["param_bytes", "buffer_bytes", "grad_bytes", "optimizer_state_bytes", "input_bytes",
         "target_bytes", "saved_bytes"]


def spec_of(network):
    return SPECS.get(network, ("examples/%s.yaml" % network, []))


def run_nnmem(binary, network, batch, optimizer, set_to_none, mode="train"):
    spec, extra = spec_of(network)
    args = [binary, "estimate", spec, "--format", "json", "--device", "cpu", "--batch", str(batch),
            "--optimizer", optimizer, "--mode", mode] + extra
    if not set_to_none:
        args.append("--keep-grads")
    out = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError("%s failed:\n%s" % (" ".join(args), out.stderr))
    return json.loads(out.stdout)


def heuristic(estimate):
    """torchsummary's (and SizeEstimator's) training figure: params + input + 2 x outputs."""
    return estimate["conventions"]["torchsummary"]["total_bytes"]


def compare(binary, only=None):
    rows = []
    for name in sorted(os.listdir(FIXTURES)):
        if not name.endswith(".json"):
            continue
        fixture = json.load(open(os.path.join(FIXTURES, name)))
        network = fixture["network"]
        if only and network not in only:
            continue
        for run in fixture["runs"]:
            est = run_nnmem(binary, network, run["batch"], run["optimizer"], run["set_to_none"])
            tot = est["totals"]
            row = {"network": network, "batch": run["batch"], "optimizer": run["optimizer"],
                   "set_to_none": run["set_to_none"], "mismatches": []}
            for key in EXACT:
                if tot[key] != run[key]:
                    row["mismatches"].append("%s: measured %d, nnmem %d" % (key, run[key], tot[key]))
            row["saved"] = (run["saved_bytes"], tot["saved_bytes"])
            row["peak"] = (run["peak_bytes"], tot["peak_bytes"])
            row["peak_where"] = (run["peak_phase"], run.get("peak_module") or "",
                                 tot["peak_phase"], tot["peak_layer"])
            row["heuristic"] = heuristic(est)
            rows.append(row)
    return rows


def rel(measured, estimated):
    return (estimated - measured) / measured if measured else 0.0


def report(rows, out):
    errors = [abs(rel(*r["peak"])) for r in rows]
    for r in rows:
        m, e = r["peak"]
        flag = "  " if abs(rel(m, e)) <= 0.02 else "!!"
        out.write("%s %-18s b=%-4d %-8s %-5s peak %13d vs %13d (%+6.2f%%)  saved %s  %s/%s vs %s/%s%s\n" % (
            flag, r["network"], r["batch"], r["optimizer"], "none" if r["set_to_none"] else "keep", m, e,
            100 * rel(m, e), "ok" if r["saved"][0] == r["saved"][1] else "%d vs %d" % r["saved"],
            *r["peak_where"], "" if not r["mismatches"] else "\n     " + "; ".join(r["mismatches"])))
    exact_ok = sum(1 for r in rows if not r["mismatches"])
    out.write("\n%d runs; exact figures right in %d; peak error median %.2f%%, worst %.2f%%\n" % (
        len(rows), exact_ok, 100 * statistics.median(errors), 100 * max(errors)))
    return exact_ok == len(rows) and statistics.median(errors) <= 0.02 and max(errors) <= 0.05


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nnmem", default=os.path.join(ROOT, "build", "nnmem"))
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    rows = compare(args.nnmem, set(filter(None, args.only.split(","))))
    ok = report(rows, sys.stdout)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
