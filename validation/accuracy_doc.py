"""docs/accuracy.md from compare.py's rows: the summary table, one section per torch version
and network, the runs whose peak or inference peak is not modelled yet with why (compare.py
--markdown writes it, --check compares). Standard library only."""
import statistics

from fixture_rows import BASE_VERSION, estimated, pct, peak_not_modelled, peak_rows, rel, variant


def fmt(n):
    return "—" if n is None else "{:,}".format(n)


def summary_lines(version, rows, modelled, evals=()):
    est = estimated(rows)
    label = "torch %s" % version + ("" if modelled else " (not yet modelled: nnmem's %s model)" % BASE_VERSION)
    if not est:
        return ["| %s | %d | | | | |" % (label, len(rows))]
    peaks = peak_rows(rows)
    errors = [abs(rel(*r["peak"])) for r in peaks]
    heur = [rel(r["peak"][0], r["heuristic"]) for r in est]
    lines = [
        "| %s: parameters, buffers, gradients, optimizer state, input, target, saved | %d | %d | | |" % (
            label, len(est), sum(1 for r in est if not r["mismatches"])),
        "| %s: peak of the step, nnmem | %d | %d | %.2f%% | %.2f%% |" % (
            label, len(peaks), sum(1 for r in peaks if r["peak"][0] == r["peak"][1]),
            100 * statistics.median(errors), 100 * max(errors)),
        "| %s: peak of the step, \"2 x outputs\" | %d | %d | %.1f%% | %+.1f%% .. %+.1f%% |" % (
            label, len(est), 0, 100 * statistics.median([abs(h) for h in heur]), 100 * min(heur), 100 * max(heur)),
    ]
    unmodelled = [abs(rel(*r["peak"])) for r in est if not r["peak_modelled"]]
    if unmodelled:
        lines.append("| %s: peak of the step, networks not modelled yet (`validation/peak_not_modelled.json`) "
                     "| %d | %d | %.2f%% | %.2f%% |" % (label, len(unmodelled), sum(1 for e in unmodelled if e == 0),
                                                       100 * statistics.median(unmodelled), 100 * max(unmodelled)))
    if len(est) < len(rows):
        lines.append("| %s: runs nnmem has no option for (fused optimizers) | %d | | | |" % (label, len(rows) - len(est)))
    for listed, what in ((False, "inference peak (`--mode eval`)"),
                         (True, "inference peak, networks not modelled yet (`validation/eval_not_modelled.json`)")):
        errs = [abs(rel(m, e)) for _, _, m, e, why in evals if bool(why) == listed]
        if errs:
            lines.append("| %s: %s | %d | %d | %.2f%% | %.2f%% |" % (
                label, what, len(errs), sum(1 for x in errs if x == 0), 100 * statistics.median(errs), 100 * max(errs)))
    return lines


def version_section(version, rows, evals, modelled, level):
    h = "#" * level
    lines = []
    by_net = {}
    for r in rows:
        by_net.setdefault(r["network"], []).append(r)
    for net, rs in by_net.items():
        lines += ["%s %s" % (h, net), ""]
        if peak_not_modelled(net, version):
            lines += ["Its peak is not modelled exactly yet: %s." % peak_not_modelled(net, version), ""]
        for amp in sorted({r["amp"] for r in rs if r["amp"]}):
            why = not peak_not_modelled(net, version) and peak_not_modelled(net, version, amp=amp)
            if why:
                lines += ["Its peak under %s autocast is not modelled exactly yet: %s." % (amp, why), ""]
        lines += [
                  "| batch | optimizer | grads | variant | saved: measured | nnmem | peak: measured | nnmem | error | 2 x outputs | error | peak at (measured / nnmem) |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in rs:
            m, e = r["peak"]
            lines.append("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s %s / %s %s |" % (
                r["batch"], r["optimizer"], "none" if r["set_to_none"] else "keep", variant(r),
                fmt(r["saved"][0]), fmt(r["saved"][1]), fmt(m), fmt(e),
                pct(m, e) if e is not None else "not estimated", fmt(r["heuristic"]),
                pct(m, r["heuristic"]) if r["heuristic"] is not None else "", *r["peak_where"]))
        lines.append("")
    lines += ["%s Inference (`--mode eval`)" % h, "",
              "Activation peak of one `torch.no_grad()` forward in `eval()` mode, above parameters, buffers",
              "and input, checked exactly. Without autograd keeping anything, what decides it is how long",
              "forward()'s Python code refers to each tensor: nnmem frees a tensor once the last layer",
              "reading it has run (as `nn.Sequential` does), but a module's caller holds its arguments",
              "until it returns (a block instance's inputs live until its last layer has run), and a",
              "variable holds its tensor until it is assigned again or its function returns (`var: x` in",
              "the spec: `x = self.act(self.fc(x))` holds the old `x` through both calls; a function's",
              "argument, `held_until: LAYER`). docs/memory-model.md, \"Python references\".", "",
              "| network | batch | measured | nnmem | error |", "|---|---|---|---|---|"]
    for net, batch, m, e, why in evals:
        lines.append("| %s | %d | %s | %s | %s%s |" % (net, batch, fmt(m), fmt(e), pct(m, e), " (not modelled yet)" if why else ""))
    reasons = sorted({(net, why) for net, _, _, _, why in evals if why})
    if reasons:
        lines += ["", "Not modelled exactly yet (`validation/eval_not_modelled.json`):", ""]
        lines += ["- %s: %s." % (net, why) for net, why in reasons]
    return lines + [""]


def markdown(results, nnmem):
    """results: [(version, rows, evals)], oldest version first."""
    lines = [
        "<!-- generated by `python3 validation/compare.py --markdown docs/accuracy.md`; do not edit -->",
        "# Accuracy against PyTorch",
        "",
        "Every figure below compares `nnmem estimate --device cpu` with what PyTorch measured on the CPU",
        "for the same network, batch and optimizer, in a fresh process per run (`validation/measure.py`;",
        "fixtures in `validation/fixtures/torch-VERSION/`, regenerated by",
        "`/usr/bin/python3 validation/run_all.py --torch VERSION`): torch 1.13 (Debian's `python3-torch`)",
        "and torch 2.13 (`torch==2.13.0+cpu` from pip). Method, in short:",
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
        "  multi-tensor implementation (`foreach=True`), compared with `--foreach`; **fused** — the",
        "  optimizer's fused kernel (`fused=True`, torch 2.x);",
        "- **2 x outputs** — torchsummary's (and SizeEstimator's) total: input + params + 2 x every",
        "  layer output, at 4 bytes per element; the error is against the measured peak;",
        "- **ddp over N ranks** — `DistributedDataParallel` on the CPU with gloo, each rank a process of",
        "  its own measuring its own step (`validation/measure_dist.py`), compared with `--gpus N`",
        "  (`--bucket-cap-mb` when set): every rank's peak and DDP's buckets one by one",
        "  (`tests/test_step.cpp`).",
        "",
        "Beyond one GPU, what only GPUs can run is not measured here. DeepSpeed's ZeRO-2/3 estimators",
        "(`--convention deepspeed`) and Megatron-LM's theoretical memory (`nnmem megatron`: tensor,",
        "pipeline and interleaved parallelism, sequence parallelism, Korthikanti et al.'s formulas) are",
        "reproduced from those projects' own code, exactly (`validation/deepspeed_estimates.py`,",
        "`validation/megatron_estimates.py`, `tests/test_conventions.cpp`): figures **modelled** from",
        "published formulas, checked against the formulas, not against a GPU (docs/conventions.md).",
        "",
    ]
    unmodelled = [v for v, _, _ in results if not nnmem.modelled(v)]
    if unmodelled:
        lines += ["nnmem models torch %s. The runs of torch %s are **not yet modelled**: they are shown against" % (
                      BASE_VERSION, ", ".join(unmodelled)),
                  "nnmem's %s model, to show where the versions differ (explained, rule by rule, in" % BASE_VERSION,
                  "`validation/torch2-differences.md`).", ""]
    lines += ["## Summary", "",
              "| | runs | exact | median error | worst error |",
              "|---|---|---|---|---|"]
    for version, rows, evals in results:
        lines += summary_lines(version, rows, nnmem.modelled(version), evals)
    lines.append("")
    for version, rows, evals in results:
        modelled = nnmem.modelled(version)
        lines += ["## torch %s%s" % (version, "" if modelled else " — not yet modelled (nnmem's %s model)" % BASE_VERSION),
                  ""]
        lines += version_section(version, rows, evals, modelled, 3)
    return "\n".join(lines).rstrip("\n") + "\n"
