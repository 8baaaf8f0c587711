#!/usr/bin/python3
"""Regenerate validation/fixtures/NETWORK.json: for every network, batch size,
optimizer (sgd, momentum, adam) and zero_grad mode (set_to_none True/False),
run measure.py in a fresh process and collect its JSON; for the networks in
AMP_NETWORKS also SGD and Adam under CPU autocast (bfloat16), and for those in
FOREACH_NETWORKS momentum and Adam with foreach=True, at their first batch.

  /usr/bin/python3 validation/run_all.py [--only resnet18,mlp] [--skip-done] [--jobs N]
  /usr/bin/python3 validation/run_all.py --extra-only   (redo only the autocast and foreach runs)
  /usr/bin/python3 validation/run_all.py --summary     (table of headline figures)
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from networks import NETWORKS  # noqa: E402

OPTIMIZERS = ["sgd", "momentum", "adam"]
MODES = [True, False]           # zero_grad(set_to_none=...)
AMP_NETWORKS = ["tf_mnist_cnn", "lenet5", "bn_relu_cnn", "mlp", "residual_net", "concat_net",
                "frozen_backbone", "resnet18", "zoo_mlp", "efficientnet_b0"]
# (CPU bfloat16 lacks hardtanh's backward in 1.13: ReLU6, Hardtanh; so not zoo_net, zoo_seq)
AMP_OPTIMIZERS = ["sgd", "adam"]
# The optimizers' multi-tensor implementation (foreach=True), at the first batch.
FOREACH_NETWORKS = ["tf_mnist_cnn", "mlp", "bn_relu_cnn", "resnet18", "efficientnet_b0"]
FOREACH_OPTIMIZERS = ["momentum", "adam"]
# Per-run fields that depend on the batch only: stored once per batch.
PER_BATCH = ("layers", "output_shape")
# Fields that vary from run to run (timing): not stored.
VOLATILE = ("wall_seconds_measured",)


def _flat(o):
    """True for numbers, strings, None and (nested) lists of those."""
    return not isinstance(o, dict) and (not isinstance(o, list) or all(map(_flat, o)))


def dumps(o, ind=0):
    """Indented JSON with sorted keys; lists without dicts (shapes, op
    names) stay on one line, so fixtures are readable and diffs small."""
    if _flat(o):
        return json.dumps(o)
    pad = " " * (ind + 1)
    if isinstance(o, dict):
        items = [f"{pad}{json.dumps(k)}: {dumps(o[k], ind + 1)}" for k in sorted(o)]
        return "{\n" + ",\n".join(items) + "\n" + " " * ind + "}" if items else "{}"
    return "[\n" + ",\n".join(pad + dumps(v, ind + 1) for v in o) + "\n" + " " * ind + "]"


def measure(network, batch, optimizer, set_to_none, amp=None, foreach=False):
    cmd = [sys.executable, os.path.join(HERE, "measure.py"), network, "--batch", str(batch),
           "--optimizer", optimizer, "--set-to-none" if set_to_none else "--keep-grads"]
    if amp:
        cmd += ["--amp", amp]
    if foreach:
        cmd.append("--foreach")
    t = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{p.stderr}")
    return json.loads(p.stdout), time.time() - t


def fixture_path(network):
    return os.path.join(HERE, "fixtures", network + ".json")


def is_done(network):
    try:
        with open(fixture_path(network)) as f:
            fx = json.load(f)
    except (OSError, ValueError):
        return False
    return len(fx.get("runs", [])) == len(combos(network))


def combos(network, extra_only=False):
    """(batch, optimizer, set_to_none, amp, foreach) of every run of a network."""
    net = NETWORKS[network]
    plain = [] if extra_only else [(b, o, s, None, False) for b in net.batches for o in OPTIMIZERS for s in MODES]
    amp = [(net.batches[0], o, True, "bfloat16", False) for o in AMP_OPTIMIZERS] if network in AMP_NETWORKS else []
    foreach = [(net.batches[0], o, True, None, True) for o in FOREACH_OPTIMIZERS] if network in FOREACH_NETWORKS else []
    return plain + amp + foreach


def run_network(network, jobs, extra_only=False):
    net = NETWORKS[network]
    t0 = time.time()
    runs, per_batch = [], {}
    if extra_only:  # keep the plain runs of the existing fixture
        with open(fixture_path(network)) as f:
            old = json.load(f)
        runs = [r for r in old["runs"] if not r.get("amp") and not r.get("foreach")]
        per_batch = old["per_batch"]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [(c, pool.submit(measure, network, *c)) for c in combos(network, extra_only)]
        for (b, o, s, a, f), fut in futures:
            r, dt = fut.result()
            print(f"  {network:18s} batch {b:3d} {o:8s} set_to_none={s!s:5s} amp={a!s:8s} foreach={f!s:5s} "
                  f"peak {r['peak_bytes']:>13,d} B ({r['peak_phase']})  {dt:5.1f} s", flush=True)
            layers = {k: r.pop(k) for k in PER_BATCH}
            if not a:
                per_batch[str(b)] = layers
            for k in VOLATILE:
                r.pop(k, None)
            runs.append(r)
    fx = {"network": network, "torch_version": runs[0]["torch_version"],
          "input_shape": list(net.input_shape), "input_dtype": net.input_dtype,
          "loss": net.loss, "batches": net.batches, "per_batch": per_batch,
          "runs": runs}
    os.makedirs(os.path.dirname(fixture_path(network)), exist_ok=True)
    with open(fixture_path(network), "w") as f:
        f.write(dumps(fx) + "\n")
    print(f"{network}: {len(runs)} runs in {time.time() - t0:.1f} s -> {fixture_path(network)}",
          flush=True)


def summary():
    """Markdown table of the headline figures of the existing fixtures."""
    print("| network | batch | param_bytes | saved_bytes | peak sgd | peak adam | peak phase sgd/adam |")
    print("|---|---|---|---|---|---|---|")
    for n in NETWORKS:
        try:
            with open(fixture_path(n)) as f:
                runs = json.load(f)["runs"]
        except OSError:
            continue
        for b in NETWORKS[n].batches:
            r = {x["optimizer"]: x for x in runs
             if x["batch"] == b and x["set_to_none"] and not x.get("amp") and not x.get("foreach")}
            s, a = r["sgd"], r["adam"]
            print(f"| {n} | {b} | {s['param_bytes']:,} | {s['saved_bytes']:,} | {s['peak_bytes']:,} | "
                  f"{a['peak_bytes']:,} | {s['peak_phase']}/{a['peak_phase']} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--only", help="comma-separated network names")
    ap.add_argument("--skip-done", action="store_true", help="skip networks whose fixture is complete")
    ap.add_argument("--jobs", type=int, default=1, help="measurements run in parallel (default 1)")
    ap.add_argument("--summary", action="store_true", help="print a table of the fixtures and exit")
    ap.add_argument("--extra-only", action="store_true",
                    help="redo only the autocast and foreach runs of existing fixtures")
    args = ap.parse_args()
    if args.summary:
        return summary()
    names = list(NETWORKS)
    if args.only:
        wanted = args.only.split(",")
        unknown = set(wanted) - set(NETWORKS)
        if unknown:
            ap.error(f"unknown network(s): {', '.join(sorted(unknown))}")
        names = [n for n in names if n in wanted]
    t0 = time.time()
    for n in names:
        if args.extra_only:
            if n in AMP_NETWORKS or n in FOREACH_NETWORKS:
                run_network(n, args.jobs, extra_only=True)
            continue
        if args.skip_done and is_done(n):
            print(f"{n}: done, skipped", flush=True)
            continue
        run_network(n, args.jobs)
    print(f"all done in {time.time() - t0:.1f} s", flush=True)


if __name__ == "__main__":
    main()
