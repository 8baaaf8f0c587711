#!/usr/bin/env python3
"""Compares nnmem's estimates with the PyTorch measurements in validation/fixtures/.

    python3 validation/compare.py [--nnmem build/nnmem] [--only a,b]      # a report, exit 1 if off
    python3 validation/compare.py --markdown docs/accuracy.md            # regenerate the document
    python3 validation/compare.py --check docs/accuracy.md               # CI: is it up to date?

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


def torch_of(fixture):
    """The PyTorch version a fixture measured, as --torch takes it: "1.13.0a0" -> "1.13"."""
    return ".".join(fixture["torch_version"].split(".")[:2])


def run_nnmem(binary, network, batch, optimizer, set_to_none, mode="train", amp=None, foreach=False, torch=None):
    spec, extra = spec_of(network)
    args = [binary, "estimate", spec, "--format", "json", "--device", "cpu", "--batch", str(batch),
            "--optimizer", optimizer, "--mode", mode] + extra + (["--torch", torch] if torch else [])
    if not set_to_none:
        args.append("--keep-grads")
    if amp:
        args += ["--amp", amp]
    if foreach:
        args.append("--foreach")
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
            est = run_nnmem(binary, network, run["batch"], run["optimizer"], run["set_to_none"], amp=run.get("amp"),
                            foreach=run.get("foreach", False), torch=torch_of(fixture))
            tot = est["totals"]
            row = {"network": network, "batch": run["batch"], "optimizer": run["optimizer"],
                   "set_to_none": run["set_to_none"], "amp": run.get("amp"), "foreach": run.get("foreach", False),
                   "mismatches": []}
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
        out.write("%s %-18s b=%-4d %-8s %-5s %-4s peak %13d vs %13d (%+6.2f%%)  saved %s  %s/%s vs %s/%s%s\n" % (
            flag, r["network"], r["batch"], r["optimizer"], "none" if r["set_to_none"] else "keep",
            "bf16" if r["amp"] else "fe" if r["foreach"] else "", m, e,
            100 * rel(m, e), "ok" if r["saved"][0] == r["saved"][1] else "%d vs %d" % r["saved"],
            *r["peak_where"], "" if not r["mismatches"] else "\n     " + "; ".join(r["mismatches"])))
    exact_ok = sum(1 for r in rows if not r["mismatches"])
    out.write("\n%d runs; exact figures right in %d; peak error median %.2f%%, worst %.2f%%\n" % (
        len(rows), exact_ok, 100 * statistics.median(errors), 100 * max(errors)))
    return exact_ok == len(rows) and statistics.median(errors) <= 0.02 and max(errors) <= 0.05


def pct(measured, estimated):
    return "%+.2f%%" % (100 * rel(measured, estimated))


def eval_rows(binary):
    """Inference: the activations' peak above params + buffers + input (+ the target the
    harness keeps), per network and batch."""
    rows = []
    for name in sorted(os.listdir(FIXTURES)):
        if not name.endswith(".json"):
            continue
        fixture = json.load(open(os.path.join(FIXTURES, name)))
        seen = set()
        for run in fixture["runs"]:
            if run["batch"] in seen:
                continue
            seen.add(run["batch"])
            est = run_nnmem(binary, fixture["network"], run["batch"], "sgd", True, mode="eval", torch=torch_of(fixture))["totals"]
            base = est["param_bytes"] + est["buffer_bytes"] + est["input_bytes"]
            rows.append((fixture["network"], run["batch"], run["eval_peak_bytes"] - run["eval_start_bytes"],
                         est["peak_bytes"] - base))
    return rows


def markdown(rows, evals):
    errors = [abs(rel(*r["peak"])) for r in rows]
    heur = [rel(r["peak"][0], r["heuristic"]) for r in rows]
    lines = [
        "<!-- generated by `python3 validation/compare.py --markdown docs/accuracy.md`; do not edit -->",
        "# Accuracy against PyTorch",
        "",
        "Every figure below compares `nnmem estimate --device cpu` with what PyTorch 1.13 (Debian's",
        "`python3-torch`, CPU) measured for the same network, batch and optimizer, in a fresh process",
        "per run (`validation/measure.py`; fixtures in `validation/fixtures/`, regenerated by",
        "`/usr/bin/python3 validation/run_all.py`). Method, in short:",
        "",
        "- **exact figures** — parameters, buffers, gradients and optimizer state are summed over the",
        "  tensors after a step; *saved for backward* is every tensor autograd packs",
        "  (`torch.autograd.graph.saved_tensors_hooks`) during one forward and loss, de-duplicated by",
        "  storage, parameters and buffers left out (the input and the loss's tensors count when kept);",
        "- **peak** — the profiler's allocator events (`profile_memory=True`) are added up in time order",
        "  from before the model is built, so the running total is every live tensor; allocations freed",
        "  inside the same outermost `aten::` call (oneDNN/im2col workspaces, which differ on GPU) are",
        "  left out; the peak is the maximum during the third iteration of",
        "  `zero_grad(); out = model(x); loss = loss_fn(out, y); loss.backward(); opt.step()`",
        "  (steady state: the optimizer state exists), with `set_to_none=True` (none) and `False` (keep);",
        "- **autocast** — runs with forward and loss under `torch.autocast(\"cpu\", torch.bfloat16)`,",
        "  compared with `nnmem estimate --amp bfloat16 --device cpu`; **foreach** — the optimizer's",
        "  multi-tensor implementation (`foreach=True`), compared with `--foreach`;",
        "- **2 x outputs** — torchsummary's (and SizeEstimator's) total: input + params + 2 x every",
        "  layer output, at 4 bytes per element; the error is against the measured peak.",
        "",
        "## Summary",
        "",
        "| | runs | exact | median error | worst error |",
        "|---|---|---|---|---|",
        "| parameters, buffers, gradients, optimizer state, input, target, saved | %d | %d | | |" % (
            len(rows), sum(1 for r in rows if not r["mismatches"])),
        "| peak of the step, nnmem | %d | %d | %.2f%% | %.2f%% |" % (
            len(rows), sum(1 for r in rows if r["peak"][0] == r["peak"][1]),
            100 * statistics.median(errors), 100 * max(errors)),
        "| peak of the step, \"2 x outputs\" | %d | %d | %.1f%% | %+.1f%% .. %+.1f%% |" % (
            len(rows), 0, 100 * statistics.median([abs(h) for h in heur]), 100 * min(heur), 100 * max(heur)),
        "",
    ]
    by_net = {}
    for r in rows:
        by_net.setdefault(r["network"], []).append(r)
    for net, rs in by_net.items():
        lines += ["## %s" % net, "",
                  "| batch | optimizer | grads | variant | saved: measured | nnmem | peak: measured | nnmem | error | 2 x outputs | error | peak at (measured / nnmem) |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in rs:
            m, e = r["peak"]
            lines.append("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s %s / %s %s |" % (
                r["batch"], r["optimizer"], "none" if r["set_to_none"] else "keep",
                (r["amp"] + " autocast") if r["amp"] else "foreach" if r["foreach"] else "",
                "{:,}".format(r["saved"][0]), "{:,}".format(r["saved"][1]), "{:,}".format(m), "{:,}".format(e),
                pct(m, e), "{:,}".format(r["heuristic"]), pct(m, r["heuristic"]), *r["peak_where"]))
        lines.append("")
    lines += ["## Inference (`--mode eval`)", "",
              "Activation peak of one `torch.no_grad()` forward in `eval()` mode, above parameters, buffers",
              "and input. nnmem frees a tensor once the last layer reading it has run, as `nn.Sequential`",
              "does; forward() code that keeps tensors in Python variables longer (`s = self.stem(x)` used",
              "two statements later, `x = self.block2(self.block1(x))` holding the outer `x`) holds them",
              "longer, which a spec cannot see: those networks measure one or two activations more.", "",
              "| network | batch | measured | nnmem | error |", "|---|---|---|---|---|"]
    for net, batch, m, e in evals:
        lines.append("| %s | %d | %s | %s | %s |" % (net, batch, "{:,}".format(m), "{:,}".format(e), pct(m, e)))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nnmem", default=os.path.join(ROOT, "build", "nnmem"))
    ap.add_argument("--only", default="")
    ap.add_argument("--markdown", help="write the accuracy document here")
    ap.add_argument("--check", help="fail if this accuracy document is not what --markdown would write")
    args = ap.parse_args()
    rows = compare(args.nnmem, set(filter(None, args.only.split(","))))
    if args.markdown or args.check:
        text = markdown(rows, eval_rows(args.nnmem))
        if args.markdown:
            open(args.markdown, "w").write(text)
            print("wrote %s" % args.markdown)
        else:
            current = open(args.check).read() if os.path.exists(args.check) else ""
            if current != text:
                print("%s is out of date: run python3 validation/compare.py --markdown %s" % (args.check, args.check))
                print("1 passed, 1 failed" if report(rows, sys.stdout) else "0 passed, 2 failed")
                sys.exit(1)
    ok = report(rows, sys.stdout)
    print("%d passed, %d failed" % (sum(1 for r in rows if not r["mismatches"] and abs(rel(*r["peak"])) <= 0.05),
                                    sum(1 for r in rows if r["mismatches"] or abs(rel(*r["peak"])) > 0.05)))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
