#!/usr/bin/env python3
"""Data flows down one stack: cli -> report -> memory -> graph -> spec, with layers/ below the
graph (the graph calls the rules; a rule sees only the layer interface). This check fails when a
file includes a header of a stage above its own, or a private header of another stage.

    python3 tests/check_layering.py [ROOT]
"""
import os
import re
import sys

# Rank of each stage: a file may include headers of its own rank or below.
STAGES = {"": 0, "spec": 1, "layers": 2, "graph": 3, "memory": 4, "parallel": 5, "import": 5, "report": 6, "cli": 7}
# Public headers, by the stage that defines what they declare.
PUBLIC = {
    "checked.hpp": 0, "diagnostic.hpp": 0, "dtype.hpp": 0, "shape.hpp": 0, "profile.hpp": 0,
    "small_vector.hpp": 0, "rare.hpp": 0,
    "spec.hpp": 1, "yaml_tree.hpp": 1,
    "layer.hpp": 2,
    "graph.hpp": 3,
    "estimate.hpp": 4, "plan.hpp": 4, "checkpoint.hpp": 4, "sweep.hpp": 4, "allocator.hpp": 4,
    "parallel.hpp": 5, "safetensors.hpp": 5, "hf_config.hpp": 5, "ultralytics.hpp": 5,
    "report.hpp": 6, "units.hpp": 6,
}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def stage_of(path):
    """(stage, rank) of a source file relative to the root, or None when not checked."""
    parts = path.split(os.sep)
    if parts[0] == "layers":
        return "layers", STAGES["layers"]
    if parts[0] == "include":
        return "public", None
    if parts[0] != "src":
        return None
    stage = parts[1] if len(parts) > 2 else ""
    if stage not in STAGES:
        raise SystemExit("%s: stage '%s' is not in tests/check_layering.py's STAGES" % (path, stage))
    return stage, STAGES[stage]


def check(root):
    problems, files = [], 0
    for top in ("src", "layers", "include"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not name.endswith((".cpp", ".hpp")):
                    continue
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, root)
                stage, rank = stage_of(rel)
                if stage == "public":
                    rank = PUBLIC.get(name)
                    if rank is None:
                        problems.append("%s: a public header missing from tests/check_layering.py's PUBLIC" % rel)
                        continue
                files += 1
                text = open(full, encoding="utf-8").read()
                for m in INCLUDE.finditer(text):
                    inc = m.group(1)
                    line = text.count("\n", 0, m.start()) + 1
                    if inc.startswith("nnmem/"):
                        r = PUBLIC.get(inc[len("nnmem/"):])
                        if r is None:
                            problems.append("%s:%d: includes unknown public header %s" % (rel, line, inc))
                        elif r > rank:
                            problems.append("%s:%d: includes %s, a stage above its own (%s)" % (rel, line, inc, stage))
                        continue
                    # A private header: it must sit in the including file's own directory, or be
                    # one of the shared stage's (src/*.hpp), which every stage may use.
                    target = os.path.normpath(os.path.join(dirpath, inc))
                    shared = os.path.dirname(target) == os.path.join(root, "src")
                    if not os.path.exists(target):
                        problems.append("%s:%d: includes %s, which is not beside it" % (rel, line, inc))
                    elif os.path.dirname(target) != dirpath and stage != "public" and not shared:
                        problems.append("%s:%d: includes %s, a private header of another stage" % (rel, line, inc))
    return problems, files


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    problems, files = check(root)
    for p in problems:
        print(p)
    print("layering: %d files checked, %d problems" % (files, len(problems)))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
