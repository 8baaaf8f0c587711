"""Allocator-event analysis for the CPU profiler of torch 1.13 and 2.x.

torch 1.13 and 2.x expose the raw event tree through
``prof.profiler.kineto_results.experimental_event_tree()``: a list of root
``_ProfilerEvent`` objects (one tree per thread) with ``.name``, ``.children``,
``.parent``, ``.start_time_ns``, ``.end_time_ns``, ``.start_tid``, ``.id`` and
``.extra_fields``.  Allocator events are named ``[memory]`` and their
``extra_fields`` is an ``_ExtraFields_Allocation`` with ``ptr`` and a signed
``alloc_size`` (negative = free).  Operator events carry an
``_ExtraFields_TorchOp`` with ``sequence_number`` (the autograd sequence
number: a forward op and the backward node built from it share it) and the
recorded inputs: in 1.13 an ``_Inputs`` object whose ``.shapes`` lists one
shape per argument; in 2.x a plain list of the arguments (``_TensorMetadata``
with ``.sizes`` for tensors, lists of those for tensor lists, Python values
for scalars), turned into the same list of shapes by ``input_shapes``.

Rules implemented here (see README.md):
* every allocation since the start of profiling is counted; a free is matched
  to the most recent allocation at the same pointer;
* an allocation whose matching free happens inside the same OUTERMOST
  ``aten::`` operator call is an operator workspace and is excluded (both its
  +size and its -size); allocations made outside any aten op are never
  excluded;
* the running total of the remaining events gives the live bytes.
"""
from dataclasses import dataclass, field
from typing import List, Optional

import torch

MARKER_PREFIXES = ("nnmem::", "module::")
# Operator calls whose own allocations, freed before they return, are workspaces: ATen's, and
# the collectives of torch.distributed (c10d::) and of gloo's worker threads (gloo:).
OP_PREFIXES = ("aten::", "c10d::", "gloo:")
# A collective's staging copies (gloo's reduce-scatter clones its input, its all-gather gathers
# into a buffer of its own) differ by backend — NCCL works in the given tensors — and gloo may
# free them on a worker thread the profiler does not see: whatever a collective allocates is
# its workspace, wherever and whenever it is freed.
COLLECTIVE_PREFIXES = ("c10d::", "gloo:")
PHASES = ("zero_grad", "forward", "loss", "inspect", "backward", "step", "eval")


TORCH_MAJOR = int(torch.__version__.split(".")[0])


class Marker:
    """A profiler range that, unlike torch.profiler.record_function in 1.13,
    allocates no tensor (record_function's legacy handle is a tensor, which
    would show up in the allocator trace).  In 2.x record_function itself uses
    _record_function_enter_new; Marker behaves the same there."""

    def __init__(self, name):
        self.name = name
        self.handle = None

    def __enter__(self):
        self.handle = torch.ops.profiler._record_function_enter_new(self.name, None)
        return self

    def __exit__(self, *exc):
        torch.ops.profiler._record_function_exit._RecordFunction(self.handle)
        return False


def patch_record_function():
    """torch.optim wraps step() and zero_grad() in record_function, whose
    legacy handle allocates a 4-byte and a 288-byte CPU tensor on every call
    in torch 1.13 (a profiling artefact, not training memory).  Replace it by
    Marker there.  torch 2.x's record_function opens the same allocation-free
    range as Marker (checked: no allocator event), so it is left alone."""
    if TORCH_MAJOR >= 2:
        return
    class _RecordFunction(Marker):
        def __init__(self, name, args=None):
            super().__init__(name)
    torch.autograd.profiler.record_function = _RecordFunction


@dataclass
class MemEvent:
    t: int                      # start_time_ns
    order: int                  # depth-first index (tie breaker)
    ptr: int
    size: int                   # signed: > 0 allocation, < 0 free
    tid: int
    markers: List[str]          # enclosing nnmem::/module:: ranges, outermost first
    outer_aten: Optional[int]   # id of the outermost enclosing aten:: (c10d::, gloo:) event
    outer_op: str               # outermost enclosing non-marker event name
    inner_op: str               # innermost enclosing non-marker event name
    op_shapes: list             # input shapes of the outermost op (if recorded)
    seq: int                    # sequence_number of the outermost op (-1: none)
    excluded: bool = False      # operator workspace (see module docstring)
    collective: bool = False    # allocated inside a collective (COLLECTIVE_PREFIXES)
    ignored: bool = False       # free of memory allocated before profiling
    matched: bool = False       # for a free: it matched an allocation
    total: int = 0              # running total after this event
    raw_total: int = 0          # same without the workspace exclusion

    def marker(self, prefix):
        """Innermost marker starting with prefix, without the prefix."""
        for m in reversed(self.markers):
            if m.startswith(prefix):
                return m[len(prefix):]
        return None

    @property
    def phase(self):
        for m in reversed(self.markers):
            if m.startswith("nnmem::") and m[7:] in PHASES:
                return m[7:]
        return None


def input_shapes(ef):
    """Input shapes of an operator event, in 1.13's format (a list with one
    entry per argument: a tensor's sizes, [] for anything else), or None."""
    inputs = getattr(ef, "inputs", None)
    if inputs is None:
        return None
    if hasattr(inputs, "shapes"):          # torch 1.13: _Inputs
        return inputs.shapes

    def shape(v):                          # torch 2.x: list of argument values
        if hasattr(v, "sizes"):
            return list(v.sizes)
        if isinstance(v, list) and v and all(hasattr(t, "sizes") for t in v):
            return [list(t.sizes) for t in v]
        return []
    return [shape(v) for v in inputs]


def _collect(prof):
    """Flatten the event tree into MemEvents (time order) and a map
    sequence_number -> module marker of the forward op with that number."""
    events, seq_module = [], {}
    counter = [0]

    def walk(ev, markers, outer_aten, outer_op, inner_op, shapes, seq, module, collective=False):
        counter[0] += 1
        name = ev.name
        ef = ev.extra_fields
        if name == "[memory]":
            events.append(MemEvent(ev.start_time_ns, counter[0], ef.ptr, ef.alloc_size,
                                   ev.start_tid, markers, outer_aten, outer_op or "",
                                   inner_op or "", shapes, seq, collective=collective))
            return
        if name.startswith(MARKER_PREFIXES):
            markers = markers + [name]
            if name.startswith("module::"):
                module = name[8:]
        else:
            own_seq = getattr(ef, "sequence_number", -1)
            if own_seq is not None and own_seq >= 0 and module is not None:
                seq_module.setdefault(own_seq, module)   # forward op in a module
            if outer_op is None:
                outer_op, seq = name, own_seq
                shapes = input_shapes(ef)
            if outer_aten is None and name.startswith(OP_PREFIXES):
                outer_aten = ev.id
                collective = name.startswith(COLLECTIVE_PREFIXES)
            inner_op = name
        for c in ev.children:
            walk(c, markers, outer_aten, outer_op, inner_op, shapes, seq, module, collective)

    for root in prof.profiler.kineto_results.experimental_event_tree():
        walk(root, [], None, None, None, None, -1, None)
    events.sort(key=lambda e: (e.t, e.order))
    return events, seq_module


@dataclass
class Trace:
    events: List[MemEvent]
    seq_module: dict
    unmatched_free_bytes: int = 0
    excluded_workspace_peak: int = 0
    framework_workspace_bytes: int = 0  # what `workspace` excluded
    unseen_free_bytes: int = 0  # allocations whose address was reused with no free seen
    windows: dict = field(default_factory=dict)


def analyse(prof, workspace=None):
    """Pair allocations with frees, apply the workspace exclusion and compute
    running totals (filtered in .total, unfiltered kept separately). `workspace`, when given,
    says of an allocation event that it is a workspace of the framework's own (excluded, and
    its free with it)."""
    events, seq_module = _collect(prof)
    live = {}
    tr = Trace(events, seq_module)
    for e in events:
        if e.size > 0 and workspace is not None and workspace(e):
            e.collective = e.excluded = True
            tr.framework_workspace_bytes += e.size
        if e.size > 0:
            stale = live.get(e.ptr)
            if stale is not None:   # its free was never seen: a collective's worker thread
                stale.excluded = True   # freed it (gloo keeps a collective's tensors until its
                tr.unseen_free_bytes += stale.size  # work is destroyed there)
            live[e.ptr] = e
            if e.collective:
                e.excluded = True
                tr.excluded_workspace_peak = max(tr.excluded_workspace_peak, e.size)
        else:
            a = live.pop(e.ptr, None)
            if a is None:           # allocated before profiling started:
                tr.unmatched_free_bytes += -e.size  # not in the baseline, so
                e.ignored = True                    # not subtracted either
                continue
            e.matched = True
            if a.collective:
                e.excluded = True
            elif a.outer_aten is not None and a.outer_aten == e.outer_aten:
                a.excluded = e.excluded = True
                tr.excluded_workspace_peak = max(tr.excluded_workspace_peak, a.size)
    total = raw = 0
    for e in events:
        if not e.ignored:
            raw += e.size
            if not e.excluded:
                total += e.size
        e.total = total
        e.raw_total = raw
    return tr


def window(tr, marker):
    """Statistics of the running total inside a marker range (e.g.
    'nnmem::iter2').  The peak is the max of the running total after every
    event inside the range (and the value on entry)."""
    inside = [i for i, e in enumerate(tr.events) if marker in e.markers]
    if not inside:
        return None
    first = inside[0]
    start = tr.events[first - 1].total if first > 0 else 0
    start_raw = tr.events[first - 1].raw_total if first > 0 else 0
    best, best_raw, best_ev = start, start_raw, None
    phases = {}
    for i in inside:
        e = tr.events[i]
        ph = e.phase or "?"
        before = tr.events[i - 1].total if i > 0 else 0
        st = phases.setdefault(ph, {"start_bytes": before, "peak_bytes": before})
        st["peak_bytes"] = max(st["peak_bytes"], e.total)
        st["end_bytes"] = e.total
        best_raw = max(best_raw, e.raw_total)
        if not e.excluded and e.total > best:
            best, best_ev = e.total, e
    end = tr.events[inside[-1]].total
    res = {"start_bytes": start, "peak_bytes": best, "end_bytes": end,
           "peak_unfiltered_bytes": best_raw, "phases": phases,
           "peak_phase": None, "peak_op": None, "peak_op_outer": None, "peak_module": None}
    if best_ev is not None:
        res.update(peak_phase=best_ev.phase, peak_op=best_ev.inner_op,
                   peak_op_outer=best_ev.outer_op, peak_module=module_of(tr, best_ev))
        micro = best_ev.marker("nnmem::micro")  # gradient accumulation: which micro-step (1-based)
        res["peak_micro_step"] = int(micro) + 1 if micro is not None else None
    return res


def module_of(tr, e):
    """Module responsible for an event: the module:: marker in the forward,
    or, in the backward, the module whose forward op has the same autograd
    sequence number as the backward node."""
    m = e.marker("module::")
    if m is not None:
        return m
    if e.seq is not None and e.seq >= 0:
        return tr.seq_module.get(e.seq)
    return None


def write_trace(tr, marker, path):
    """Human-readable list of the non-excluded events inside a marker range."""
    with open(path, "w") as f:
        f.write("# phase\tmodule\touter_op\tinner_op\tbytes\trunning_total\tinput_shapes\n")
        for e in tr.events:
            if marker not in e.markers or e.excluded:
                continue
            f.write(f"{e.phase}\t{module_of(tr, e)}\t{e.outer_op}\t{e.inner_op}\t"
                    f"{e.size:+d}\t{e.total}\t{e.op_shapes}\n")
