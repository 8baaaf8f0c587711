"""The validation networks, in plain PyTorch, with the module names nnmem's
specs use (per-layer figures are matched by qualified module name).

NETWORKS: name -> Net(build, input_shape (per sample), input_dtype, loss,
batches).  Losses: 'cross_entropy' (int64 targets of shape [N], classes =
last dim of the output), 'mse' (float target shaped like the output),
'mean' (loss = out.mean(), no target), 'nll' (like cross_entropy), 'l1' and
'bce_with_logits' (like mse; bce's target in [0, 1]), 'causal_lm' (transformers' ForCausalLMLoss:
the [B * T] targets read as labels [B, T], shifted; the logits upcast to float32).  A model with several outputs has a list
of (kind, weight) terms, one per output (measure.py sums them as `w1 * l1 + w2 * l2`, a weight
None adding its loss as it is); own_loss: the model computes the loss itself from the targets
(Hugging Face's labels=...).
"""
from dataclasses import dataclass
from typing import Callable, List, Optional, Tuple, Union


import torch.nn as nn
import torch.nn.functional as F


# --------------------------------------------------------------------------
# Networks from the outside world
# --------------------------------------------------------------------------

class SeedConv(nn.Module):
    """conv0, conv1 (the project's first example)."""

    def __init__(self):
        super().__init__()
        self.conv0 = nn.Conv2d(1, 16, 3, padding=5)
        self.conv1 = nn.Conv2d(16, 32, 3)

    def forward(self, x):
        return self.conv1(self.conv0(x))


class Davenet(nn.Module):
    """DAVEnet audio CNN, dharwath/DAVEnet-pytorch models/AudioModels.py
    (embedding_dim=1024).  Input (N, 40, 1024) -> output (N, 1024, 64)."""

    def __init__(self, embedding_dim=1024):
        super().__init__()
        self.batchnorm1 = nn.BatchNorm2d(1)
        self.conv1 = nn.Conv2d(1, 128, kernel_size=(40, 1), stride=(1, 1), padding=(0, 0))
        self.conv2 = nn.Conv2d(128, 256, kernel_size=(1, 11), stride=(1, 1), padding=(0, 5))
        self.conv3 = nn.Conv2d(256, 512, kernel_size=(1, 17), stride=(1, 1), padding=(0, 8))
        self.conv4 = nn.Conv2d(512, 512, kernel_size=(1, 17), stride=(1, 1), padding=(0, 8))
        self.conv5 = nn.Conv2d(512, embedding_dim, kernel_size=(1, 17), stride=(1, 1), padding=(0, 8))
        self.pool = nn.MaxPool2d(kernel_size=(1, 3), stride=(1, 2), padding=(0, 1))

    def forward(self, x):
        if x.dim() == 3:
            x = x.unsqueeze(1)
        x = self.batchnorm1(x)
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = self.pool(x)
        x = F.relu(self.conv3(x))
        x = self.pool(x)
        x = F.relu(self.conv4(x))
        x = self.pool(x)
        x = F.relu(self.conv5(x))
        x = self.pool(x)
        x = x.squeeze(2)
        return x


# The other networks, by family (each file's docstring says which)
from networks_vision import resnet18, resnet50, vgg16, DavenetVGG16, TfMnistCnn, SimpleCNN, lenet5  # noqa: E402
from networks_small import (BnReluCnn, Mlp, ResidualNet, ConcatNet, ConcatFork, FrozenBackbone,  # noqa: E402
                            ActivationsNet, UNetSmall, SeNet, RmsMlp, T5LayerNorm, torch_rms_norm)
from networks_efficientnet import EfficientNetB0  # noqa: E402
from networks_layers import (ZooNet, ZooSeq, ZooMlp, ZooTorch2, GruTagger, LstmSeq, RnnCells,  # noqa: E402
                             LM_VOCAB, BowSparse, LstmLM)
from networks_transformers import (HF_VOCAB, HF_SEQ, hf_model, lm_logits, bert_pooled, GPT2_VOCAB, gpt2_124m,  # noqa: E402
                                   gpt2_124m_logits, T5_VOCAB, t5_small, t5_small_loss,
                                   bert_pretraining, t5_loss, vit_logits, TorchEncoder, TorchDecoder,
                                   MaskedAttention)


# --------------------------------------------------------------------------

@dataclass
class Net:
    build: Callable[[], nn.Module]
    input_shape: Tuple[int, ...]     # per sample
    input_dtype: str
    loss: Union[str, List[Tuple[str, Optional[float]]]]  # a kind, or (kind, weight) per output
    batches: List[int]
    call: Optional[Callable] = None  # (model, x) -> the output tensor(s), when model(x) is not it
    vocab: int = 0                   # int64 inputs: ids in [0, vocab)
    own_loss: bool = False           # call(model, x, targets) returns an output whose .loss is the loss
    optimizers: Optional[List[str]] = None  # the plain grid's, when not run_all's OPTIMIZERS (a sparse gradient: SGD only)


def _hf_net(kind, impl):
    if kind == "t5":
        return Net(hf_model(kind, impl), (HF_SEQ,), "int64", "cross_entropy", [2], t5_loss, HF_VOCAB, own_loss=True)
    if kind == "vit":
        return Net(hf_model(kind, impl), (3, 32, 32), "float32", "cross_entropy", [2], vit_logits)
    pooled = kind in ("bert", "roberta")
    call = bert_pooled if pooled else lm_logits
    # A causal LM's loss is the one its forward computes with labels=: transformers' ForCausalLMLoss
    # (measure.py's causal_lm: logits.float(), the labels padded and shifted, cross_entropy with
    # ignore_index -100), here on the logits after the model returns, as a loop that drops the
    # model's output before backward (Trainer's compute_loss) has it. In float32 and under autocast
    # the figures are plain cross_entropy's (.float() a no-op or autocast's own cast; the shifted
    # labels transients of the loss); as a 16-bit model the float32 logits are the loss's.
    # (With labels=, the loss runs while the model's DynamicCache still holds its k and v copies,
    # and an output kept through backward keeps them: not this loop's step.)
    return Net(hf_model(kind, impl), (HF_SEQ,), "int64", "mean" if pooled else "causal_lm", [2], call,
               HF_VOCAB)


NETWORKS = {
    "seed_conv": Net(SeedConv, (1, 32, 32), "float32", "mean", [1]),
    "seed_conv_256": Net(SeedConv, (1, 256, 256), "float32", "mean", [16]),
    "tf_mnist_cnn": Net(TfMnistCnn, (1, 28, 28), "float32", "cross_entropy", [1, 128]),
    "simple_cnn_fixed": Net(SimpleCNN, (1, 28, 28), "float32", "cross_entropy", [1, 32]),
    "lenet5": Net(lenet5, (1, 32, 32), "float32", "cross_entropy", [1, 64]),
    "bn_relu_cnn": Net(BnReluCnn, (3, 32, 32), "float32", "cross_entropy", [8]),
    "mlp": Net(Mlp, (784,), "float32", "cross_entropy", [64]),
    "residual_net": Net(ResidualNet, (3, 32, 32), "float32", "cross_entropy", [8]),
    "concat_net": Net(ConcatNet, (3, 32, 32), "float32", "cross_entropy", [8]),
    "concat_fork": Net(ConcatFork, (3, 32, 32), "float32", "cross_entropy", [8]),
    "frozen_backbone": Net(FrozenBackbone, (3, 32, 32), "float32", "cross_entropy", [8]),
    "activations_net": Net(ActivationsNet, (256,), "float32", "mse", [16]),
    "unet_small": Net(UNetSmall, (3, 32, 32), "float32", "mse", [4]),
    "se_net": Net(SeNet, (3, 32, 32), "float32", "cross_entropy", [8]),
    "resnet18": Net(resnet18, (3, 224, 224), "float32", "cross_entropy", [1, 4]),
    "davenet_audio": Net(Davenet, (40, 1024), "float32", "mean", [1, 8]),
    "davenet_vgg16": Net(DavenetVGG16, (3, 224, 224), "float32", "mean", [1]),
    "vgg16": Net(vgg16, (3, 224, 224), "float32", "cross_entropy", [1, 2]),
    "resnet50": Net(resnet50, (3, 224, 224), "float32", "cross_entropy", [2]),
    "zoo_net": Net(ZooNet, (3, 16, 16), "float32", "bce_with_logits", [4]),
    "zoo_seq": Net(ZooSeq, (4, 32), "float32", "l1", [8]),
    "zoo_mlp": Net(ZooMlp, (64,), "float32", "nll", [16]),
    "efficientnet_b0": Net(EfficientNetB0, (3, 224, 224), "float32", "cross_entropy", [2]),
    "zoo_torch2": Net(ZooTorch2, (4, 8, 8), "float32", "huber", [4]),  # torch 2.x only
    "rnn_cells": Net(RnnCells, (16,), "float32", "cross_entropy", [8]),
    "gru_tagger": Net(GruTagger, (12, 16), "float32", "mse", [4]),
    "lstm_seq": Net(LstmSeq, (12, 16), "float32", "mse", [4]),
    "lstm_lm": Net(LstmLM, (12,), "int64", "cross_entropy", [4], vocab=LM_VOCAB),
    "bow_sparse": Net(BowSparse, (16,), "int64", "cross_entropy", [4, 16], vocab=500, optimizers=["sgd"]),
    "lstm_lm_smoothed": Net(LstmLM, (12,), "int64", "cross_entropy_smoothed", [4], vocab=LM_VOCAB),  # label_smoothing 0.1
    "lstm_lm_shifted": Net(LstmLM, (12,), "int64", "causal_lm", [4], vocab=LM_VOCAB),  # HF's shifted labels
    "torch_encoder": Net(TorchEncoder, (8, 32), "float32", "mean", [4]),
    "torch_encoder_prenorm": Net(lambda: TorchEncoder(norm_first=True), (8, 32), "float32", "mean", [4]),
    "torch_decoder": Net(TorchDecoder, (8, 32), "float32", "mean", [4]),
    "torch_encoder_long": Net(TorchEncoder, (128, 32), "float32", "mean", [2]),
    "mha_masked": Net(MaskedAttention, (8, 32), "float32", "mean", [4]),
    "rms_mlp": Net(RmsMlp, (16, 64), "float32", "mean", [4]),
    "rms_mlp_torch": Net(lambda: RmsMlp(torch_rms_norm), (16, 64), "float32", "mean", [4]),
    "rms_mlp_t5": Net(lambda: RmsMlp(T5LayerNorm), (16, 64), "float32", "mean", [4]),
    # GPT-2 itself (124M), 64 tokens, SGD: at batch 2 the step's peak is where backward ends, as
    # the tied wte's two gradients are summed (lm_head's is a view: out of place in 2.x).
    "gpt2_124m": Net(gpt2_124m, (64,), "int64", "causal_lm", [2], gpt2_124m_logits, GPT2_VOCAB, optimizers=["sgd"]),
    # t5-small itself (60M), 64 tokens, SGD, batch 1: its shared embedding has three uses, lm_head's
    # gradient (a view) first, then the decoder's and the encoder's.
    "t5_small": Net(t5_small, (64,), "int64", "cross_entropy", [1], t5_small_loss, T5_VOCAB, own_loss=True,
                    optimizers=["sgd"]),
}
NETWORKS.update({"hf_%s_%s" % (kind, impl): _hf_net(kind, impl)
                 for kind in ("gpt2", "llama", "bert", "vit", "roberta", "mixtral", "t5") for impl in ("sdpa", "eager")})
# BertForPreTraining: masked-LM scores [B * T, vocab] and next-sentence scores [B, 2], each with
# cross-entropy, summed by the model itself.
NETWORKS.update({name: Net(hf_model("bert_pretraining", impl), (HF_SEQ,), "int64",
                           [("cross_entropy", None), ("cross_entropy", None)], [2], bert_pretraining,
                           HF_VOCAB, own_loss=True)
                 for name, impl in (("hf_bert_pretraining", "sdpa"), ("hf_bert_pretraining_eager", "eager"))})
# NETWORKS is ordered light to heavy; run_all.py keeps this order.

from networks_zoo import UNet, DiffusionUNet, YoloV8, MultiHeadNet  # noqa: E402  (issue 13's examples, small)
from networks_yolo11 import Yolo11  # noqa: E402  (issue 15's Ultralytics YOLO11)
NETWORKS.update({
    "unet_valid": Net(UNet, (1, 188, 188), "float32", "cross_entropy", [2]),        # unet.yaml, image 188, base 8
    "diffusion_unet": Net(DiffusionUNet, (3, 16, 16), "float32", "mse", [4]),    # ch 32, groups 8, image 16
    "yolov8n": Net(YoloV8, (3, 64, 64), "float32", "mean", [2]),                # YOLOv8n at 64x64
    "yolo11n": Net(Yolo11, (3, 64, 64), "float32", "mean", [2]),                 # YOLO11n at 64x64
    "multihead_net": Net(MultiHeadNet, (3, 32, 32), "float32", [("cross_entropy", 1.0), ("smooth_l1", 0.5)], [4]),
})

from networks_convnext import convnext_valid  # noqa: E402  (torchvision's ConvNeXt, small)
NETWORKS["convnext_valid"] = Net(convnext_valid, (3, 32, 32), "float32", "cross_entropy", [4])  # c 16, depths 3, 3, 3, 3

from networks_scaling import SCALING_NETWORKS  # noqa: E402  (checkpointing, accumulation, DDP)
NETWORKS.update({name: Net(*args) for name, args in SCALING_NETWORKS.items()})
