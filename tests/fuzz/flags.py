#!/usr/bin/env python3
"""The flag fuzzer: `nnmem estimate|check|fit` on every example with a random subset of the
flag groups below, for SECONDS. Its oracle: exit 0 or 2 with an answer, or 1 with a located
error or a usage message; never an internal error, a crash or a timeout; and for an estimate,
a CUDA replay that settles or says it is still growing, whose max_memory_allocated() is not
below the step's peak. Prints each distinct finding once, then "runs N bad N".

    python3 tests/fuzz/flags.py NNMEM [SEED [SECONDS]]

Fuzz a copy of the binary (cp build/nnmem /tmp/nnmem-fuzz): a rebuild under it changes what runs."""
import random, subprocess, sys, os, re, glob, time
NN = sys.argv[1]
random.seed(int(sys.argv[2]) if len(sys.argv) > 2 else 0)
ex = sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "*.yaml")))
groups = [
  lambda: ["--torch", random.choice(["2.13", "1.13"])],
  lambda: ["--device", random.choice(["cpu", "cuda"])],
  lambda: ["--dtype", random.choice(["float32", "float16", "bfloat16", "float64"])],
  lambda: ["--amp", random.choice(["float16", "bfloat16"])],
  lambda: ["--optimizer", random.choice(["none","sgd","momentum","nesterov","adam","adamw","amsgrad","rmsprop","adagrad","adam8bit"])],
  lambda: ["--mode", random.choice(["train", "eval"])],
  lambda: ["--batch", str(random.choice([1, 2, 3, 7, 16]))],
  lambda: ["--keep-grads"], lambda: ["--foreach"], lambda: ["--fused"],
  lambda: ["--loop", random.choice(["plain", "function"])],
  lambda: ["--checkpoint", random.choice(["none", "blocks", "every:2", "every:3", "selective"])],
  lambda: ["--checkpoint-impl", random.choice(["non-reentrant", "reentrant"])],
  lambda: ["--grad-accum", str(random.choice([2, 3]))],
  lambda: ["--gpus", str(random.choice([2, 4]))],
  lambda: ["--zero", str(random.choice([1, 2, 3]))],
  lambda: ["--fsdp", random.choice(["full", "shard_grad_op", "hybrid", "no_shard"])],
  lambda: ["--tp", str(random.choice([2, 4]))],
  lambda: ["--sequence-parallel"],
  lambda: ["--pp", str(random.choice([2, 3]))],
  lambda: ["--expandable-segments"],
  lambda: ["--max-split-size", "64"],
  lambda: ["--roundup-power2-divisions", "4"],
  lambda: ["--device-memory", random.choice(["1GiB", "100MiB", "40GiB"])],
  lambda: ["--format", random.choice(["table", "json", "csv", "markdown"])],
  lambda: ["--loss", random.choice(["cross_entropy","mse","mean","bce_with_logits","nll","l1","smooth_l1","huber"])],
  lambda: ["--offload", random.choice(["optimizer", "params"])],
  lambda: ["--convention", random.choice(["torchsummary", "deepspeed"])],
  lambda: ["--summary"],
]
located = re.compile(r"^[^\n]*:\d+:\d+: error: ", re.M)
bad = 0; n = 0; t0 = time.time(); limit = float(sys.argv[3]) if len(sys.argv) > 3 else 600
seen = set()
while time.time() - t0 < limit:
    spec = random.choice(ex)
    flags = []
    for g in random.sample(groups, random.randint(1, 7)):
        flags += g()
    cmd = [NN, random.choice(["estimate", "estimate", "check", "fit"]), spec] + flags
    if cmd[1] == "fit": cmd += ["--budget", "8GiB"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        print("TIMEOUT", " ".join(cmd), flush=True); bad += 1; continue
    n += 1
    err = p.stderr
    ok = p.returncode in (0, 2) or (p.returncode == 1 and (located.search(err) or err.startswith("nnmem: error:") or "Run with --help" in err or err.startswith("--")))
    if ok and ("internal" in err.lower() or "logic_error" in err or "what():" in err):
        ok = False
    if ok and p.returncode == 0 and cmd[1] == "estimate" and "--format" not in cmd and "--convention" not in cmd and "--device" not in flags[:0]:
        q = subprocess.run(cmd + ["--format", "json", "--no-timeline"], capture_output=True, text=True, timeout=30)
        if q.returncode == 0 and '"totals"' in q.stdout:
            import json
            j = json.loads(q.stdout)
            if not isinstance(j, dict) or "totals" not in j: j = {"totals": {"peak_bytes": 0}}
            c = j.get("cuda_allocator"); t = j["totals"]
            if c and (not c["converged"] and not c["growing"] and c.get("out_of_memory") is None):
                ok = False; err = "UNCONVERGED not growing " + str({k: c[k] for k in ("iterations", "max_allocated_bytes")}) + " peak " + str(t["peak_bytes"])
            elif c and c.get("out_of_memory") is None and c["max_allocated_bytes"] < t["peak_bytes"] * 0.99:
                ok = False; err = "ALLOCATED BELOW PEAK " + str(c["max_allocated_bytes"]) + " < " + str(t["peak_bytes"])
    if not ok:
        key = (os.path.basename(spec), err.strip().splitlines()[0][:120] if err.strip() else str(p.returncode))
        if key in seen: continue
        seen.add(key); bad += 1
        print("BAD rc=%d" % p.returncode, " ".join(cmd[1:]), "\n   ", err.strip()[:400].replace("\n", "\n    "), flush=True)
print("runs", n, "bad", bad)
