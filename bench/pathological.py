#!/usr/bin/env python3
"""The pathological inputs of issue 16, generated into /tmp and timed with `\\time -v`.

Usage: python3 bench/pathological.py [NNMEM] [CASE ...]   (NNMEM defaults to build/nnmem)

Each case prints its command, exit code, wall and CPU time (user + system), peak resident
memory and the first line of stderr (a refusal must be a located error naming the limit).
"""
import json
import os
import re
import struct
import subprocess
import sys

OUT = "/tmp/nnmem_pathological"


def write(name, text):
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, name + ".yaml")
    with open(path, "w") as f:
        f.write(text)
    return path


def long_expression():
    # out_features: "$256+0+0+…" of 10,000 characters on a layer repeated 100,000 times.
    expr = "$256" + "+0" * ((10000 - 4) // 2)
    return write("long_expression", "name: long_expression\ninputs:\n  x: [64]\nlayers:\n"
                 f"  - {{name: fc, type: Linear, out_features: \"{expr}\", repeat: 100000}}\n"
                 "loss: cross_entropy\n")


def literal_control():
    # The same layers with `out_features: 256`: what 100,000 layers cost without the expression.
    return write("literal_control", "name: literal_control\ninputs:\n  x: [64]\nlayers:\n"
                 "  - {name: fc, type: Linear, out_features: 256, repeat: 100000}\nloss: cross_entropy\n")


def long_unknown_input():
    # 10,000 layers written out; the last reads an unknown name of 100,000 characters.
    lines = ["name: long_unknown_input", "inputs:", "  x: [64]", "layers:"]
    lines += [f"  - {{name: layer{i}, type: ReLU}}" for i in range(10000)]
    lines.append(f"  - {{name: last, type: ReLU, inputs: [{'a' * 100000}]}}")
    return write("long_unknown_input", "\n".join(lines) + "\n")


def long_name():
    # A 1,000-character layer name repeated 100,000 times.
    return write("long_name", "name: long_name\ninputs:\n  x: [64]\nlayers:\n"
                 f"  - {{name: {'n' * 1000}, type: Linear, out_features: 64, repeat: 100000}}\n"
                 "loss: cross_entropy\n")


def residual():
    # A 99,997-layer residual MLP written with `repeat` (bench_estimate's deep_spec, within the default --max-layers).
    return write("residual_100k", "name: deep_mlp\ninputs:\n  x: [1024]\nblocks:\n  Res:\n    layers:\n"
                 "      - {name: fc1, type: Linear, out_features: 1024}\n"
                 "      - {name: act, type: GELU}\n"
                 "      - {name: fc2, type: Linear, out_features: 1024}\n"
                 "      - {name: add, type: Add, inputs: [fc2, in]}\n"
                 "layers:\n  - {name: body, block: Res, repeat: 24999}\n"
                 "  - {name: head, type: Linear, out_features: 10}\nloss: cross_entropy\n")


def chain_10k():
    # A written-out 10,000-layer chain: mostly YAML to read (bench/README.md counts its instructions).
    lines = ["name: chain", "inputs:", "  x: [64]", "layers:"]
    lines += [f"  - {{name: l{i}, type: Linear, out_features: 64}}" for i in range(10000)]
    return write("chain_10k", "\n".join(lines + ["loss: cross_entropy"]) + "\n")


def ultralytics_keys():
    # An Ultralytics model file (backbone: and head:, under its 1 MiB cap) of 60,000 keys.
    lines = ["backbone:", "  - [-1, 1, Conv, [64, 3, 2]]", "head:", "  - [-1, 1, Conv, [64, 3, 2]]", "extra:"]
    lines += [f"  k{i}: {i}" for i in range(60000)]
    return write("ultralytics_keys", "\n".join(lines) + "\n")


def many_documents():
    # A spec followed by 2.5 million one-line YAML documents (15 MB, under the 16 MiB limit).
    return write("many_documents", "a: 1\n" + "--- x\n" * 2500000)


def huge_expression():
    # One expression of 14 MB, constant: `$1+1+1+…`.
    return write("huge_expression", "inputs:\n  x: [8]\nlayers:\n"
                 "  - {type: Linear, out_features: \"$1" + "+1" * 7000000 + "\"}\n")


def huge_variable_expression():
    # One expression of 9 MB reading a variable 4.6 million times: `$w+w+w+…`.
    return write("huge_variable_expression", "variables:\n  w: 1\ninputs:\n  x: [8]\nlayers:\n"
                 "  - {type: Linear, out_features: \"$w" + "+w" * 4600000 + "\"}\n")


def many_outputs():
    # A Chunk of 10,000 outputs, each read by a ReLU, then concatenated: the table's shapes cell
    # of 10,000 shapes once padded every other row to its width (1.3 GiB resident, 700 MB out).
    n = 10000
    lines = ["name: many_outputs", "inputs:", f"  x: [{2 * n}]", "layers:",
             f"  - {{name: c, type: Chunk, chunks: {n}, dim: -1}}"]
    lines += [f"  - {{name: r{i}, type: ReLU, inputs: [{'c' if i == 0 else f'c:{i}'}]}}" for i in range(n)]
    lines.append("  - {name: cat, type: Concat, dim: -1, inputs: [" + ", ".join(f"r{i}" for i in range(n)) + "]}")
    return write("many_outputs", "\n".join(lines + ["  - {name: h, type: Linear, out_features: 4}",
                                                     "loss: cross_entropy"]) + "\n")


def one_long_name():
    # One 200,000-character layer name among 5,000 short ones (within the names' bound): every
    # row was padded to it, a table of 1 GB.
    lines = ["name: one_long_name", "inputs:", "  x: [8]", "layers:", f"  - {{name: {'n' * 200000}, type: Linear, out_features: 8}}"]
    lines += [f"  - {{name: r{i}, type: ReLU}}" for i in range(5000)]
    return write("one_long_name", "\n".join(lines + ["loss: cross_entropy"]) + "\n")


def never_settling():
    # GPT-2 (the bundled example) in a cache that never settles: max_split_size 64 MiB under
    # bfloat16 autocast with checkpointed blocks; at batch 42 the replay grows to 1.5 million
    # segments by its 4,000-iteration cap. The fit for 40 GiB estimates that batch in full.
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "gpt2.yaml")


def never_settling_off_curve():
    # bow_sparse (a sparse gradient: fit searches it by full estimates) in a cache that never
    # settles under SGD with expandable segments and max_split_size 64 MiB: 4,096 batches checked.
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "bow_sparse.yaml")


def many_tensors():
    # A safetensors header of 100,000 one-element tensors (8.9 MB of JSON): read as one
    # ordered_json, whose object finds each key it inserts by a linear search, and each key's
    # offset found again from the header's start, it took 46 s at 40,000 (4x per doubling).
    n = 100000
    header = json.dumps({f"layer{i}.weight": {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]}
                         for i in range(n)}).encode()
    os.makedirs(OUT, exist_ok=True)
    path = os.path.join(OUT, "many_tensors.safetensors")
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + bytes(4 * n))
    return path


def many_losses():
    # 20,000 Linear heads, each with its own loss: each loss's output was searched for in the
    # outputs' list twice, and the terms' common dtype found again per term (5.4 s). On the CPU
    # device: on CUDA its replay runs to the 20-million-event cap, unsettled (about 1 s).
    n = 20000
    lines = ["name: many_losses", "inputs:", "  x: [8]", "layers:"]
    lines += [f"  - {{name: h{i}, type: Linear, input: x, out_features: 2}}" for i in range(n)]
    lines += ["loss:"] + [f"  - {{output: h{i}, type: mse}}" for i in range(n)]
    return write("many_losses", "\n".join(lines) + "\n")


def many_registered():
    # A model-level `register:` list of 20,000 members (in the reverse of the layers' order):
    # each member was searched for in the layers' members, and ranked by a search of the list
    # (1.4 s on the CPU device, quadratic).
    n = 20000
    lines = ["name: many_registered", "inputs:", "  x: [8]", "layers:"]
    lines += [f"  - {{name: h{i}, type: Linear, out_features: 8}}" for i in range(n)]
    lines += ["register: [" + ", ".join(f"h{i}" for i in reversed(range(n))) + "]", "loss: mean"]
    return write("many_registered", "\n".join(lines) + "\n")


def sweep_grid():
    # A sweep of two lists of 10,000 values each, 10^8 points: their grid was held (3.4 GB, 10 s,
    # then out of memory under the 4 GiB cap) before it was refused. The spec is the bundled MLP.
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "mlp.yaml")


SWEEP_GRID = ["--vary", "batch=" + ",".join(str(i) for i in range(1, 10001)),
              "--vary", "hidden=" + ",".join(str(i) for i in range(8, 10008))]

NEVER_SETTLING = ["--loop", "plain", "--keep-grads", "--max-split-size", "64", "--amp", "bfloat16",
                  "--checkpoint", "blocks"]

CASES = {
    "long_expression": (long_expression, [["check"], ["estimate"]]),
    "literal_control": (literal_control, [["check"]]),
    "long_unknown_input": (long_unknown_input, [["check"]]),
    "long_name": (long_name, [["check"], ["estimate"], ["estimate", "--format", "json"]]),
    "residual_100k": (residual, [["check"]]),
    "chain_10k": (chain_10k, [["check"]]),
    "ultralytics_keys": (ultralytics_keys, [["check"]]),
    "many_documents": (many_documents, [["check"]]),
    "huge_expression": (huge_expression, [["check"]]),
    "huge_variable_expression": (huge_variable_expression, [["check"]]),
    "many_outputs": (many_outputs, [["estimate"]]),
    "one_long_name": (one_long_name, [["estimate"]]),
    "many_tensors": (many_tensors, [["inspect"]]),
    "many_losses": (many_losses, [["estimate", "--device", "cpu"]]),
    "many_registered": (many_registered, [["estimate", "--device", "cpu"]]),
    "sweep_grid": (sweep_grid, [["sweep"] + SWEEP_GRID]),
    "never_settling": (never_settling, [["estimate", "--batch", "42"] + NEVER_SETTLING,
                                        ["fit", "--budget", "40GiB"] + NEVER_SETTLING]),
    "never_settling_off_curve": (never_settling_off_curve, [["fit", "--budget", "8GiB", "--optimizer", "sgd",
                                                             "--expandable-segments", "--max-split-size", "64"]]),
}


# A run is capped at 4 GiB of address space (the machine is shared): one that needs more fails
# with an out-of-memory error, reported as such.
CAP_BYTES = 4 << 30


def shown(args):
    """The arguments as a command line shows them, each over 60 characters cut to its ends (a
    --vary list of 10,000 values)."""
    return " ".join(a if len(a) <= 60 else f"{a[:24]}…{a[-12:]} ({len(a):,} characters)" for a in args)


def measure(nnmem, args):
    cmd = ["prlimit", f"--as={CAP_BYTES}", "/usr/bin/time", "-v", nnmem] + args
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err = p.stderr
    def field(label):
        m = re.search(re.escape(label) + r": (.*)", err)
        return m.group(1).strip() if m else "?"
    user, system = float(field("User time (seconds)")), float(field("System time (seconds)"))
    rss_mib = int(field("Maximum resident set size (kbytes)")) / 1024
    status = int(field("Exit status"))
    first = next((l for l in err.splitlines() if not l.startswith("\t") and "Command being timed" not in l), "")
    return field("Elapsed (wall clock) time (h:mm:ss or m:ss)"), user + system, rss_mib, status, first[:160]


def main():
    argv = sys.argv[1:]
    nnmem = argv.pop(0) if argv and not argv[0] in CASES else "build/nnmem"
    for name in argv or CASES:
        make, runs = CASES[name]
        path = make()
        for args in runs:
            wall, cpu, rss, status, first = measure(nnmem, args[:1] + [path] + args[1:])
            print(f"{name}: nnmem {shown(args[:1] + [path] + args[1:])}\n"
                  f"    exit {status}, wall {wall}, CPU {cpu:.2f} s, {rss:.0f} MiB{'; ' + first if first else ''}",
                  flush=True)


if __name__ == "__main__":
    main()
