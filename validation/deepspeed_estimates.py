#!/usr/bin/python3
"""DeepSpeed's own model-state estimators run on the validation networks, for nnmem's
`--convention deepspeed` (tests/test_conventions.cpp compares every figure, exactly):
estimate_zero2_model_states_mem_needs and estimate_zero3_model_states_mem_needs for every
combination of their options, at several GPU and node counts, with the parameter counts their
*_all_live wrappers take from the model (model_to_params: parameters counted once per storage;
ZeRO-3's largest layer: the most parameters one module holds itself).

  PYTHONPATH=DIR /work/venv213/bin/python validation/deepspeed_estimates.py validation/deepspeed_estimates.json

DIR: a `pip install --target DIR deepspeed` (no GPU needed; DeepSpeed 0.19.8 here, built with
DS_BUILD_OPS=0, its dependencies but torch beside it). Writes the JSON to the file named (DeepSpeed
logs to standard output)."""
import json
import os
import sys

import torch
from deepspeed import __version__ as ds_version
from deepspeed.runtime.zero import stage3, stage_1_and_2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from networks import NETWORKS  # noqa: E402

MODELS = ["mlp", "resnet18", "resnet50", "vgg16"]
# (GPUs per node, nodes)
SETUPS = [(1, 1), (4, 1), (8, 1), (8, 2), (8, 16), (3, 5)]


def main():
    out = {"deepspeed": ds_version, "torch": torch.__version__, "models": []}
    for name in MODELS:
        torch.manual_seed(0)
        model = NETWORKS[name].build()
        total = stage_1_and_2.model_to_params(model)
        total3, largest = stage3.model_to_params(model)
        assert total == total3
        entry = {"network": name, "total_params": total, "largest_layer_params": largest, "zero2": [], "zero3": []}
        for gpus, nodes in SETUPS:
            for offload in (True, False):
                cpu, gpu = stage_1_and_2.estimate_zero2_model_states_mem_needs(
                    total, num_gpus_per_node=gpus, num_nodes=nodes, cpu_offload=offload)
                entry["zero2"].append({"gpus": gpus, "nodes": nodes, "offload_optimizer": offload,
                                       "cpu_bytes": cpu, "gpu_bytes": gpu})
            for offload in (True, False):
                for offload_params in (True, False):
                    if offload_params and not offload:
                        continue
                    for zero_init in (True, False):
                        cpu, gpu, largest_mem = stage3.estimate_zero3_model_states_mem_needs(
                            total, largest, num_gpus_per_node=gpus, num_nodes=nodes, cpu_offload=offload,
                            cpu_offload_params=offload_params, zero_init=zero_init)
                        entry["zero3"].append({"gpus": gpus, "nodes": nodes, "offload_optimizer": offload,
                                               "offload_param": offload_params, "zero_init": zero_init,
                                               "cpu_bytes": cpu, "gpu_bytes": gpu,
                                               "largest_layer_bytes": largest_mem})
        out["models"].append(entry)
    with open(sys.argv[1], "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
