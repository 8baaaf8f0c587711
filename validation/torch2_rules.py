#!/usr/bin/env python3
"""The torch 2.13 rules of torch2-differences.md, applied to nnmem's torch 1.13 timeline and
checked against every torch 2.13 fixture.

    python3 validation/torch2_rules.py [--nnmem build/nnmem] [--only a,b] [-v]

An executable statement of the rules, for whoever implements them in nnmem (and a test
that they are complete): for every run in validation/fixtures/torch-2.13/ it runs nnmem as
it is (the 1.13 model; a fused run as the single-tensor one), rewrites its `timeline` with
the rules below, and compares the rewritten peak and saved-for-backward bytes with the
measurement. Standard library only.

  R1  the engine's sum of two gradients of one tensor is done in place (no new tensor)
      when the gradient that arrived first is a whole tensor only the sum holds: nnmem's
      "+S accumulated grad" followed by the frees of both operands, each of size S,
      becomes the free of the second operand alone;
  R2  global average pooling (AdaptiveAvgPool to 1x1: mean over the spatial dimensions)
      keeps nothing for backward: the input storage it alone kept is freed in the forward,
      right after the pooling, instead of in the pooling's backward;
  R3  Adam/AdamW with foreach=True allocate one temporary per parameter
      (exp_avg_sq.sqrt(), then divided and incremented in place), not two: nnmem's "denom"
      list disappears; a 4-byte torch.tensor(1.0) is made and freed first (step += 1);
  R4  fused=True (SGD, momentum, Adam, AdamW) allocates nothing in the step.
Everything else nnmem does for 1.13 holds for 2.13 unchanged (torch2-differences.md).
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare import FIXTURES, Nnmem  # noqa: E402

VERSION = "2.13"


def r1_inplace_accumulation(events):
    """nnmem's accumulate() emits "+S accumulated grad", then the free of the first operand,
    then the free of the second. When both frees are of S (two whole gradients, the first
    held by nothing else), 2.13 adds in place: only the second operand's free remains.
    Returns the events and the number of sums made in place."""
    out, i, n = [], 0, 0
    while i < len(events):
        e = events[i]
        if e["tensor"] == "accumulated grad" and e["delta"] > 0 and i + 2 < len(events):
            a, b = events[i + 1], events[i + 2]
            if a["delta"] == b["delta"] == -e["delta"] and a["layer"] == b["layer"] == e["layer"]:
                out.append(b)              # old.add_(new): only `new` is freed
                i += 3
                n += 1
                continue
        out.append(e)
        i += 1
    return out, n


def global_avg_pools(layers):
    return {l["name"] for l in layers if l["type"].startswith("AdaptiveAvgPool")
            and all(d == 1 for d in l["outputs"][0]["shape"][2:])}


def r2_global_avg_pool(events, layers, kept_elsewhere):
    """Moves the frees of activations done in a global average pool's backward (nnmem
    releases there the input the pool kept) to the end of the pool's forward; returns the
    events and the bytes no longer kept for backward.  An input another backward node also
    keeps (kept_elsewhere(bytes)) is freed by that node's backward instead, which runs
    earlier than the pool's; the checker leaves such a free where nnmem has it (later in
    the backward, after the peak in every network here) and counts it as still kept."""
    pools = global_avg_pools(layers)
    moved, kept = {}, []
    for e in events:
        if e["phase"] == "backward" and e["layer"] in pools and e["delta"] < 0 and e["tensor"].startswith("output of") \
                and not kept_elsewhere(-e["delta"]):
            moved.setdefault(e["layer"], []).append(e)
        else:
            kept.append(e)
    unkept = sum(-m["delta"] for ms in moved.values() for m in ms)
    out = []
    for k, e in enumerate(kept):
        out.append(e)
        nxt = kept[k + 1] if k + 1 < len(kept) else None
        if e["phase"] == "forward" and e["layer"] in moved and (nxt is None or nxt["layer"] != e["layer"]):
            out.extend(dict(m, phase="forward") for m in moved.pop(e["layer"]))
    return out, unkept


def r3_foreach_adam(events):
    """Drops nnmem's second list ("denom"); the step starts with torch.tensor(1.0)."""
    out, first = [], True
    for e in events:
        if e["phase"] == "optimizer" and e["tensor"] == "denom":
            continue
        if e["phase"] == "optimizer" and first:
            first = False
            out.append(dict(e, tensor="torch.tensor(1.0)", delta=4))
            out.append(dict(e, tensor="torch.tensor(1.0)", delta=-4))
        out.append(e)
    return out


def r4_fused(events):
    """No event in the step."""
    return [e for e in events if e["phase"] != "optimizer"]


def peak_of(events, start):
    live, best, where = start, start, ("", "")
    for e in events:
        live += e["delta"]
        if live > best:
            best, where = live, (e["phase"], e["layer"])
    return best, where


def check(nnmem, fixture, run):
    network = fixture["network"]
    fused = run.get("fused", False)
    foreach = run.get("foreach", False)
    est = nnmem.run(VERSION, network, run["batch"], run["optimizer"], run["set_to_none"], amp=run.get("amp"),
                    foreach=foreach)
    tl = est["timeline"]
    start = tl[0]["live"] - tl[0]["delta"]
    events, applied = list(tl), []
    events, n = r1_inplace_accumulation(events)
    if n:
        applied.append("R1x%d" % n)
    # Whether another node keeps a storage of that size: read from the run's own listing of
    # saved storages (node attributes other than mean's), as nnmem's JSON has no graph.
    others = [t for t in run["saved_tensors"] if any(not op.startswith("MeanBackward") for op in t["ops"])]
    events, unkept = r2_global_avg_pool(events, est["layers"], lambda n: any(t["nbytes"] == n for t in others))
    saved = est["totals"]["saved_bytes"] - unkept
    if unkept:
        applied.append("R2")
    if fused:
        events = r4_fused(events)
        applied.append("R4")
    elif foreach and run["optimizer"] in ("adam", "adamw"):
        events = r3_foreach_adam(events)
        applied.append("R3")
    peak, where = peak_of(events, start)
    # Which rules decide the figures: those whose omission changes the peak or saved bytes.
    decisive = set()
    for rule in {a.split("x")[0] for a in applied}:
        ev = list(tl)
        if rule != "R1":
            ev, _ = r1_inplace_accumulation(ev)
        unk = 0
        if rule != "R2":
            ev, unk = r2_global_avg_pool(ev, est["layers"], lambda n: any(t["nbytes"] == n for t in others))
        if rule != "R4" and fused:
            ev = r4_fused(ev)
        elif rule != "R3" and foreach and run["optimizer"] in ("adam", "adamw") and not fused:
            ev = r3_foreach_adam(ev)
        if peak_of(ev, start)[0] != peak or est["totals"]["saved_bytes"] - unk != saved:
            decisive.add(rule)
    return {"network": network, "run": run, "peak": peak, "where": where, "saved": saved, "applied": applied,
            "nnmem_peak": est["totals"]["peak_bytes"], "nnmem_saved": est["totals"]["saved_bytes"], "decisive": decisive}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--nnmem", default=os.path.join(os.path.dirname(HERE), "build", "nnmem"))
    ap.add_argument("--only", default="")
    ap.add_argument("-v", "--verbose", action="store_true", help="one line per run, not only the failures")
    ap.add_argument("--affected", action="store_true",
                    help="a markdown table of the runs where nnmem's 1.13 model is off, and which rules fix them")
    args = ap.parse_args()
    nnmem = Nnmem(args.nnmem)
    if nnmem.has_torch:
        print("note: this nnmem has --torch; the rules are applied to its --torch %s timeline "
              "(where nnmem already implements them they find nothing left to change)" % VERSION)
    only = set(filter(None, args.only.split(",")))
    d = os.path.join(FIXTURES, "torch-" + VERSION)
    ok = bad = 0
    table = ["| network | batch | optimizer | grads | variant | measured peak | nnmem (1.13 model) | nnmem − measured | measured saved | nnmem saved | rules that make it exact |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name in sorted(os.listdir(d)):
        fixture = json.load(open(os.path.join(d, name)))
        if only and fixture["network"] not in only:
            continue
        for run in fixture["runs"]:
            r = check(nnmem, fixture, run)
            good = r["peak"] == run["peak_bytes"] and r["saved"] == run["saved_bytes"]
            ok += good
            bad += not good
            label = "%-16s b=%-3d %-8s %-4s %-7s" % (r["network"], run["batch"], run["optimizer"],
                                                    "none" if run["set_to_none"] else "keep",
                                                    "bf16" if run.get("amp") else "fused" if run.get("fused")
                                                    else "fe" if run.get("foreach") else "")
            if r["nnmem_peak"] != run["peak_bytes"] or r["nnmem_saved"] != run["saved_bytes"]:
                rules = [a.replace("R1x", "R1 (sums in place: ") + ")" if a.startswith("R1x") else a
                         for a in r["applied"] if a.split("x")[0] in r["decisive"]]
                table.append("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                    r["network"], run["batch"], run["optimizer"], "none" if run["set_to_none"] else "keep",
                    "bf16" if run.get("amp") else "fused" if run.get("fused") else "foreach" if run.get("foreach") else "",
                    "{:,}".format(run["peak_bytes"]), "{:,}".format(r["nnmem_peak"]), "{:+,}".format(r["nnmem_peak"] - run["peak_bytes"]),
                    "{:,}".format(run["saved_bytes"]), "{:,}".format(r["nnmem_saved"]), ", ".join(rules)))
            if (args.verbose or not good) and not args.affected:
                print("%s %s measured %13d, rules %13d (nnmem 1.13 model %13d, %+d)  saved %d vs %d  %s  %s" % (
                    "  " if good else "!!", label, run["peak_bytes"], r["peak"], r["nnmem_peak"],
                    r["nnmem_peak"] - run["peak_bytes"], run["saved_bytes"], r["saved"], "/".join(r["where"]),
                    ",".join(r["applied"])))
    if args.affected:
        print("\n".join(table))
    print("%d runs: %d exact (peak and saved bytes), %d not" % (ok + bad, ok, bad))
    sys.exit(0 if bad == 0 else 1)


if __name__ == "__main__":
    main()
