#!/usr/bin/python3
"""Regenerate validation/fixtures/torch-VERSION/NETWORK.json: for every network, batch
size, optimizer (sgd, momentum, adam) and zero_grad mode (set_to_none True/False), run
measure.py in a fresh process and collect its JSON; at the first batch also the variant
runs of that torch version (bfloat16 autocast, the optimizers' foreach and fused
implementations, AdamW).

  /usr/bin/python3 validation/run_all.py --torch 1.13 --jobs 2     (torch 1.13: Debian's)
  /usr/bin/python3 validation/run_all.py --torch 2.13 --jobs 2     (torch 2.13: /work/venv213)
  ... [--only resnet18,mlp] [--skip-done] [--extra-only] [--parallel-only] [--python PATH]
  ... --summary                                                     (table of headline figures)

--torch picks the interpreter that measures (TORCH_PYTHON, or --python); without it, the
interpreter running this script measures.  The fixture directory is named after the torch
version the measuring interpreter reports (major.minor), so fixtures always land where
their version belongs.
"""
import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from networks import NETWORKS  # noqa: E402

OPTIMIZERS = ["sgd", "momentum", "adam"]
MODES = [True, False]           # zero_grad(set_to_none=...)
AMP_NETWORKS = ["tf_mnist_cnn", "lenet5", "bn_relu_cnn", "mlp", "residual_net", "concat_net",
                "frozen_backbone", "resnet18", "zoo_mlp", "efficientnet_b0",
                "unet_valid", "yolov8n", "yolo11n", "gru_tagger", "lstm_seq", "lstm_lm", "rnn_cells",
                "mha_masked", "torch_encoder", "torch_encoder_prenorm", "torch_encoder_long", "torch_decoder", "rms_mlp",
                "rms_mlp_t5"]
# (CPU bfloat16 lacks hardtanh's backward in 1.13: ReLU6, Hardtanh; so not zoo_net, zoo_seq;
# and 1.13's group_norm and layer_norm refuse a bfloat16 input beside float32 weights,
# "expected scalar type BFloat16 but found Float": not diffusion_unet, convnext_valid; nnmem
# refuses them too, validation/probe_autocast_113.py, ops_saved_autocast.md. The
# recurrent networks run under autocast in both versions: gru_tagger's generic GRU (per-step
# matmuls in bfloat16, states in float32), the LSTMs (1.13's generic one, 2.13's oneDNN one in
# bfloat16), and the cells (rnn_cells: LSTMCell and GRUCell alike, per step); mha_masked,
# nn.MultiheadAttention self-attention in bfloat16 after one cast of its input and weights;
# the torch_encoder networks, nn.TransformerEncoderLayer's pieces, 2.13's attention with dropout
# on sdpa's math composite, which runs in float32 on q, k, v cast from bfloat16; torch_decoder
# too, its cross-attention casting in_proj_weight's query rows and key/value rows at each call)
AMP_OPTIMIZERS = ["sgd", "adam"]
# The optimizers' multi-tensor implementation (foreach=True), at the first batch; and
# AdamW (decoupled weight decay 0.01), single-tensor and foreach.
FOREACH_NETWORKS = ["tf_mnist_cnn", "mlp", "bn_relu_cnn", "resnet18", "efficientnet_b0",
                    "unet_valid", "diffusion_unet", "yolov8n", "yolo11n", "convnext_valid", "lstm_lm", "gru_tagger"]
FOREACH_OPTIMIZERS = ["momentum", "adam"]
ADAMW_VARIANTS = [("adamw", None), ("adamw", "foreach")]
# torch 2.13: a representative subset (linear, conv + dropout, BN, residual forks,
# concatenation, frozen layers, in-place activations, a big model) runs every optimizer
# implementation at its first batch; SGD/momentum/Adam/AdamW with foreach, and fused (the
# CPU build has fused SGD, Adam and AdamW), AdamW single-tensor too.
OPTIM_NETWORKS_2 = ["tf_mnist_cnn", "mlp", "bn_relu_cnn", "residual_net", "concat_net",
                    "frozen_backbone", "activations_net", "resnet18", "unet_valid", "diffusion_unet", "yolov8n",
                    "yolo11n", "convnext_valid", "lstm_lm", "gru_tagger"]
OPTIM_VARIANTS_2 = [("sgd", "foreach"), ("sgd", "fused"), ("momentum", "foreach"), ("momentum", "fused"),
                    ("adam", "foreach"), ("adam", "fused"),
                    ("adamw", None), ("adamw", "foreach"), ("adamw", "fused")]
# Under 2.13 autocast runs for more networks: activations_net (2.13's CPU bfloat16 kernels
# have ReLU6's backward, 1.13's do not), se_net and unet_small, and issue 13's diffusion U-Net
# and ConvNeXt (1.13's group_norm and layer_norm cannot mix the dtypes); issue 13's zoo_net and
# zoo_seq (Hardtanh's bfloat16 backward; PReLU, which 2.x's CPU autocast casts to bfloat16 with
# its weight, keeping the weight's copy) and zoo_torch2 (2.x's layers); and simple_cnn_fixed,
# seed_conv_256, davenet_audio, the LSTM LM's label-smoothing and shifted-label losses and the big
# CNNs (DAVEnet's VGG16, VGG16, ResNet-50). Not the Transformer layers (nnmem refuses
# nn.MultiheadAttention under autocast) nor rnn_cells (above).
AMP_NETWORKS_2 = AMP_NETWORKS + ["activations_net", "se_net", "unet_small", "diffusion_unet", "convnext_valid",
                                 "seed_conv", "concat_fork", "multihead_net", "zoo_net", "zoo_seq", "zoo_torch2",
                                 "simple_cnn_fixed", "seed_conv_256", "davenet_audio", "lstm_lm_smoothed", "lstm_lm_shifted",
                                 "davenet_vgg16", "vgg16", "resnet50", "rms_mlp_torch"]
# float16 CPU autocast (torch 2.x only: 1.13's CPU autocast takes bfloat16 alone), at the first
# batch, SGD and Adam: the small networks, the generic GRU and the cells, MultiheadAttention and
# the Transformer layers, the vision zoo, Hugging Face's models. Not oneDNN's LSTM: torch 2.13
# refuses it here ("could not create a primitive descriptor for the LSTM forward propagation
# primitive"), and so does nnmem.
AMP16_NETWORKS_2 = ["mlp", "bn_relu_cnn", "resblock_cnn", "gru_tagger", "rnn_cells", "mha_masked", "lenet5", "se_net",
                    "zoo_net", "zoo_seq", "activations_net", "concat_fork", "concat_net", "residual_net", "frozen_backbone",
                    "davenet_audio", "efficientnet_b0", "convnext_valid", "unet_valid", "diffusion_unet", "yolov8n",
                    "yolo11n", "torch_encoder", "hf_gpt2_sdpa", "hf_gpt2_eager", "hf_llama_sdpa", "hf_bert_sdpa",
                    "hf_t5_sdpa", "hf_vit_sdpa", "rms_mlp", "rms_mlp_torch", "rms_mlp_t5"]
# A 16-bit model (`model.to(dtype)`, no autocast; torch 2.x), at the first batch, SGD and Adam:
# cross-entropy networks, nn.MultiheadAttention with masks, Hugging Face's BERT, GPT-2 and
# LLaMA (sdpa and eager; their loss HF's ForCausalLMLoss, on float32 logits), T5 (sdpa and
# eager; in float16 its blocks' clamps) and Mixtral (its router's softmax, top-k weights and
# their gathers float32: layers/moe.cpp), in bfloat16 and float16. Not the recurrent ones: nnmem
# refuses a 16-bit RNN, GRU or LSTM on the CPU (measured off; layers/recurrent.cpp).
DTYPE_NETWORKS_2 = ["mlp", "tf_mnist_cnn", "bn_relu_cnn", "lenet5", "resblock_mlp", "resnet18", "efficientnet_b0",
                    "convnext_valid", "unet_valid", "yolov8n", "torch_encoder", "mha_masked", "hf_bert_sdpa",
                    "hf_gpt2_sdpa", "hf_gpt2_eager", "hf_llama_sdpa", "hf_llama_eager", "hf_t5_sdpa", "hf_t5_eager", "rms_mlp",
                    "rms_mlp_torch", "rms_mlp_t5", "hf_mixtral_sdpa"]
# Networks of modules torch 1.13 does not have (nn.RMSNorm came in 2.4) or that need transformers:
# measured on 2.x only.
TORCH2_NETWORKS = ["rms_mlp_torch", "gpt2_124m", "t5_small"]
# Under 1.13 in bfloat16 only (its CPU addmm has no float16 kernel) and not unet_valid (1.13's
# bfloat16 ConvTranspose2d fails in forward: "expected input[2, 128, 4, 4] to have 64 channels,
# but got 128 channels") nor the Hugging Face models (no transformers for 1.13); and lstm_lm, whose LSTM 1.13 runs on
# the generic path (2.x's oneDNN one nnmem refuses in 16 bits).
DTYPE_NETWORKS_113 = [n for n in DTYPE_NETWORKS_2 if n not in ["unet_valid"] + TORCH2_NETWORKS and not n.startswith("hf_")] + \
    ["lstm_lm"]
# Hugging Face transformers models (torch 2.x only: 1.13 has no transformers that builds them):
# the plain grid and AdamW's single-tensor loop; SGD and Adam under autocast for GPT-2, LLaMA, BERT
# (BertModel and BertForPreTraining), T5 and ViT, both attention implementations. Those nnmem is
# exact on run by default.
HF_NETWORKS = ["hf_gpt2_sdpa", "hf_llama_sdpa", "hf_bert_sdpa", "hf_bert_pretraining", "hf_bert_pretraining_eager", "hf_vit_sdpa",
               "hf_roberta_sdpa", "hf_mixtral_sdpa",
               "hf_gpt2_eager", "hf_llama_eager", "hf_bert_eager", "hf_vit_eager", "hf_t5_sdpa", "hf_t5_eager"]
# hf_vit_eager too: its softmax(dtype=float32) keeps float32 probabilities beside bfloat16 weights
# (Softmax's dtype).
HF_AMP_NETWORKS = ["hf_gpt2_sdpa", "hf_gpt2_eager", "hf_llama_sdpa", "hf_llama_eager", "hf_bert_sdpa", "hf_bert_eager",
                   "hf_vit_sdpa", "hf_vit_eager", "hf_t5_sdpa", "hf_t5_eager", "hf_bert_pretraining", "hf_bert_pretraining_eager",
                   "hf_roberta_sdpa", "hf_mixtral_sdpa"]
HF_VARIANTS_2 = [("adamw", None)]
# Issues 11 and 13 ask their networks for the grid SGD and AdamW x both zero_grad modes x float32
# and bfloat16 autocast (where the version runs them under autocast): the runs below complete it
# (the plain grid has SGD both ways, the variants AdamW with set_to_none, autocast SGD and Adam with it).
GRID_NETWORKS = HF_AMP_NETWORKS + ["torch_encoder", "torch_encoder_prenorm", "torch_encoder_long", "torch_decoder",
                                   "mha_masked", "efficientnet_b0", "convnext_valid", "unet_valid", "diffusion_unet",
                                   "lstm_lm", "gru_tagger", "yolov8n", "yolo11n"]
# Activation checkpointing and gradient accumulation, on the networks made for them
# (networks_scaling.py), at their first batch, under both versions: (optimizer, set_to_none,
# measure.py's arguments). Reentrant checkpointing only of the blocks: their inputs need a
# gradient (a segment fed by the network's input would leave its parameters without one); and
# groups that do not start at resblock_cnn's in-place stem_relu (PyTorch refuses to recompute
# from an input overwritten in place, and so does nnmem).
SCALING_NETWORKS = ["resblock_mlp", "resblock_cnn"]
_NR, _R = ("--checkpoint-impl", "non-reentrant"), ("--checkpoint-impl", "reentrant")
SCALING_VARIANTS = [
    ("sgd", True, ("--checkpoint", "blocks") + _NR),
    ("adam", True, ("--checkpoint", "blocks") + _NR),
    ("sgd", True, ("--checkpoint", "blocks") + _R),
    ("adam", True, ("--checkpoint", "blocks") + _R),
    ("momentum", False, ("--checkpoint", "every:3") + _NR),
    ("sgd", True, ("--checkpoint", "blocks") + _R + ("--loop", "function")),
    ("adam", True, ("--checkpoint", "every:4") + _NR + ("--loop", "function")),
    ("sgd", True, ("--grad-accum", "2")),
    ("adam", True, ("--grad-accum", "3")),
    ("momentum", False, ("--grad-accum", "2")),
    ("adam", True, ("--grad-accum", "4", "--loop", "function")),
    ("adam", True, ("--grad-accum", "3", "--checkpoint", "blocks") + _NR),
    ("momentum", True, ("--grad-accum", "2", "--checkpoint", "blocks") + _R),
]
# Gradient accumulation with the regression and binary losses too, whose loss tensor is not the
# 0-dim one the step binds (`loss / K` is): (optimizer, set_to_none, measure.py's arguments).
ACCUM_NETWORKS = ["gru_tagger", "activations_net", "zoo_seq", "zoo_net"]
ACCUM_VARIANTS = [("sgd", True, ("--grad-accum", "2")), ("adam", True, ("--grad-accum", "3"))]
# Some of the same under bfloat16 autocast: each recomputation re-enters autocast and casts the
# parameters again, and leaving it drops those copies from autocast's cache; and accumulating
# with kept gradients, the 16-bit gradients cast back into float32 .grad each micro-step.
SCALING_AMP_VARIANTS = [
    ("sgd", True, ("--checkpoint", "blocks") + _NR),
    ("adam", True, ("--checkpoint", "blocks") + _R),
    ("adam", True, ("--checkpoint", "every:3") + _NR),
    ("momentum", True, ("--grad-accum", "2", "--checkpoint", "blocks") + _NR),
    ("adam", True, ("--checkpoint", "blocks") + _R + ("--loop", "function")),
    ("momentum", False, ("--grad-accum", "2")),
]
# Megatron's selective recomputation (every F.scaled_dot_product_attention call checkpointed,
# non-reentrant) on GPT-2, whose DynamicCache copies of k and v the checkpoint keeps.
HF_SELECTIVE_NETWORKS = ["hf_gpt2_sdpa"]
HF_SELECTIVE_VARIANTS = [("sgd", True, ("--checkpoint", "selective") + _NR),
                         ("adam", True, ("--checkpoint", "selective") + _NR)]
# Data parallelism (measure_dist.py: ranks in processes of their own, gloo), on the same
# networks at their first batch, under both versions: DDP with its default buckets, with a small
# bucket_cap_mb (several buckets; 2.13 then sizes the first bucket like the rest, 1.13 keeps it
# at 1 MiB), over three ranks, with accumulation and kept gradients.
PARALLEL_VARIANTS = [
    ("adam", True, ("--nproc", "2", "--parallel", "ddp")),
    ("sgd", True, ("--nproc", "3", "--parallel", "ddp", "--bucket-cap-mb", "0.05")),
    ("momentum", False, ("--nproc", "2", "--parallel", "ddp", "--bucket-cap-mb", "0.4", "--grad-accum", "2")),
]
# FSDP2 (torch 2.13 only: 1.13's FSDP needs CUDA): fully_shard on each unit, FULL_SHARD over two
# and three ranks (three: shards padded unevenly), SHARD_GRAD_OP, with accumulation.
PARALLEL_VARIANTS_2 = [
    ("adam", True, ("--nproc", "2", "--parallel", "fsdp2")),
    ("sgd", True, ("--nproc", "3", "--parallel", "fsdp2")),
    ("adam", True, ("--nproc", "2", "--parallel", "fsdp2-grad-op")),
    ("momentum", True, ("--nproc", "2", "--parallel", "fsdp2", "--grad-accum", "2")),
]
# Where each torch version's interpreter lives (--torch V runs measure.py with it).
TORCH_PYTHON = {"1.13": "/usr/bin/python3", "2.13": "/work/venv213/bin/python"}
# Per-run fields that depend on the batch only: stored once per batch.
PER_BATCH = ("layers", "output_shape")
# Fields that vary from run to run (timing): not stored.
VOLATILE = ("wall_seconds_measured",)
# Variant fields stored only when set (a plain run has neither): readers use .get().
OPTIONAL = ("amp", "fused")


def _flat(o):
    """True for numbers, strings, None and (nested) lists of those."""
    return not isinstance(o, dict) and (not isinstance(o, list) or all(map(_flat, o)))


def dumps(o, ind=0):
    """Indented JSON with sorted keys; lists without dicts (shapes, op
    names) stay on one line, so fixtures are readable and diffs small."""
    if _flat(o):
        return json.dumps(o)
    pad = " " * (ind + 1)
    if isinstance(o, dict):
        items = [f"{pad}{json.dumps(k)}: {dumps(o[k], ind + 1)}" for k in sorted(o)]
        return "{\n" + ",\n".join(items) + "\n" + " " * ind + "}" if items else "{}"
    return "[\n" + ",\n".join(pad + dumps(v, ind + 1) for v in o) + "\n" + " " * ind + "]"


PYTHON = sys.executable         # the measuring interpreter (--torch / --python)
VERSION = None                  # its torch version, major.minor (set by main)


def torch_version(python):
    """major.minor of the torch that `python` imports."""
    out = subprocess.run([python, "-c", "import torch; print(torch.__version__)"], capture_output=True,
                         text=True, check=True, cwd=HERE).stdout.strip()
    return ".".join(out.split(".")[:2])


def measure(network, batch, optimizer, set_to_none, amp=None, impl=None, extra=()):
    """impl: None (the single-tensor loop), 'foreach' or 'fused'; extra: more measure.py
    arguments (checkpointing, accumulation, the loop)."""
    script = "measure_dist.py" if "--parallel" in extra else "measure.py"
    cmd = [PYTHON, os.path.join(HERE, script), network, "--batch", str(batch),
           "--optimizer", optimizer, "--set-to-none" if set_to_none else "--keep-grads"]
    if amp:
        cmd += ["--amp", amp]
    if impl:
        cmd.append("--" + impl)
    cmd += list(extra)
    t = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{p.stderr}")
    return json.loads(p.stdout), time.time() - t


def fixture_path(network, version=None):
    return os.path.join(HERE, "fixtures", "torch-" + (version or VERSION), network + ".json")


def is_done(network):
    try:
        with open(fixture_path(network)) as f:
            fx = json.load(f)
    except (OSError, ValueError):
        return False
    return len(fx.get("runs", [])) == len(combos(network))


def combos(network, extra_only=False, parallel_only=False):
    """(batch, optimizer, set_to_none, amp, impl, extra) of every run of a network under VERSION."""
    net = NETWORKS[network]
    b0 = net.batches[0]
    dist_variants = PARALLEL_VARIANTS + (PARALLEL_VARIANTS_2 if VERSION != "1.13" else [])
    parallel = [(b0, o, s, None, None, x) for o, s, x in dist_variants] if network in SCALING_NETWORKS else []
    if parallel_only:
        return parallel
    plain = [] if extra_only else [(b, o, s, None, None, ()) for b in net.batches for o in net.optimizers or OPTIMIZERS
                                   for s in MODES]
    if VERSION == "1.13":
        amp = [(b0, o, True, "bfloat16", None, ()) for o in AMP_OPTIMIZERS] if network in AMP_NETWORKS else []
        amp += [(b0, o, True, None, None, ("--dtype", "bfloat16")) for o in AMP_OPTIMIZERS] if network in DTYPE_NETWORKS_113 else []
        variants = [(b0, o, True, None, "foreach", ()) for o in FOREACH_OPTIMIZERS] + \
            [(b0, o, True, None, i, ()) for o, i in ADAMW_VARIANTS] if network in FOREACH_NETWORKS else []
    else:
        amp = [(b0, o, True, "bfloat16", None, ()) for o in AMP_OPTIMIZERS] \
            if network in AMP_NETWORKS_2 + HF_AMP_NETWORKS else []
        amp += [(b0, o, True, "float16", None, ()) for o in AMP_OPTIMIZERS] if network in AMP16_NETWORKS_2 else []
        amp += [(b0, o, True, None, None, ("--dtype", d)) for d in ("bfloat16", "float16") for o in AMP_OPTIMIZERS] \
            if network in DTYPE_NETWORKS_2 else []
        variants = [(b0, o, True, None, i, ()) for o, i in
                    (OPTIM_VARIANTS_2 if network in OPTIM_NETWORKS_2 else HF_VARIANTS_2 if network.startswith("hf_") else [])]
    scaling = [(b0, o, s, None, None, x) for o, s, x in SCALING_VARIANTS] + \
        [(b0, o, s, "bfloat16", None, x) for o, s, x in SCALING_AMP_VARIANTS] if network in SCALING_NETWORKS else []
    if network in ACCUM_NETWORKS:
        scaling += [(b0, o, s, None, None, x) for o, s, x in ACCUM_VARIANTS]
    if VERSION != "1.13" and network in HF_SELECTIVE_NETWORKS:
        scaling += [(b0, o, s, None, None, x) for o, s, x in HF_SELECTIVE_VARIANTS]
    runs = plain + amp + variants + scaling + parallel
    if network in GRID_NETWORKS:
        amp_ok = network in (AMP_NETWORKS if VERSION == "1.13" else AMP_NETWORKS_2 + HF_AMP_NETWORKS)
        runs += [c for c in ((b0, o, s, a, None, ()) for o in ("sgd", "adamw") for s in MODES
                             for a in ((None, "bfloat16") if amp_ok else (None,)))
                 if c not in runs and (not extra_only or c[1] != "sgd" or c[3])]
    return runs


def run_key(r):
    """A measured run as combos() names it (runs without measure.py arguments beyond the step's,
    a 16-bit model's --dtype or accumulation's --grad-accum alone)."""
    if any(r.get(k) for k in ("checkpoint", "loop", "parallel")) or (r.get("grad_accum") and r.get("dtype")):
        return None
    extra = ("--dtype", r["dtype"]) if r.get("dtype") else ("--grad-accum", str(r["grad_accum"])) if r.get("grad_accum") else ()
    return (r["batch"], r["optimizer"], r["set_to_none"], r.get("amp"),
            "fused" if r.get("fused") else "foreach" if r.get("foreach") else None, extra)


def run_network(network, jobs, extra_only=False, parallel_only=False, missing_only=False):
    net = NETWORKS[network]
    t0 = time.time()
    runs, per_batch = [], {}
    todo = combos(network, extra_only, parallel_only)
    if missing_only:  # keep every run of the existing fixture, measure the combinations it lacks
        with open(fixture_path(network)) as f:
            old = json.load(f)
        runs, per_batch = old["runs"], old["per_batch"]
        measured = {run_key(r) for r in runs}
        todo = [c for c in todo if (not c[5] or (len(c[5]) == 2 and c[5][0] in ("--dtype", "--grad-accum")))
                and c not in measured]
    elif parallel_only:  # keep every run of the existing fixture but the data-parallel ones
        with open(fixture_path(network)) as f:
            old = json.load(f)
        runs = [r for r in old["runs"] if not r.get("parallel")]
        per_batch = old["per_batch"]
    elif extra_only:  # keep the plain runs of the existing fixture
        with open(fixture_path(network)) as f:
            old = json.load(f)
        runs = [r for r in old["runs"] if not r.get("amp") and not r.get("foreach") and not r.get("fused")
                and not r.get("checkpoint") and not r.get("grad_accum") and not r.get("loop") and not r.get("dtype")
                and r["optimizer"] in OPTIMIZERS]
        per_batch = old["per_batch"]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [(c, pool.submit(measure, network, *c)) for c in todo]
        for (b, o, s, a, f, x), fut in futures:
            r, dt = fut.result()
            print(f"  {network:18s} batch {b:3d} {o:8s} set_to_none={s!s:5s} amp={a!s:8s} impl={f!s:7s} {' '.join(x)} "
                  f"peak {r['peak_bytes']:>13,d} B ({r['peak_phase']})  {dt:5.1f} s", flush=True)
            layers = {k: r.pop(k) for k in PER_BATCH}
            if not a and not x:
                per_batch[str(b)] = layers
            for k in VOLATILE:
                r.pop(k, None)
            if r.get("loss_value") != r.get("loss_value"):  # NaN (a float16 model's Adam step): JSON has no NaN
                r["loss_value"] = None
            for k in OPTIONAL:
                if not r.get(k):
                    r.pop(k, None)
            runs.append(r)
    fx = {"network": network, "torch_version": runs[0]["torch_version"],
          "input_shape": list(net.input_shape), "input_dtype": net.input_dtype,
          "loss": net.loss, "batches": net.batches, "per_batch": per_batch,
          "runs": runs}
    os.makedirs(os.path.dirname(fixture_path(network)), exist_ok=True)
    with open(fixture_path(network), "w") as f:
        f.write(dumps(fx) + "\n")
    print(f"{network}: {len(runs)} runs in {time.time() - t0:.1f} s -> {fixture_path(network)}",
          flush=True)


def summary():
    """Markdown table of the headline figures of the existing fixtures."""
    print(f"torch {VERSION}")
    print("| network | batch | param_bytes | saved_bytes | peak sgd | peak adam | peak phase sgd/adam |")
    print("|---|---|---|---|---|---|---|")
    for n in NETWORKS:
        try:
            with open(fixture_path(n)) as f:
                runs = json.load(f)["runs"]
        except OSError:
            continue
        for b in NETWORKS[n].batches:
            r = {x["optimizer"]: x for x in runs
             if x["batch"] == b and x["set_to_none"] and not x.get("amp") and not x.get("foreach")
             and not x.get("fused") and x["optimizer"] in ("sgd", "adam")}
            s, a = r["sgd"], r["adam"]
            print(f"| {n} | {b} | {s['param_bytes']:,} | {s['saved_bytes']:,} | {s['peak_bytes']:,} | "
                  f"{a['peak_bytes']:,} | {s['peak_phase']}/{a['peak_phase']} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--only", help="comma-separated network names")
    ap.add_argument("--skip-done", action="store_true", help="skip networks whose fixture is complete")
    ap.add_argument("--jobs", type=int, default=1, help="measurements run in parallel (default 1)")
    ap.add_argument("--summary", action="store_true", help="print a table of the fixtures and exit")
    ap.add_argument("--extra-only", action="store_true",
                    help="redo only the variant runs (autocast, foreach, fused, adamw) of existing fixtures")
    ap.add_argument("--parallel-only", action="store_true",
                    help="redo only the data-parallel runs (measure_dist.py) of existing fixtures")
    ap.add_argument("--missing-only", action="store_true",
                    help="keep every run of existing fixtures, measure only the combinations they lack")
    ap.add_argument("--torch", choices=sorted(TORCH_PYTHON),
                    help="measure with this torch version's interpreter (default: the one running this)")
    ap.add_argument("--python", help="measure with this interpreter instead")
    args = ap.parse_args()
    global PYTHON, VERSION
    if args.python:
        PYTHON = args.python
    elif args.torch:
        PYTHON = TORCH_PYTHON[args.torch]
    VERSION = torch_version(PYTHON)
    if args.torch and VERSION != args.torch:
        ap.error(f"{PYTHON} has torch {VERSION}, not {args.torch}")
    if args.summary:
        return summary()
    names = [n for n in NETWORKS if VERSION != "1.13" and (not n.startswith("hf_") or n in HF_NETWORKS)
             or VERSION == "1.13" and not n.startswith("hf_") and n not in TORCH2_NETWORKS]
    if args.only:
        wanted = args.only.split(",")
        unknown = set(wanted) - set(NETWORKS)
        if unknown:
            ap.error(f"unknown network(s): {', '.join(sorted(unknown))}")
        names = [n for n in NETWORKS if n in wanted]
    t0 = time.time()
    for n in names:
        if args.parallel_only:
            if combos(n, parallel_only=True):
                run_network(n, args.jobs, parallel_only=True)
            continue
        if args.missing_only:
            run_network(n, args.jobs, missing_only=True)
            continue
        if args.extra_only:
            if combos(n, extra_only=True):
                run_network(n, args.jobs, extra_only=True)
            continue
        if args.skip_done and is_done(n):
            print(f"{n}: done, skipped", flush=True)
            continue
        run_network(n, args.jobs)
    print(f"all done in {time.time() - t0:.1f} s (torch {VERSION}, {PYTHON})", flush=True)


if __name__ == "__main__":
    main()
