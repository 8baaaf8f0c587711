"""What compare.py and accuracy_doc.py share: where the fixtures are, the validation lists
(validation/specs.json, peak_not_modelled.json, eval_not_modelled.json) and the helpers over a
compared run's row. Standard library only."""
import json
import os


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "validation", "fixtures")
BASE_VERSION = "1.13"   # what nnmem models without --torch

# network -> (spec, extra nnmem arguments): examples/NETWORK.yaml, unless validation/specs.json
# names another spec and --set values (tests/helpers.cpp reads the same file).
with open(os.path.join(ROOT, "validation", "specs.json")) as _f:
    SPECS = {k: (v["spec"], [a for kv in v["set"].items() for a in ("--set", "%s=%s" % kv)])
             for k, v in json.load(_f).items() if not k.startswith("_")}

# network -> why its peak is not modelled exactly yet: reported, never below the measured peak,
# but not part of the pass/fail of the peak (tests/test_step.cpp reads the same file).
with open(os.path.join(ROOT, "validation", "peak_not_modelled.json")) as _f:
    PEAK_NOT_MODELLED = {k: v for k, v in json.load(_f).items() if not k.startswith("_")}


# network -> why its inference peak (--mode eval) is not modelled exactly yet: reported, not part
# of the pass/fail (tests/test_eval.cpp reads the same file).
with open(os.path.join(ROOT, "validation", "eval_not_modelled.json")) as _f:
    EVAL_NOT_MODELLED = {k: v for k, v in json.load(_f).items() if not k.startswith("_")}


def peak_not_modelled(network, version, listed=None, amp=None):
    """Why nnmem does not model that network's peak under that torch version, or None: an entry
    is a network (every version), NETWORK@VERSION, NETWORK+AMP (its runs under autocast in that
    dtype, every version) or NETWORK+AMP@VERSION. `listed`: that list, default the step's."""
    listed = PEAK_NOT_MODELLED if listed is None else listed
    return listed.get(network) or listed.get("%s@%s" % (network, version)) or \
        (amp and (listed.get("%s+%s" % (network, amp)) or listed.get("%s+%s@%s" % (network, amp, version))))


EXACT = ["param_bytes", "buffer_bytes", "grad_bytes", "optimizer_state_bytes", "input_bytes",
         "target_bytes", "saved_bytes"]


def variant(r):
    words = [r["amp"] + " autocast" if r["amp"] else "", "a %s model" % r["dtype"] if r.get("dtype") else "",
             "fused" if r["fused"] else "foreach" if r["foreach"] else ""]
    if r.get("checkpoint"):
        words.append("checkpoint %s, %s" % (r["checkpoint"], r["checkpoint_impl"]))
    if r.get("grad_accum", 1) > 1:
        words.append("accumulating %d" % r["grad_accum"])
    if r.get("loop", "plain") != "plain":
        words.append("in a function")
    if r.get("parallel"):
        words.append("%s over %d ranks%s" % (r["parallel"], r["world_size"],
                                            ", buckets of %g MiB" % r["bucket_cap_mb"] if r.get("bucket_cap_mb") else ""))
    return "; ".join(w for w in words if w)


def rel(measured, estimated):
    return (estimated - measured) / measured if measured else 0.0


def estimated(rows):
    return [r for r in rows if r["estimated"]]


def peak_rows(rows):
    """The estimated runs whose peak nnmem models (not those of PEAK_NOT_MODELLED)."""
    return [r for r in estimated(rows) if r["peak_modelled"]]


def failed(r):
    return bool(r["mismatches"]) or (r["peak_modelled"] and abs(rel(*r["peak"])) > 0.05)


def pct(measured, estimated):
    return "%+.2f%%" % (100 * rel(measured, estimated))
