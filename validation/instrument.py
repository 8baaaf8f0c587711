"""Instrumentation that does not allocate tensors: which module is running,
per-layer output shapes, and the storages saved for backward."""
import torch

from memtrace import Marker

FUNCTIONAL = "<functional>"   # saved by code in the root module's forward
LOSS = "<loss>"               # saved by the loss function


def storage_key(t):
    """(data_ptr, nbytes) of a tensor's storage: .untyped_storage() in torch 2.x
    (where .storage() is a deprecated TypedStorage wrapper), .storage() in 1.13."""
    st = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return st.data_ptr(), st.nbytes()


def storage_id(t):
    """The storage object itself (its C++ StorageImpl): unlike the data pointer, never shared by
    two storages alive at once, and a saved tensor keeps its own alive. Sharded data parallelism
    frees a gathered parameter's memory during the forward pass, so a later activation can land
    at the same address."""
    st = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return st._cdata


def shape_of(o):
    """A tensor's shape; for several outputs (an LSTM's (out, (h_n, c_n))), their shapes in
    order, flattened: [[12, 4, 32], [2, 4, 32], [2, 4, 32]]."""
    if isinstance(o, torch.Tensor):
        return list(o.shape)
    if isinstance(o, (tuple, list)):
        out = []
        for v in o:
            s = shape_of(v)
            out.extend(s if s and isinstance(s[0], list) else [s])
        return out
    return None


class ModuleTracker:
    """Forward pre-hooks/hooks on every named module keep a stack of the
    running modules and open a profiler range 'module::NAME' around each
    call; optionally record each leaf module's output shape(s)."""

    def __init__(self, model, markers=True):
        self.stack = []
        self.markers = markers
        self.record_shapes = False
        self.shapes = {}                       # leaf name -> [shape per call]
        self.leaves = {n: m for n, m in model.named_modules()
                       if not list(m.children()) and n}
        self.handles = {}                      # module -> its two hook handles
        for name, mod in model.named_modules():
            self.handles[mod] = (mod.register_forward_pre_hook(self._pre(name)),
                                 mod.register_forward_hook(self._post(name)))

    def _pre(self, name):
        def hook(mod, inp):
            mk = Marker("module::" + (name or FUNCTIONAL)) if self.markers else None
            if mk:
                mk.__enter__()
            self.stack.append((name, mk))
        return hook

    def _post(self, name):
        def hook(mod, inp, out):
            n, mk = self.stack.pop()
            assert n == name, (n, name)
            if mk:
                mk.__exit__()
            if self.record_shapes and name in self.leaves:
                self.shapes.setdefault(name, []).append(shape_of(out))
        return hook

    def current(self):
        """Qualified name of the innermost running module, or <functional>
        when only the root module is running, or <loss> outside the model."""
        if not self.stack:
            return LOSS
        return self.stack[-1][0] or FUNCTIONAL

    def remove(self):
        for pair in self.handles.values():
            for h in pair:
                h.remove()

    def release_fast_paths(self, model):
        """torch 2.x's nn.TransformerEncoderLayer refuses its eval fast path (one fused
        torch._transformer_encoder_layer_fwd) when it or any of its modules has a forward
        hook, which a user's model has not: take this tracker's hooks off those modules so
        that the measured pass is the one users run (1.13 does not look at hooks). Their
        allocations are then located at the enclosing module."""
        for layer in model.modules():
            if isinstance(layer, torch.nn.TransformerEncoderLayer):
                for mod in layer.modules():
                    for h in self.handles.pop(mod, ()):
                        h.remove()


class SavedRecorder:
    """saved_tensors_hooks pack hook: record every saved tensor's storage.
    The hook returns t.detach() (same storage, no grad_fn, so no reference
    cycle) and unpack returns it: the lifetime of the storage is unchanged."""

    def __init__(self, tracker, params, buffers, named):
        self.tracker = tracker
        # storage ptr sets; `params` may be a function giving the set at the time of the save
        # (sharded data parallelism gathers and frees the parameters' storages as it runs)
        self.params, self.buffers = params, buffers
        self.named = named                            # ptr -> 'input'/'target'
        self.records = []                             # one per pack call

    def pack(self, t):
        ptr, nbytes = storage_key(t)
        params = self.params() if callable(self.params) else self.params
        kind = ("param" if ptr in params else "buffer" if ptr in self.buffers
                else self.named.get(ptr, "activation"))
        self.records.append({"ptr": ptr, "sid": storage_id(t), "storage_bytes": nbytes, "dtype": str(t.dtype)[6:],
                             "shape": list(t.shape), "module": self.tracker.current(),
                             "kind": kind})
        return t.detach()

    @staticmethod
    def unpack(t):
        return t

    def hooks(self):
        return torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack)


def graph_saved(root_fn):
    """Walk the autograd graph from root_fn; map storage ptr -> list of
    'NodeName._saved_attr' that hold it (reads the _saved_* properties)."""
    out, seen, todo = {}, set(), [root_fn]
    while todo:
        fn = todo.pop()
        if fn is None or fn in seen:
            continue
        seen.add(fn)
        for attr in dir(fn):
            if not attr.startswith("_saved_"):
                continue
            try:
                val = getattr(fn, attr)
            except Exception:          # e.g. already freed
                continue
            vals = val if isinstance(val, (tuple, list)) else [val]
            for v in vals:
                if isinstance(v, torch.Tensor):
                    out.setdefault(storage_key(v)[0], []).append(f"{fn.name()}.{attr[7:]}")
        todo.extend(nf for nf, _ in fn.next_functions)
    return out


def summarise_saved(records, graph_map):
    """De-duplicate the pack records by storage.  Returns the summary dict
    for the fixture: totals, bytes per first-saving layer, and the list."""
    first = {}
    for r in records:
        first.setdefault((r["ptr"], r["sid"]), r)
    by_layer, listing = {}, []
    tot = {"activation": 0, "param": 0, "buffer": 0, "input": 0, "target": 0}
    for (ptr, _), r in first.items():
        tot[r["kind"]] += r["storage_bytes"]
        if r["kind"] not in ("param", "buffer"):
            by_layer[r["module"]] = by_layer.get(r["module"], 0) + r["storage_bytes"]
        listing.append({"module": r["module"], "kind": r["kind"], "dtype": r["dtype"],
                        "shape": r["shape"], "nbytes": r["storage_bytes"],
                        "ops": sorted(set(graph_map.get(ptr, [])))})
    non_param = [r for r in first.values() if r["kind"] not in ("param", "buffer")]
    return {
        "saved_bytes": sum(r["storage_bytes"] for r in non_param),
        "saved_count": len(non_param),
        "saved_param_bytes": tot["param"],
        "saved_buffer_bytes": tot["buffer"],
        "saved_input_bytes": tot["input"],
        "saved_target_bytes": tot["target"],
        "saved_pack_calls": len(records),
        "saved_by_layer": by_layer,
        "saved_tensors": listing,
    }
