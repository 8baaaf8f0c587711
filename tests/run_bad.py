#!/usr/bin/env python3
"""The bad-input corpus runner.

    python3 tests/run_bad.py NNMEM_BINARY CORPUS_DIR [--update] [-k PATTERN] [-v]

nnmem promises that bad input gets a clear, located error and exit code 1: never a crash, a
hang, or a silently wrong number. Every case here is a bad input; the runner checks that nnmem
rejects it with exactly the expected message.

A case on disk is NAME.expected (the exact expected stderr) beside
  NAME.yaml   the spec (may be absent when NAME.args does not mention {spec}), and optionally
  NAME.args   one line: the command line after the binary, {spec} standing for the spec's path
              (default: "estimate {spec}").
nnmem runs with the repository root as its working directory and gets the spec as a relative
path (tests/bad/NAME.yaml), so the expected messages name files as a user would see them.

Cases that need bytes a text editor cannot hold (non-UTF-8, NUL bytes, an enormous file, an
alias bomb, very deep nesting), and specs that are no regular file (a directory, a FIFO), are
generated into a temporary directory from GENERATED (tests/bad_generated.py); their paths appear as
CORPUS/NAME.yaml in the expected messages.

A case fails when nnmem exits with anything but 1, is killed by a signal, runs longer than
10 seconds or grows beyond 2 GiB of memory, prints anything on stdout, prints a sign of a
crash ("terminate", "Assertion", "Segmentation", "AddressSanitizer", ...), or when stderr
differs from the expected text. Each failure is printed with a diff; the last line is always
"N passed, N failed", and the exit status is non-zero if any case failed.

Fuzz regressions: every file in tests/fuzz/regressions/ (inputs that once crashed, hung or
leaked in tests/fuzz/fuzz_spec) is also replayed through "estimate" and "check". They have no
expected text: each run must exit with 0, or with 1 and a located "FILE:LINE:COLUMN: error:"
first line on stderr; a signal, another exit code, a timeout, too much memory or a sign of a
crash on stdout or stderr fails it. They count in the "N passed, N failed" line (one case per
file and subcommand); --regressions DIR replays another directory, --regressions '' none.

--update rewrites the .expected files from the actual stderr, for the lead engineer after a
deliberate change of messages. It never records a crash, a timeout or a wrong exit code, and it
cannot rewrite GENERATED: for those it prints the new text to paste. Do not use it to make a
bad message pass: a case whose message is wrong should fail until nnmem is fixed.

Plain Python 3 standard library (Debian 12's python3).
"""

import argparse
import difflib
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time

from bad_generated import DEFAULT_ARGS, GENERATED

TIMEOUT_SECONDS = 10.0
MAX_RSS_BYTES = 2 << 30
# Whole words, so that a message about an "unterminated string" is not taken for a crash.
CRASH_SIGNS = re.compile(r"\b(terminate|Assertion|Segmentation|AddressSanitizer|LeakSanitizer|"
                         r"UndefinedBehaviorSanitizer|runtime error|core dumped|std::bad_alloc)\b")




# --------------------------------------------------------------------------------------------

class Case:
    def __init__(self, name, argv, expected, expected_path=None, display_dir=None, absolute_dir=None):
        self.name = name
        self.argv = argv                    # arguments after the binary
        self.expected = expected
        self.expected_path = expected_path  # None for generated cases
        self.display_dir = display_dir      # how the corpus directory appears in messages
        self.absolute_dir = absolute_dir    # replaced by display_dir in stderr


class Result:
    def __init__(self):
        self.returncode = None
        self.stdout = ""
        self.stderr = ""
        self.timed_out = False
        self.memory_exceeded = False
        self.seconds = 0.0


def rss_bytes(pid):
    """Resident memory of a running process (Linux), or 0 when it cannot be read."""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def run(binary, argv, cwd):
    r = Result()
    env = dict(os.environ, LC_ALL="C")
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.monotonic()
        p = subprocess.Popen([binary] + argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                             env=env, start_new_session=True)
        while True:
            try:
                p.wait(timeout=0.02)
                break
            except subprocess.TimeoutExpired:
                pass
            r.timed_out = time.monotonic() - start > TIMEOUT_SECONDS
            r.memory_exceeded = rss_bytes(p.pid) > MAX_RSS_BYTES
            if r.timed_out or r.memory_exceeded:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except OSError:
                    pass
                p.wait()
                break
        r.seconds = time.monotonic() - start
        r.returncode = p.returncode
        out.seek(0)
        err.seek(0)
        r.stdout = out.read().decode("utf-8", "replace")
        r.stderr = err.read().decode("utf-8", "replace")
    return r


def signal_name(returncode):
    try:
        return signal.Signals(-returncode).name
    except ValueError:
        return "signal %d" % -returncode


def abnormal_end(r):
    """Why the process did not end by itself (None when it did): a hang, memory, a signal."""
    if r.timed_out:
        return "hung: killed after %.0f s" % TIMEOUT_SECONDS
    if r.memory_exceeded:
        return "killed after growing beyond %d MiB of memory" % (MAX_RSS_BYTES >> 20)
    if r.returncode < 0:
        return "crashed: killed by %s" % signal_name(r.returncode)
    return None


def problems(case, r, stderr):
    """Why the run is not a clean rejection (empty when it is); the message is checked apart."""
    found = []
    ended = abnormal_end(r)
    if ended:
        found.append(ended)
    elif r.returncode == 0:
        found.append("accepted the input (exit code 0)")
    elif r.returncode != 1:
        found.append("exit code %d, expected 1" % r.returncode)
    sign = CRASH_SIGNS.search(stderr)
    if sign:
        found.append("stderr shows a crash (%s)" % sign.group(0))
    if r.stdout:
        first = r.stdout.splitlines()[0] if r.stdout.splitlines() else r.stdout
        found.append("printed on stdout: %r" % first[:100])
    return found


def diff(expected, actual):
    lines = difflib.unified_diff(expected.splitlines(True), actual.splitlines(True), "expected", "actual", n=2)
    out = []
    for line in lines:
        out.append("    " + (line if line.endswith("\n") else line + "\n\\ no newline\n"))
    return "".join(out)


def disk_cases(corpus, root):
    cases = []
    absolute = os.path.abspath(corpus)
    display = os.path.relpath(absolute, root)
    for entry in sorted(os.listdir(absolute)):
        if not entry.endswith(".expected"):
            continue
        name = entry[: -len(".expected")]
        spec = os.path.join(display, name + ".yaml")
        args_path = os.path.join(absolute, name + ".args")
        args = DEFAULT_ARGS
        if os.path.exists(args_path):
            with open(args_path, encoding="utf-8") as f:
                args = f.read().strip()
        argv = [a.replace("{spec}", spec) for a in shlex.split(args)]
        with open(os.path.join(absolute, entry), encoding="utf-8", newline="") as f:
            expected = f.read()
        cases.append(Case(name, argv, expected, os.path.join(absolute, entry), display, absolute))
    return cases


def generated_cases(tmp):
    cases = []
    for name, content, args, expected in GENERATED:
        path = os.path.join(tmp, name + ".yaml")
        if content == "directory":
            os.mkdir(path)
        elif content == "fifo":
            os.mkfifo(path)
        elif content is not None:
            with open(path, "wb") as f:
                f.write(content)
        argv = [a.replace("{spec}", path) for a in shlex.split(args)]
        cases.append(Case(name, argv, expected, None, "CORPUS", tmp))
    return cases


# --------------------------------------------------------------------------------------------
# Fuzz regressions: any clean outcome will do, but a rejection must be located.

REGRESSION_COMMANDS = ("estimate", "check")


def regression_cases(directory, root):
    """(name, argv, spec path as nnmem is given it) for each file and subcommand."""
    cases = []
    if not directory or not os.path.isdir(directory):
        return cases
    absolute = os.path.abspath(directory)
    display = os.path.relpath(absolute, root)
    for entry in sorted(os.listdir(absolute)):
        if entry.startswith(".") or not os.path.isfile(os.path.join(absolute, entry)):
            continue
        spec = os.path.join(display, entry)
        for command in REGRESSION_COMMANDS:
            cases.append(("fuzz/%s [%s]" % (entry, command), [command, spec], spec))
    return cases


def regression_problems(r, spec):
    """Why a replayed regression is not a clean outcome (empty when it is)."""
    found = []
    ended = abnormal_end(r)
    if ended:
        found.append(ended)
    elif r.returncode == 1:
        first = r.stderr.splitlines()[0] if r.stderr.splitlines() else ""
        if not re.match(re.escape(spec) + r":\d+:\d+: error: ", first):
            found.append("exit code 1 without a located error first (%r)" % first[:100])
    elif r.returncode != 0:
        found.append("exit code %d, expected 0 or 1" % r.returncode)
    for stream, text in (("stderr", r.stderr), ("stdout", r.stdout)):
        sign = CRASH_SIGNS.search(text)
        if sign:
            found.append("%s shows a crash (%s)" % (stream, sign.group(0)))
    return found


def main():
    parser = argparse.ArgumentParser(description="Runs nnmem on every bad-input case and checks its diagnostic.")
    parser.add_argument("binary", help="the nnmem executable")
    parser.add_argument("corpus", help="the directory of NAME.yaml / NAME.expected / NAME.args cases")
    parser.add_argument("--update", action="store_true",
                        help="rewrite the .expected files from the actual output (after deliberate message changes)")
    parser.add_argument("-k", dest="pattern", default="", help="run only the cases whose name contains PATTERN")
    parser.add_argument("-v", "--verbose", action="store_true", help="also list the cases that pass")
    parser.add_argument("--regressions", default=None, metavar="DIR",
                        help="fuzz regressions to replay (default: tests/fuzz/regressions; '' for none)")
    options = parser.parse_args()

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # tests/.. = the repository root
    if options.regressions is None:
        options.regressions = os.path.join(root, "tests", "fuzz", "regressions")
    binary = os.path.abspath(options.binary)
    if not os.access(binary, os.X_OK):
        print("run_bad.py: %s is not an executable" % options.binary, file=sys.stderr)
        return 2
    if not os.path.isdir(options.corpus):
        print("run_bad.py: %s is not a directory" % options.corpus, file=sys.stderr)
        return 2

    passed = failed = 0
    with tempfile.TemporaryDirectory(prefix="nnmem-bad-") as tmp:
        cases = disk_cases(options.corpus, root) + generated_cases(tmp)
        for case in cases:
            if options.pattern and options.pattern not in case.name:
                continue
            r = run(binary, case.argv, root)
            stderr = r.stderr.replace(case.absolute_dir + os.sep, case.display_dir + "/")
            trouble = problems(case, r, stderr)
            if not trouble and stderr == case.expected:
                passed += 1
                if options.verbose:
                    print("ok    %s (%.2f s)" % (case.name, r.seconds))
                continue
            if options.update and not trouble:
                if case.expected_path:
                    with open(case.expected_path, "w", encoding="utf-8", newline="") as f:
                        f.write(stderr)
                    print("UPDATED %s" % case.name)
                    passed += 1
                else:
                    print("UPDATE BY HAND %s: in GENERATED in %s, the expected text is now %r"
                          % (case.name, "tests/bad_generated.py", stderr))
                    failed += 1
                continue
            failed += 1
            reasons = trouble + (["stderr differs from the expected text"] if stderr != case.expected else [])
            command = " ".join(shlex.quote(a) for a in ["nnmem"] + case.argv)
            if case.display_dir == "CORPUS":
                command = command.replace(case.absolute_dir + os.sep, "CORPUS/")
            print("FAIL  %s: %s   [%s]" % (case.name, "; ".join(reasons), command))
            if stderr != case.expected:
                sys.stdout.write(diff(case.expected, stderr))
    for name, argv, spec in regression_cases(options.regressions, root):
        if options.pattern and options.pattern not in name:
            continue
        r = run(binary, argv, root)
        trouble = regression_problems(r, spec)
        if not trouble:
            passed += 1
            if options.verbose:
                print("ok    %s (exit %d, %.2f s)" % (name, r.returncode, r.seconds))
            continue
        failed += 1
        print("FAIL  %s: %s   [%s]" % (name, "; ".join(trouble),
                                       " ".join(shlex.quote(a) for a in ["nnmem"] + argv)))
        for line in r.stderr.splitlines()[:20]:
            print("    " + line)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
