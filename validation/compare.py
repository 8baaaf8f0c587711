#!/usr/bin/env python3
"""Compares nnmem's estimates with the PyTorch measurements in validation/fixtures/torch-*/.

    python3 validation/compare.py [--nnmem build/nnmem] [--only a,b] [--torch 2.13]   # a report
    python3 validation/compare.py --markdown docs/accuracy.md            # regenerate the document
    python3 validation/compare.py --check docs/accuracy.md               # CI: is it up to date?

Fixtures live in one directory per torch version (validation/fixtures/torch-1.13/,
torch-2.13/). For every measured run (network, batch, optimizer, set_to_none, variant) it
runs `nnmem estimate --format json --device cpu ...` on the network's spec — with
`--torch VERSION` when the binary has that option (probed with `nnmem estimate --help`) — and
compares the exact byte counts (parameters, buffers, gradients, optimizer state, input,
target, saved for backward) and the peak of the steady-state step; and, once per network and
batch, the inference peak (`--mode eval`) against the fixture's eval_peak_bytes.

A version is *modelled* when nnmem can be told to follow it: 1.13 always (nnmem's behaviour
without --torch), any other version only when the binary has --torch. Runs of a version that
is not modelled are compared with nnmem's 1.13 model and reported, but do not decide the exit
status; runs nnmem has no option for (fused optimizers, without --fused) are listed as not
estimated. Exit 1 if a modelled run is off. Standard library only: CI runs it against the
committed fixtures, without PyTorch.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

from accuracy_doc import markdown
from fixture_rows import (BASE_VERSION, EVAL_NOT_MODELLED, EXACT, FIXTURES, ROOT, SPECS, estimated, failed,
                          peak_not_modelled, peak_rows, rel, variant)


def spec_of(network):
    return SPECS.get(network, ("examples/%s.yaml" % network, []))


def options_of(binary):
    """The long options `nnmem estimate --help` lists (e.g. {'--torch', '--foreach', ...})."""
    out = subprocess.run([binary, "estimate", "--help"], cwd=ROOT, capture_output=True, text=True)
    return set(re.findall(r"(--[a-z][a-z0-9-]*)", out.stdout))


def versions():
    """The torch versions that have a fixture directory, newest first (nnmem's default first)."""
    found = [d[len("torch-"):] for d in os.listdir(FIXTURES)
             if d.startswith("torch-") and os.path.isdir(os.path.join(FIXTURES, d))]
    return sorted(found, key=lambda v: tuple(int(x) for x in v.split(".")), reverse=True)


def fixtures_of(version):
    d = os.path.join(FIXTURES, "torch-" + version)
    for name in sorted(os.listdir(d)):
        if name.endswith(".json"):
            with open(os.path.join(d, name)) as f:
                yield json.load(f)


class Nnmem:
    def __init__(self, binary):
        self.binary = binary
        self.options = options_of(binary)
        self.has_torch = "--torch" in self.options
        self.has_fused = "--fused" in self.options

    def modelled(self, version):
        return version == BASE_VERSION or self.has_torch

    def run(self, version, network, batch, optimizer, set_to_none, mode="train", amp=None, foreach=False,
            fused=False, variant_args=()):
        spec, extra = spec_of(network)
        args = [self.binary, "estimate", spec, "--format", "json", "--device", "cpu", "--batch", str(batch),
                "--optimizer", optimizer, "--mode", mode] + extra
        if self.has_torch:
            args += ["--torch", version]
        if not set_to_none:
            args.append("--keep-grads")
        if amp:
            args += ["--amp", amp]
        if foreach:
            args.append("--foreach")
        if fused:
            args.append("--fused")
        args += list(variant_args)
        out = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError("%s failed:\n%s" % (" ".join(args), out.stderr))
        return json.loads(out.stdout)


def heuristic(estimate):
    """torchsummary's (and SizeEstimator's) training figure: params + input + 2 x outputs."""
    return estimate["conventions"]["torchsummary"]["total_bytes"]


def scaling_args(run):
    """nnmem's flags for a run's checkpointing, gradient accumulation, loop and data parallelism."""
    args = []
    if run.get("parallel") == "ddp":
        args += ["--gpus", str(run["world_size"])]
        if run.get("bucket_cap_mb") is not None:
            args += ["--bucket-cap-mb", repr(run["bucket_cap_mb"])]
    elif run.get("parallel") in ("fsdp2", "fsdp2-grad-op"):  # fully_shard on each unit: FULL_SHARD, SHARD_GRAD_OP
        args += ["--gpus", str(run["world_size"]), "--fsdp", "full" if run["parallel"] == "fsdp2" else "shard_grad_op"]
    if run.get("checkpoint"):
        args += ["--checkpoint", run["checkpoint"], "--checkpoint-impl", run["checkpoint_impl"]]
    if run.get("grad_accum", 1) > 1:
        args += ["--grad-accum", str(run["grad_accum"])]
    if run.get("loop", "plain") != "plain":
        args += ["--loop", run["loop"]]
    if run.get("dtype"):
        args += ["--dtype", run["dtype"]]
    return args


def compare(nnmem, version, only=None):
    """One row per run of that version's fixtures; rows nnmem cannot estimate have est=None."""
    rows = []
    for fixture in fixtures_of(version):
        network = fixture["network"]
        if only and network not in only:
            continue
        for run in fixture["runs"]:
            row = {"version": version, "network": network, "batch": run["batch"], "optimizer": run["optimizer"],
                   "set_to_none": run["set_to_none"], "amp": run.get("amp"), "foreach": run.get("foreach", False),
                   "fused": run.get("fused", False), "mismatches": [], "estimated": True,
                   "checkpoint": run.get("checkpoint"), "checkpoint_impl": run.get("checkpoint_impl"),
                   "grad_accum": run.get("grad_accum", 1), "loop": run.get("loop", "plain"),
                   "parallel": run.get("parallel"), "world_size": run.get("world_size", 1),
                   "bucket_cap_mb": run.get("bucket_cap_mb"), "dtype": run.get("dtype"),
                   "peak_modelled": not peak_not_modelled(network, version, amp=run.get("amp")),
                   "saved": (run["saved_bytes"], None), "peak": (run["peak_bytes"], None),
                   "peak_where": (run["peak_phase"], run.get("peak_module") or "", "", ""), "heuristic": None}
            if row["fused"] and not nnmem.has_fused:
                row["estimated"] = False
                rows.append(row)
                continue
            est = nnmem.run(version, network, run["batch"], run["optimizer"], run["set_to_none"], amp=run.get("amp"),
                            foreach=row["foreach"], fused=row["fused"], variant_args=scaling_args(run))
            tot = est["totals"]
            for key in EXACT:
                if tot[key] != run[key]:
                    row["mismatches"].append("%s: measured %d, nnmem %d" % (key, run[key], tot[key]))
            row["saved"] = (run["saved_bytes"], tot["saved_bytes"])
            row["peak"] = (run["peak_bytes"], tot["peak_bytes"])
            if not row["peak_modelled"] and tot["peak_bytes"] < run["peak_bytes"]:
                row["mismatches"].append("peak: measured %d, nnmem %d, below it" % (run["peak_bytes"], tot["peak_bytes"]))
            row["peak_where"] = (run["peak_phase"], run.get("peak_module") or "", tot["peak_phase"], tot["peak_layer"])
            row["heuristic"] = heuristic(est)
            rows.append(row)
    return rows


def report(rows, modelled, out):
    """One line per run; returns whether the version passes (always True if not modelled)."""
    version = rows[0]["version"] if rows else "?"
    out.write("torch %s%s\n" % (version, "" if modelled else
                                " (not modelled by this nnmem: compared with its %s model, for information)" % BASE_VERSION))
    est = estimated(rows)
    for r in rows:
        head = "%-18s b=%-4d %-8s %-5s %-7s" % (r["network"], r["batch"], r["optimizer"],
                                                 "none" if r["set_to_none"] else "keep",
                                                 {"bfloat16": "bf16", "float16": "f16"}.get(r["amp"], r["amp"]) if r["amp"] else "fused" if r["fused"] else
                                                 "fe" if r["foreach"] else "")
        if r["checkpoint"] or r["grad_accum"] > 1 or r["loop"] != "plain" or r["parallel"] or r["dtype"]:
            head += " [%s]" % variant(r)
        if not r["estimated"]:
            out.write("-- %s peak %13d measured; nnmem has no option for this variant\n" % (head, r["peak"][0]))
            continue
        m, e = r["peak"]
        flag = ("  " if abs(rel(m, e)) <= 0.02 else "!!") if modelled and r["peak_modelled"] else ("  " if m == e else "~~")
        out.write("%s %s peak %13d vs %13d (%+6.2f%%)  saved %s  %s/%s vs %s/%s%s\n" % (
            flag, head, m, e, 100 * rel(m, e), "ok" if r["saved"][0] == r["saved"][1] else "%d vs %d" % r["saved"],
            *r["peak_where"], "" if not r["mismatches"] else "\n     " + "; ".join(r["mismatches"])))
    if not est:
        out.write("\nno run estimated\n\n")
        return True
    errors = [abs(rel(*r["peak"])) for r in peak_rows(rows)] or [0.0]
    exact_ok = sum(1 for r in est if not r["mismatches"])
    out.write("\ntorch %s: %d runs (%d estimated); exact figures right in %d; peak exact in %d; "
              "peak error median %.2f%%, worst %.2f%% (%d runs whose peak is not modelled yet aside)\n\n" % (
                  version, len(rows), len(est), exact_ok, sum(1 for r in est if r["peak"][0] == r["peak"][1]),
                  100 * statistics.median(errors), 100 * max(errors), len(est) - len(peak_rows(rows))))
    if not modelled:
        return True
    return exact_ok == len(est) and statistics.median(errors) <= 0.02 and max(errors) <= 0.05


def eval_rows(nnmem, version, only=None):
    """Inference: the activations' peak above params + buffers + input (+ the target the
    harness keeps), per network and batch: (network, batch, measured, nnmem, why not modelled
    or None)."""
    rows = []
    for fixture in fixtures_of(version):
        network = fixture["network"]
        if only and network not in only:
            continue
        seen = set()
        for run in fixture["runs"]:
            if run["batch"] in seen:
                continue
            seen.add(run["batch"])
            est = nnmem.run(version, network, run["batch"], "sgd", True, mode="eval")["totals"]
            base = est["param_bytes"] + est["buffer_bytes"] + est["input_bytes"]
            rows.append((network, run["batch"], run["eval_peak_bytes"] - run["eval_start_bytes"],
                         est["peak_bytes"] - base, peak_not_modelled(network, version, EVAL_NOT_MODELLED)))
    return rows


def report_eval(version, evals, out):
    """One line per inference run; returns the number of modelled runs that are off."""
    off = 0
    for net, batch, m, e, why in evals:
        bad = m != e and not why
        off += bad
        out.write("%s %-18s b=%-4d eval peak %11d vs %11d (%+6.2f%%)%s\n" % (
            "!!" if bad else "  " if m == e else "~~", net, batch, m, e, 100 * rel(m, e), "  not modelled: " + why if why else ""))
    out.write("\ntorch %s inference: %d runs; exact in %d; %d not modelled yet (validation/eval_not_modelled.json)\n\n" % (
        version, len(evals), sum(1 for r in evals if r[2] == r[3]), sum(1 for r in evals if r[4])))
    return off


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nnmem", default=os.path.join(ROOT, "build", "nnmem"))
    ap.add_argument("--only", default="", help="comma-separated networks")
    ap.add_argument("--torch", default="", help="comma-separated torch versions (default: every fixture directory)")
    ap.add_argument("--markdown", help="write the accuracy document here")
    ap.add_argument("--check", help="fail if this accuracy document is not what --markdown would write")
    args = ap.parse_args()
    nnmem = Nnmem(args.nnmem)
    only = set(filter(None, args.only.split(",")))
    wanted = [v for v in versions() if not args.torch or v in args.torch.split(",")]
    results = [(v, compare(nnmem, v, only), eval_rows(nnmem, v, only)) for v in wanted]
    if args.markdown or args.check:
        text = markdown(results, nnmem)
        if args.markdown:
            with open(args.markdown, "w") as f:
                f.write(text)
            print("wrote %s" % args.markdown)
        else:
            current = open(args.check).read() if os.path.exists(args.check) else ""
            if current != text:
                print("%s is out of date: run python3 validation/compare.py --markdown %s" % (args.check, args.check))
                ok = all(report(rows, nnmem.modelled(v), sys.stdout) and not report_eval(v, evals, sys.stdout)
                         for v, rows, evals in results)
                print("1 passed, 1 failed" if ok else "0 passed, 2 failed")
                sys.exit(1)
    ok = True
    passed = fails = 0
    for v, rows, evals in results:
        modelled = nnmem.modelled(v)
        ok = report(rows, modelled, sys.stdout) and ok
        off = report_eval(v, evals, sys.stdout)
        if modelled:
            passed += sum(1 for r in estimated(rows) if not failed(r)) + sum(1 for r in evals if not r[4]) - off
            fails += sum(1 for r in estimated(rows) if failed(r)) + off
            ok = ok and off == 0
    print("%d passed, %d failed" % (passed, fails))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
