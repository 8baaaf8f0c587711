#!/usr/bin/python3
"""Megatron-LM's theoretical memory figures (megatron/training/theoretical_memory_usage.py,
report_theoretical_memory) for dense transformer shapes under tensor, pipeline and data
parallelism, for nnmem's `--convention megatron` (tests/test_conventions.cpp compares every
figure). Runs Megatron-LM's own file, loaded alone (its `.utils` imports stubbed: no torch, no
GPU):

  MEGATRON_LM=/path/to/Megatron-LM python3 validation/megatron_estimates.py validation/megatron_estimates.json

Shapes: LLaMA-2-7B (the figures issue 14 quotes: 115,672.57 MB of weights and optimizer state,
18,591.33 MB of activations at sequence 4096) and LLaMA-2-13B, GPT-3 175B's (LayerNorm, GeLU,
tied embeddings), and a small GQA model."""
import contextlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import types

SHAPES = {
    "llama2_7b": dict(hidden_size=4096, num_layers=32, num_attention_heads=32, kv_channels=128, ffn_hidden_size=11008,
                      padded_vocab_size=32000, swiglu=True, normalization="RMSNorm",
                      untie_embeddings_and_output_weights=True, group_query_attention=False, num_query_groups=None),
    "llama2_13b": dict(hidden_size=5120, num_layers=40, num_attention_heads=40, kv_channels=128, ffn_hidden_size=13824,
                       padded_vocab_size=32000, swiglu=True, normalization="RMSNorm",
                       untie_embeddings_and_output_weights=True, group_query_attention=False, num_query_groups=None),
    "gpt3_175b": dict(hidden_size=12288, num_layers=96, num_attention_heads=96, kv_channels=128, ffn_hidden_size=49152,
                      padded_vocab_size=51200, swiglu=False, normalization="LayerNorm",
                      untie_embeddings_and_output_weights=False, group_query_attention=False, num_query_groups=None),
    "gqa_1b": dict(hidden_size=2048, num_layers=16, num_attention_heads=16, kv_channels=128, ffn_hidden_size=5632,
                   padded_vocab_size=32768, swiglu=True, normalization="RMSNorm",
                   untie_embeddings_and_output_weights=False, group_query_attention=True, num_query_groups=4),
}
# (seq, micro batch, tp, pp, vpp, dp, distributed optimizer, sequence parallel + selective recompute, microbatches)
SETUPS = [
    (4096, 1, 1, 1, None, 1, False, False, None),
    (4096, 1, 2, 4, None, 8, False, False, None),
    (4096, 2, 4, 2, None, 4, True, True, 8),
    (2048, 1, 8, 8, 2, 2, True, True, 16),
    (2048, 4, 2, 4, None, 16, True, False, 2),
]


def load(megatron):
    path = os.path.join(megatron, "megatron", "training", "theoretical_memory_usage.py")
    pkg = types.ModuleType("tmu_pkg")
    pkg.__path__ = []
    utils = types.ModuleType("tmu_pkg.utils")
    utils.print_rank_0 = print
    utils.is_hybrid_model = lambda args: False
    sys.modules.update({"tmu_pkg": pkg, "tmu_pkg.utils": utils})
    spec = importlib.util.spec_from_file_location("tmu_pkg.theoretical_memory_usage", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    commit = subprocess.run(["git", "-C", megatron, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    return module, commit


def main():
    tmu, commit = load(os.environ["MEGATRON_LM"])
    out = {"megatron_lm_commit": commit, "runs": []}
    for name, shape in SHAPES.items():
        for seq, mb, tp, pp, vpp, dp, dist_opt, sp_selective, n_micro in SETUPS:
            args = types.SimpleNamespace(
                **shape, seq_length=seq, micro_batch_size=mb, tensor_model_parallel_size=tp,
                pipeline_model_parallel_size=pp, virtual_pipeline_model_parallel_size=vpp, data_parallel_size=dp,
                world_size=tp * pp * dp, use_distributed_optimizer=dist_opt, sequence_parallel=sp_selective,
                recompute_granularity="selective" if sp_selective else None, num_experts=None,
                moe_shared_expert_intermediate_size=None, moe_ffn_hidden_size=None, moe_latent_size=None,
                moe_layer_freq=1, moe_router_topk=1, mtp_num_layers=None, multi_latent_attention=False,
                expert_tensor_parallel_size=1, expert_model_parallel_size=1, add_bias_linear=False,
                is_hybrid_model=False)
            with contextlib.redirect_stdout(io.StringIO()) as printed:
                weights_mb, activation_mb, total_mb = tmu.report_theoretical_memory(args, num_microbatches=n_micro)
            out["runs"].append({"shape": name, **{k: v for k, v in shape.items()}, "seq_length": seq, "micro_batch": mb,
                                "tp": tp, "pp": pp, "vpp": vpp, "dp": dp, "distributed_optimizer": dist_opt,
                                "sequence_parallel_selective": sp_selective, "num_microbatches": n_micro,
                                "weight_and_optimizer_mb": weights_mb, "activation_mb": activation_mb,
                                "total_mb": total_mb, "printed": printed.getvalue().strip().splitlines()[-1]})
    with open(sys.argv[1], "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
