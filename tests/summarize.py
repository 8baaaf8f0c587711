#!/usr/bin/env python3
"""Sums up Meson test logs into one closing line, "N passed, N failed".

A doctest executable counts its test cases (from its own summary line); the bad-input runner
counts its cases; any other test counts once. A test that did not finish cleanly counts as a
failure even when its output claims otherwise.
    python3 tests/summarize.py build/meson-logs/testlog.json [more logs...]
"""
import json
import re
import sys

DOCTEST = re.compile(r"test cases:\s*(\d+)\s*\|\s*(\d+) passed\s*\|\s*(\d+) failed")
PLAIN = re.compile(r"^(\d+) passed, (\d+) failed$", re.M)


def count(entry):
    out = entry.get("stdout") or ""
    ok = entry.get("result") in ("OK", "EXPECTEDFAIL")
    m = DOCTEST.search(out)
    if m:
        passed, failed = int(m.group(2)), int(m.group(3))
    else:
        matches = PLAIN.findall(out)
        passed, failed = (int(matches[-1][0]), int(matches[-1][1])) if matches else (1 if ok else 0, 0 if ok else 1)
    if not ok and failed == 0:
        failed = 1
    return passed, failed


def main(paths):
    passed = failed = 0
    for path in paths:
        try:
            lines = open(path).read().splitlines()
        except OSError:
            print("missing test log: %s" % path)
            failed += 1
            continue
        for line in lines:
            if line.strip():
                p, f = count(json.loads(line))
                passed += p
                failed += f
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
