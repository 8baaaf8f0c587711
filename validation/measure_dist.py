#!/usr/bin/python3
"""One data-parallel measurement: measure.py in N processes on this machine (as torchrun starts
them; gloo on the CPU), each rank measuring its own step with its own profiler; prints one JSON object, one
rank's measurement with every rank's headline figures in `ranks`: the first clean rank's (see clean()).

  PYTHON validation/measure_dist.py NETWORK --nproc N --parallel ddp|fsdp-full|... [measure.py's options]

PYTHON: /work/venv213/bin/python (torch 2.13: DDP and FSDP) or /usr/bin/python3 (torch 1.13:
DDP; its FSDP needs CUDA). See README.md, "Data parallelism"."""
import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
# What each rank's entry in `ranks` keeps: the figures that may differ between ranks.
RANK_FIELDS = ("rank", "peak_bytes", "peak_phase", "peak_module", "iter_start_bytes", "iter_end_bytes", "param_bytes",
               "grad_bytes", "optimizer_state_bytes", "saved_bytes")


def clean(ranks):
    """The first rank whose measured iteration ends where it started, from the lowest start: gloo
    holds a collective's output until its work object dies, on a thread the profiler does not
    see, and now and then on one rank past the iteration (FSDP's all-gather and reduce-scatter
    buffers). Every rank holds the same (padded) shards, so a clean rank's figures are every
    rank's. Rank 0 if none is clean."""
    low = min(r["iter_start_bytes"] for r in ranks)
    for r in ranks:
        if r["iter_start_bytes"] == low and r["iter_end_bytes"] == low:
            return r
    return ranks[0]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("network")
    ap.add_argument("--nproc", type=int, default=2, help="processes (ranks) on this machine (default 2)")
    args, rest = ap.parse_known_args()
    with tempfile.TemporaryDirectory() as out:
        # The processes are started here, as torchrun would (its environment variables): torch
        # 1.13's torchrun fails under Python 3.11.
        cmd = [sys.executable, os.path.join(HERE, "measure.py"), args.network,
               "--out", os.path.join(out, "rank{rank}.json")] + rest
        port = str(free_port())
        procs = []
        for r in range(args.nproc):
            env = dict(os.environ, OMP_NUM_THREADS="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
                       RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(args.nproc),
                       LOCAL_WORLD_SIZE=str(args.nproc))
            procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
        errors = [p.communicate()[1] for p in procs]
        if any(p.returncode != 0 for p in procs):
            sys.exit("%s failed:\n%s" % (" ".join(cmd), "\n".join(e[-3000:] for e in errors)))
        ranks = []
        for r in range(args.nproc):
            with open(os.path.join(out, "rank%d.json" % r)) as f:
                ranks.append(json.load(f))
    res = dict(clean(ranks))
    res["ranks"] = [{k: r[k] for k in RANK_FIELDS} for r in ranks]
    print(json.dumps(res, sort_keys=True))


if __name__ == "__main__":
    main()
