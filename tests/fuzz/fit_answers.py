#!/usr/bin/env python3
"""fit's answers checked: `nnmem fit` on a random example, budget and subset of the flag groups
below, then `nnmem estimate --budget` at the answer (it must fit: exit 0) and at the batch
after it (it must not: exit 2). Prints each disagreement, then "runs N bad N".

    python3 tests/fuzz/fit_answers.py NNMEM SEED SECONDS

Fuzz a copy of the binary (cp build/nnmem /tmp/nnmem-fuzz)."""
import random, subprocess, sys, os, re, glob, time
NN = sys.argv[1]
random.seed(int(sys.argv[2])); limit = float(sys.argv[3])
ex = sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "*.yaml")))
groups = [
  lambda: ["--torch", random.choice(["2.13", "1.13"])],
  lambda: ["--device", random.choice(["cpu", "cuda"])],
  lambda: ["--dtype", random.choice(["float32", "bfloat16"])],
  lambda: ["--amp", "bfloat16"],
  lambda: ["--optimizer", random.choice(["sgd","momentum","adam","adamw","adagrad","adam8bit","none"])],
  lambda: ["--keep-grads"], lambda: ["--foreach"],
  lambda: ["--loop", random.choice(["plain", "function"])],
  lambda: ["--checkpoint", random.choice(["blocks", "every:2"])],
  lambda: ["--grad-accum", str(random.choice([2, 3]))],
  lambda: ["--gpus", str(random.choice([2, 4]))],
  lambda: ["--zero", str(random.choice([1, 2, 3]))],
  lambda: ["--expandable-segments"],
  lambda: ["--max-split-size", "64"],
  lambda: ["--roundup-power2-divisions", "4"],
  lambda: ["--overhead", "300MiB"],
  lambda: ["--loss", random.choice(["mse","l1","cross_entropy","huber"])],
]
t0 = time.time(); n = 0; bad = 0
while time.time() - t0 < limit:
    spec = random.choice(ex)
    flags = []
    for g in random.sample(groups, random.randint(0, 5)): flags += g()
    budget = random.choice(["16MiB", "100MiB", "1GiB", "8GiB", "40GiB"])
    try:
        p = subprocess.run([NN, "fit", spec, "--budget", budget] + flags, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        print("TIMEOUT fit", spec, budget, " ".join(flags), flush=True); continue
    n += 1
    m = re.search(r"Largest batch that fits in [^:]*: ([\d,]+)", p.stdout)
    if p.returncode != 0 or not m: continue
    b = int(m.group(1).replace(",", ""))
    bisected = "bisection" in p.stdout
    mult = 1
    e1 = subprocess.run([NN, "estimate", spec, "--batch", str(b), "--budget", budget, "--summary"] + flags, capture_output=True, text=True, timeout=120)
    e2 = subprocess.run([NN, "estimate", spec, "--batch", str(b + 1), "--budget", budget, "--summary"] + flags, capture_output=True, text=True, timeout=120)
    if e1.returncode != 0 or e2.returncode not in (1, 2):
        bad += 1
        print("BAD fit says", b, "fits in", budget, ":", spec, " ".join(flags), "| estimate rc at b:", e1.returncode, "at b+1:", e2.returncode, e1.stderr.strip()[:200], flush=True)
print("runs", n, "bad", bad)
