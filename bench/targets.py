#!/usr/bin/env python3
"""Issue 16's targets, each measured on this machine and judged met or not, as one Markdown table.

Usage: python3 bench/targets.py [BUILD_DIR] [--runs N]   (BUILD_DIR defaults to build; N to 3)

Run it from the checkout after `ninja -C build`, with nothing else running: each figure is the
best of N runs (times in CPU seconds, user + system, of the child; wall beside it), and the
machine's load average is printed with the table. The targets are the issue's:

- ResNet-50 `estimate` as a whole process within 1.5x the floor (bench/floor.cpp, a process
  linked as nnmem is), both run alternately, the median CPU time of 100 runs each
  (bench/vs_torchinfo.sh times their wall with hyperfine); in process (the
  library's estimate of a read spec, bench_estimate) under 0.5 ms;
- the 100,000-layer residual spec (bench/pathological.py's residual_100k): `estimate` under
  0.5 s and 100 MiB, `--format json` under 1 s;
- a written-out 100,000-layer chain (bench/scaling.sh's chain) under 2 s;
- every pathological input (bench/pathological.py) under 1 s and 100 MiB, or refused with a
  located error (`file:line:column: error:`) within them.
"""
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pathological  # noqa: E402  (the inputs, generated into /tmp/nnmem_pathological)

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
LOCATED = re.compile(r"^\S+:\d+:\d+: error: ")


def cpu_seconds(cmd):
    """The child's CPU seconds (user + system), to the microsecond (/usr/bin/time gives hundredths)."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return usage.ru_utime + usage.ru_stime


def best_of(nnmem, args, runs):
    """pathological.measure's figures of the run with the least CPU time; the peak is the largest."""
    results = [pathological.measure(nnmem, args) for _ in range(runs)]
    wall, cpu, _, status, first = min(results, key=lambda r: r[1])
    return wall, cpu, max(r[2] for r in results), status, first


def chain_100k():
    lines = ["name: chain", "inputs:", "  x: [64]", "layers:"]
    lines += ["  - {name: l%d, type: %s}" % (i, "Linear, out_features: 64" if i % 2 == 0 else "ReLU")
              for i in range(99999)]
    return pathological.write("chain_100k", "\n".join(lines + ["  - {name: head, type: Linear, out_features: 10}",
                                                               "loss: cross_entropy"]) + "\n")


def whole_process(build, runs=100):
    """Median CPU seconds (the child's user + system: its exec and loading included, this script's
    fork not) of the floor and of nnmem's ResNet-50 estimate, run alternately."""
    spec = os.path.join(ROOT, "examples", "resnet50.yaml")
    floor, nnmem = [os.path.join(build, "bench", "floor")], [os.path.join(build, "nnmem"), "estimate", spec]
    for cmd in (floor, nnmem):  # warm the page cache
        cpu_seconds(cmd)
    times = {"floor": [], "nnmem": []}
    for _ in range(runs):
        times["floor"].append(cpu_seconds(floor))
        times["nnmem"].append(cpu_seconds(nnmem))
    return statistics.median(times["floor"]), statistics.median(times["nnmem"])


def in_process(build, runs):
    """bench_estimate's best times (ms) for ResNet-50 over `runs` runs of it: the estimate of a read
    spec, and load + estimate."""
    cmd = [os.path.join(build, "bench", "bench_estimate"), os.path.join(ROOT, "examples", "resnet50.yaml")]
    outs = [subprocess.run(cmd, capture_output=True, text=True, check=True).stdout for _ in range(runs)]
    def best(label):
        found = [float(m.group(1)) for out in outs for m in [re.search(re.escape(label) + r"\s+best\s+([\d.]+) ms", out)] if m]
        return min(found) if found else float("nan")
    return best("resnet50: estimate of a read spec"), best("resnet50: load + estimate, no timeline")


def main():
    argv = sys.argv[1:]
    runs = 3
    if "--runs" in argv:
        i = argv.index("--runs")
        runs = int(argv[i + 1])
        del argv[i:i + 2]
    build = argv[0] if argv else os.path.join(ROOT, "build")
    nnmem = os.path.join(build, "nnmem")
    rows = []  # (target, command, measured, met)

    def timed(target, args, cpu_limit, mib_limit=None, refusal_ok=False):
        wall, cpu, mib, code, first = best_of(nnmem, args, runs)
        located = code == 1 and LOCATED.match(first) is not None
        ok = (code == 0 or (refusal_ok and located)) and cpu < cpu_limit and (mib_limit is None or mib < mib_limit)
        what = f"{cpu:.2f} s CPU ({wall} wall), {mib:.0f} MiB, exit {code}" + (", located error" if located else "")
        rows.append((target, "nnmem " + pathological.shown(os.path.relpath(a, ROOT) if a.startswith(ROOT + os.sep) else a for a in args), what, ok))

    floor, whole = whole_process(build)
    rows.append(("ResNet-50 whole process within 1.5x the floor", "nnmem estimate examples/resnet50.yaml vs bench/floor",
                 f"{whole * 1e3:.1f} ms against {floor * 1e3:.1f} ms CPU: {whole / floor:.2f}x (medians of 100)",
                 whole < 1.5 * floor))
    read, loaded = in_process(build, runs)
    rows.append(("ResNet-50 in process under 0.5 ms", "bench/bench_estimate examples/resnet50.yaml",
                 f"{read:.3f} ms the estimate of a read spec, {loaded:.3f} ms with the load (best of {runs} runs of it)", read < 0.5))

    residual = pathological.residual()
    timed("100,000-layer residual: estimate under 0.5 s, 100 MiB", ["estimate", residual], 0.5, 100)
    timed("100,000-layer residual: JSON under 1 s", ["estimate", residual, "--format", "json"], 1.0)
    timed("written-out 100,000-layer chain under 2 s", ["estimate", chain_100k()], 2.0)
    for name, (make, cases) in pathological.CASES.items():
        path = make()
        for args in cases:
            timed(f"pathological `{name}` under 1 s and 100 MiB", args[:1] + [path] + args[1:], 1.0, 100, refusal_ok=True)

    print(f"load average {os.getloadavg()[0]:.2f}, best of {runs} runs\n")
    print("| target | command | measured | met |\n|---|---|---|---|")
    for target, cmd, what, ok in rows:
        print(f"| {target} | `{cmd}` | {what} | {'yes' if ok else '**no**'} |")


if __name__ == "__main__":
    main()
