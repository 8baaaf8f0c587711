#!/usr/bin/env python3
"""What nn.Embedding(sparse=True) allocates and keeps (torch 1.13 and 2.x, CPU): the sparse COO
gradient (its indices and values storages, coalesced or not), the allocator events of the
lookup's backward (embedding_sparse_backward against embedding_dense_backward), of a second
backward that accumulates into it, of a table looked up twice in one forward, of each optimizer
that takes a sparse gradient (SGD, SGD with momentum, SparseAdam, Adagrad) and of zero_grad;
and the error of those that refuse one (Adam, AdamW). An op's workspace (allocated and freed
inside it) is marked `ws`; totals run from the start of each profiled window.
   /work/venv213/bin/python validation/probe_sparse_embedding.py [CASE...]     (torch 2.13)
   /usr/bin/python3 validation/probe_sparse_embedding.py [CASE...]             (torch 1.13)
The notes in validation/ops_saved_transformers.md quote its output."""
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import memtrace  # noqa: E402

torch.manual_seed(0)
torch.set_num_threads(1)
V, D, B, T = 100, 8, 4, 5   # 20 ids, some repeated


def ids():
    x = torch.randint(0, V, (B, T))
    x[0, 0] = x[1, 1] = x[2, 2] = 7   # a repeated id
    return x


def events(prof, title):
    tr = memtrace.analyse(prof)
    print(f"  {title}:")
    for e in tr.events:
        if e.ignored:
            continue
        ws = " ws" if e.excluded else ""
        print(f"    {e.phase or '-':9s} {e.size:+8d} {e.total:8d}{ws}  {e.outer_op} > {e.inner_op}")


def profile():
    return torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True,
                                  record_shapes=True)


def describe_grad(g):
    if g.is_sparse:
        i, v = g._indices(), g._values()
        return (f"sparse_coo coalesced={g.is_coalesced()} nnz={g._nnz()} indices {list(i.shape)} {str(i.dtype)[6:]} "
                f"{i.untyped_storage().nbytes() if hasattr(i, 'untyped_storage') else i.storage().size() * 8} B, "
                f"values {list(v.shape)} {str(v.dtype)[6:]} "
                f"{v.untyped_storage().nbytes() if hasattr(v, 'untyped_storage') else v.storage().size() * 4} B")
    return f"dense {list(g.shape)} {g.numel() * g.element_size()} B"


def backward(sparse, passes=1, twice=False, pad=None):
    """The lookup's forward and backward (`passes` of them: accumulation), `twice`: the table
    read twice in one forward (a tied use)."""
    emb = nn.Embedding(V, D, sparse=sparse, padding_idx=pad)
    x = ids()
    print(f"backward sparse={sparse} passes={passes} twice={twice} padding_idx={pad}: ids {list(x.shape)}, "
          f"{len(torch.unique(x))} distinct")
    with profile() as prof:
        for p in range(passes):
            with memtrace.Marker("nnmem::forward"):
                out = emb(x)
                if twice:
                    out = out + emb(x.flip(0))
                loss = out.sum()
            with memtrace.Marker("nnmem::backward"):
                loss.backward()
            print(f"    after pass {p + 1}: grad {describe_grad(emb.weight.grad)}")
            del out, loss
    events(prof, "events")


def network(head):
    """The lookup inside a model, its gradient coming from a layer above: `mean` (a bag of words:
    the mean over the sequence, then a Linear) or `linear` (a Linear on every position); whether
    the gradient's indices and values share a storage with the ids or with the gradient above."""
    emb = nn.Embedding(V, D, sparse=True)
    lin = nn.Linear(D, 3)
    x = ids()
    print(f"network {head}:")
    with profile() as prof:
        with memtrace.Marker("nnmem::forward"):
            h = emb(x)
            out = lin(h.mean(1) if head == "mean" else h)
            loss = out.sum()
        with memtrace.Marker("nnmem::backward"):
            loss.backward()
        g = emb.weight.grad
        print(f"    grad {describe_grad(g)}; indices share the ids' storage: "
              f"{g._indices().data_ptr() == x.data_ptr()}")
        del h, out, loss
    events(prof, "events")


def optimizer(name, set_to_none=True):
    emb = nn.Embedding(V, D, sparse=True)
    make = {"sgd": lambda p: torch.optim.SGD(p, lr=0.1),
            "momentum": lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
            "sparseadam": lambda p: torch.optim.SparseAdam(p, lr=0.1),
            "adagrad": lambda p: torch.optim.Adagrad(p, lr=0.1),
            "adam": lambda p: torch.optim.Adam(p, lr=0.1),
            "adamw": lambda p: torch.optim.AdamW(p, lr=0.1),
            "rmsprop": lambda p: torch.optim.RMSprop(p, lr=0.1)}[name]
    print(f"optimizer {name} set_to_none={set_to_none}:")
    with profile() as prof:
        with memtrace.Marker("nnmem::zero_grad"):
            opt = make(emb.parameters())
        for step in range(2):
            with memtrace.Marker("nnmem::zero_grad"):
                opt.zero_grad(set_to_none=set_to_none)
            with memtrace.Marker("nnmem::forward"):
                loss = emb(ids()).sum()
            with memtrace.Marker("nnmem::backward"):
                loss.backward()
            print(f"    step {step + 1} grad before step: {describe_grad(emb.weight.grad)}")
            with memtrace.Marker("nnmem::step"):
                try:
                    opt.step()
                except Exception as e:  # noqa: BLE001 - the refusal is the finding
                    print(f"    step refused: {type(e).__name__}: {str(e).splitlines()[0]}")
                    break
            del loss
        for k, v in opt.state[emb.weight].items():
            print(f"    state {k}: " + (f"{list(v.shape)} {str(v.dtype)[6:]} {v.numel() * v.element_size()} B "
                                        f"{'sparse' if v.is_sparse else 'dense'}" if torch.is_tensor(v) else repr(v)))
        print(f"    grad after: {describe_grad(emb.weight.grad) if emb.weight.grad is not None else None}")
    events(prof, "events")


def momentum_growth(steps=4):
    """SGD's momentum buffer of a sparse gradient, step after step; and fused SGD's refusal."""
    emb = nn.Embedding(V, D, sparse=True)
    print("momentum buffer growth:")
    opt = torch.optim.SGD(emb.parameters(), lr=0.1, momentum=0.9)
    for s in range(steps):
        opt.zero_grad()
        emb(ids()).sum().backward()
        opt.step()
        b = opt.state[emb.weight]["momentum_buffer"]
        print(f"    step {s + 1}: momentum_buffer nnz {b._nnz()} coalesced={b.is_coalesced()}")
    try:
        opt = torch.optim.SGD(emb.parameters(), lr=0.1, fused=True)
        opt.step()
        print("    fused SGD: stepped")
    except (RuntimeError, TypeError) as e:
        print(f"    fused SGD: {type(e).__name__}: {str(e).splitlines()[0]}")


CASES = {
    "dense": lambda: backward(False),
    "sparse": lambda: backward(True),
    "sparse_padding": lambda: backward(True, pad=7),
    "sparse_accumulate": lambda: backward(True, passes=2),
    "sparse_twice": lambda: backward(True, twice=True),
    "dense_twice": lambda: backward(False, twice=True),
    "net_mean": lambda: network("mean"),
    "momentum_growth": momentum_growth,
    "net_linear": lambda: network("linear"),
}
for _opt in ("sgd", "momentum", "sparseadam", "adagrad", "adam", "adamw", "rmsprop"):
    CASES["opt_" + _opt] = (lambda o: lambda: optimizer(o))(_opt)
CASES["opt_sgd_zero"] = lambda: optimizer("sgd", set_to_none=False)
CASES["opt_sparseadam_zero"] = lambda: optimizer("sparseadam", set_to_none=False)

if __name__ == "__main__":
    print(f"torch {torch.__version__}; table [{V}, {D}] float32, ids [{B}, {T}] int64")
    for n in sys.argv[1:] or CASES:
        CASES[n]()
