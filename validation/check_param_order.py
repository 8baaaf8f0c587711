#!/usr/bin/env python3
"""Checks that nnmem orders each validation network's trainable parameters as PyTorch's
model.parameters() does — the order the optimizer's loop visits them, which decides the
transients of a single-tensor Adam step. nnmem's order is read from the optimizer state of its
timeline (`exp_avg of NAME`, sizes compared, not names); the spec is examples/NETWORK.yaml or
the one specs.json names. A spec whose modules register in another order than forward calls
them says so with `register:` (docs/spec.md).

  /work/venv213/bin/python validation/check_param_order.py [--nnmem build/nnmem] [NETWORK ...]

Exit 1 if any network differs (the first differing parameter is named).
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from networks import NETWORKS  # noqa: E402

STATE = "optimizer state: exp_avg of "


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--nnmem", default=os.path.join(ROOT, "build", "nnmem"))
    ap.add_argument("networks", nargs="*")
    args = ap.parse_args()
    with open(os.path.join(HERE, "specs.json")) as f:
        specs = {k: v for k, v in json.load(f).items() if not k.startswith("_")}
    bad = 0
    for name, net in NETWORKS.items():
        if (args.networks and name not in args.networks) or name.endswith("_eager"):
            continue
        spec, sets = (specs[name]["spec"], specs[name]["set"]) if name in specs else ("examples/%s.yaml" % name, {})
        try:
            model = net.build()
        except Exception as e:  # a network this torch cannot build (zoo_torch2 under 1.13)
            print("%-24s not built here: %s" % (name, e))
            continue
        torch_sizes = [p.numel() for p in model.parameters() if p.requires_grad]
        cmd = [args.nnmem, "estimate", os.path.join(ROOT, spec), "--format", "json", "--optimizer", "adam",
               "--device", "cpu", "--batch", "1"]
        for k, v in sets.items():
            cmd += ["--set", "%s=%s" % (k, v)]
        out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        state = [e for e in out["timeline"] if e["tensor"].startswith(STATE)]
        sizes = [e["delta"] // 4 for e in state]   # exp_avg: float32
        if sizes == torch_sizes:
            print("%-24s same order (%d parameters)" % (name, len(sizes)))
            continue
        bad += 1
        k = next((i for i, (a, b) in enumerate(zip(sizes, torch_sizes)) if a != b), min(len(sizes), len(torch_sizes)))
        at = state[k]["tensor"][len(STATE):] if k < len(state) else "(end)"
        print("%-24s DIFFERS: %d vs %d parameters, first at #%d, nnmem's %s" % (name, len(sizes), len(torch_sizes), k, at))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
