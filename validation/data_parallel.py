"""Data parallelism for measure.py: each rank of a torchrun launch (measure_dist.py) measures
its own training step, the model wrapped as nnmem's --gpus/--fsdp options describe.

  ddp                 DistributedDataParallel(model) (gloo, CPU; gradient_as_bucket_view=False,
                      bucket_cap_mb as given, 25 by default)
  fsdp-full           FullyShardedDataParallel, FULL_SHARD, each top-level unit (networks_scaling's
  fsdp-grad-op        units: block instances and layers with parameters) wrapped, SHARD_GRAD_OP,
  fsdp-no-shard       NO_SHARD; the root wraps the rest
  fsdp2               torch.distributed.fsdp.fully_shard on each unit with parameters, then the root
                      (FULL_SHARD: nnmem's --fsdp full)
  fsdp2-grad-op       the same with reshard_after_forward=False (SHARD_GRAD_OP: --fsdp shard_grad_op)

Under torch 2.13 (the CPU build runs FSDP with gloo; torch 1.13's FSDP needs CUDA).
"""
import functools
import os

import torch
import torch.distributed as dist

from instrument import storage_key

STRATEGIES = ("ddp", "fsdp-full", "fsdp-grad-op", "fsdp-no-shard", "fsdp2", "fsdp2-grad-op")


def setup():
    """The process group of a torchrun launch: (rank, world size)."""
    dist.init_process_group("gloo")
    return dist.get_rank(), dist.get_world_size()


def _units_with_params(model):
    return [m for _, m, _ in model.units() if any(True for _ in m.parameters())]


def wrap(model, strategy, bucket_cap_mb=None):
    """The model as the strategy runs it (the same module objects inside). bucket_cap_mb None:
    DDP's default (25 MiB, and a first bucket of 1 MiB)."""
    if strategy == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP
        return DDP(model) if bucket_cap_mb is None else DDP(model, bucket_cap_mb=bucket_cap_mb)
    if strategy in ("fsdp2", "fsdp2-grad-op"):
        from torch.distributed.fsdp import fully_shard
        reshard = strategy == "fsdp2"
        for unit in _units_with_params(model):
            fully_shard(unit, reshard_after_forward=reshard)
        fully_shard(model, reshard_after_forward=reshard)
        return model
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP, ShardingStrategy
    from torch.distributed.fsdp.wrap import ModuleWrapPolicy  # noqa: F401
    sharding = {"fsdp-full": ShardingStrategy.FULL_SHARD, "fsdp-grad-op": ShardingStrategy.SHARD_GRAD_OP,
                "fsdp-no-shard": ShardingStrategy.NO_SHARD}[strategy]
    units = set(_units_with_params(model))
    policy = functools.partial(_wrap_units, units=units)
    return FSDP(model, sharding_strategy=sharding, auto_wrap_policy=policy, device_id=torch.device("cpu"))


def _wrap_units(module, recurse, nonwrapped_numel, units):
    return True if recurse else module in units


def param_storages(model):
    """The data pointers of the parameters' storages right now: FSDP's flat parameters (their
    unsharded storage while a unit is gathered), else every parameter (FSDP2's unsharded ones
    while gathered). What a saved tensor sharing one of them is: a parameter, not an activation."""
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    handles = [m._handle for m in FSDP.fsdp_modules(model) if getattr(m, "_handle", None) is not None]
    tensors = [h.flat_param for h in handles] if handles else [local(p) for p in model.parameters()]
    return {storage_key(t)[0] for t in tensors}


def ddp_bucket_bytes(model, rebuilt=True):
    """The bytes of each of DDP's gradient buckets, from its logging data: as rebuilt after the
    first iteration (in the order the gradients became ready), or as first built (one bucket of
    every parameter: DDP rebuilds them anyway)."""
    data = model._get_ddp_logging_data()
    sizes = data.get("rebuilt_bucket_sizes") if rebuilt else data.get("bucket_sizes", "")
    return [int(x) for x in str(sizes).replace(",", " ").split()]


def ddp_bucket_params(model):
    """Each rebuilt bucket's parameters, as indices into model.parameters()."""
    data = model._get_ddp_logging_data()
    text = data.get("rebuilt_per_bucket_param_indices", "")
    return [[int(i) for i in b.split()] for b in str(text).split(",") if b.strip()]


def ddp_workspace(rebuilt):
    """The allocations DDP makes itself, outside any layer, that are not the gradient buckets
    it works with: in its constructor (nnmem::wrap), the parameters' shapes it checks across
    ranks, the broadcast of rank 0's parameters, and the first buckets (one of every parameter,
    replaced when it rebuilds them in the second forward); in that forward, the bucket
    assignment it broadcasts from rank 0. gloo keeps a collective's tensors until its work
    object dies, on a worker thread the profiler does not see (on a GPU, NCCL's are freed as the
    call returns): counted, they would stay live for ever, at random. A predicate for
    memtrace.analyse; `rebuilt` are the buckets' bytes (ddp_bucket_bytes)."""
    def workspace(e):
        if "nnmem::wrap" in e.markers:
            return True
        return (e.outer_op == "DistributedDataParallel.forward" and e.marker("module::") is None
                and e.phase == "forward" and e.size not in rebuilt)
    return workspace


def shard_storages(model):
    """The data pointers of the parameters' shards, right after wrapping (later, SHARD_GRAD_OP's
    parameters may be unsharded)."""
    return {storage_key(local(p))[0] for p in model.parameters()}  # 1.13 has no untyped_storage()


def fsdp_workspace(shards):
    """What FSDP allocates itself in its constructor (nnmem::wrap) that is not a parameter's
    shard (`shards`: shard_storages): its device mesh and process-group bookkeeping, CPU
    tensors that live for ever (on a GPU they are not device memory). A predicate for
    memtrace.analyse."""
    def workspace(e):
        return "nnmem::wrap" in e.markers and e.ptr not in shards
    return workspace


def local(t):
    """The tensor a rank holds: a DTensor's local shard, else the tensor."""
    return t.to_local() if hasattr(t, "to_local") else t


def rank_file(directory):
    return os.path.join(directory, "rank%d.json" % dist.get_rank())
