"""Data parallelism for measure.py: each rank of a torchrun launch (measure_dist.py) measures
its own training step, the model wrapped as nnmem's --gpus/--fsdp options describe.

  ddp                 DistributedDataParallel(model) (gloo, CPU; gradient_as_bucket_view=False,
                      bucket_cap_mb as given, 25 by default)
  fsdp-full           FullyShardedDataParallel, FULL_SHARD, each top-level unit (networks_scaling's
  fsdp-grad-op        units: block instances and layers with parameters) wrapped, SHARD_GRAD_OP,
  fsdp-no-shard       NO_SHARD; the root wraps the rest
  fsdp2               torch.distributed.fsdp.fully_shard on each unit with parameters, then the root

Under torch 2.13 (the CPU build runs FSDP with gloo; torch 1.13's FSDP needs CUDA).
"""
import functools
import os

import torch
import torch.distributed as dist

STRATEGIES = ("ddp", "fsdp-full", "fsdp-grad-op", "fsdp-no-shard", "fsdp2")


def setup():
    """The process group of a torchrun launch: (rank, world size)."""
    dist.init_process_group("gloo")
    return dist.get_rank(), dist.get_world_size()


def _units_with_params(model):
    return [m for _, m, _ in model.units() if any(True for _ in m.parameters())]


def wrap(model, strategy, bucket_cap_mb=25.0):
    """The model as the strategy runs it (the same module objects inside)."""
    if strategy == "ddp":
        from torch.nn.parallel import DistributedDataParallel as DDP
        return DDP(model, bucket_cap_mb=bucket_cap_mb)
    if strategy == "fsdp2":
        from torch.distributed.fsdp import fully_shard
        for unit in _units_with_params(model):
            fully_shard(unit)
        fully_shard(model)
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


def local(t):
    """The tensor a rank holds: a DTensor's local shard, else the tensor."""
    return t.to_local() if hasattr(t, "to_local") else t


def rank_file(directory):
    return os.path.join(directory, "rank%d.json" % dist.get_rank())
