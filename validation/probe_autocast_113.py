#!/usr/bin/env python3
"""Which of nnmem's layer families PyTorch cannot run under CPU bfloat16 autocast with a
float32 model (every parameter float32), forward and backward, on the torch this interpreter has:

  /usr/bin/python3 validation/probe_autocast_113.py            # torch 1.13
  /work/venv213/bin/python validation/probe_autocast_113.py    # torch 2.13
  ... --bf16-model     also without autocast, the whole model bfloat16 (.bfloat16())
  ... --f16-model      also without autocast, the whole model float16 (.half()); the layer
                       reads the input itself (1.13's CPU Linear has no float16 kernel)

Each case is a tiny module: a Linear over the last dimension (which autocast runs in
bfloat16, so the layer's input is a bfloat16 tensor that needs a gradient, as in a network),
then the layer, under torch.autocast("cpu", torch.bfloat16); then the sum of its
floating-point outputs, in float32, backward. Each case runs three times: training (forward
and backward), forward only with gradients (to tell a forward failure from a backward one),
and eval under torch.no_grad(). A case whose input does not come from a bfloat16 op (Embedding's
ids, a Parameter, a Constant, a Buffer) is not here: nothing bfloat16 reaches it. Prints one
line per case: ok and the dtype of the layer's output (bfloat16, or float32 when autocast runs
the op in float32), or the phase that raised and the first line of the error. An output whose
shape is not the float32 model's fails too ("wrong shape"): 1.13's bfloat16 ConvTranspose2d with
as many output channels as input channels runs a plain convolution and returns its shape.
"""
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
torch.set_num_threads(1)


class Fn(nn.Module):
    """A module from a function of the bfloat16 input (several inputs made from it where needed)."""

    def __init__(self, fn, **params):
        super().__init__()
        self.fn = fn
        for k, v in params.items():
            setattr(self, k, v)

    def forward(self, x):
        return self.fn(self, x)


def has(name):
    return hasattr(nn, name)


# (label, input shape, module factory). The Linear before it keeps the last dimension.
S1, S2, S3, SEQ = (2, 4, 8), (2, 4, 6, 8), (2, 4, 4, 6, 8), (2, 5, 8)
CASES = [
    ("Linear", SEQ, lambda: nn.Linear(8, 6)),
    ("Conv1D (transformers: addmm)", SEQ, lambda: Fn(lambda m, x: torch.addmm(m.b, x.reshape(-1, 8), m.w),
                                                     w=nn.Parameter(torch.randn(8, 6)), b=nn.Parameter(torch.zeros(6)))),
    ("Conv1d", S1, lambda: nn.Conv1d(4, 4, 3, padding=1)),
    ("Conv2d", S2, lambda: nn.Conv2d(4, 4, 3, padding=1)),
    ("Conv3d", S3, lambda: nn.Conv3d(4, 4, 3, padding=1)),
    ("ConvTranspose1d", S1, lambda: nn.ConvTranspose1d(4, 6, 2, stride=2)),
    ("ConvTranspose2d", S2, lambda: nn.ConvTranspose2d(4, 6, 2, stride=2)),
    ("ConvTranspose2d in = out channels", S2, lambda: nn.ConvTranspose2d(4, 4, 2, stride=2)),
    ("ConvTranspose3d", S3, lambda: nn.ConvTranspose3d(4, 6, 2, stride=2)),
    ("BatchNorm1d", S1, lambda: nn.BatchNorm1d(4)),
    ("BatchNorm2d", S2, lambda: nn.BatchNorm2d(4)),
    ("BatchNorm3d", S3, lambda: nn.BatchNorm3d(4)),
    ("InstanceNorm1d", S1, lambda: nn.InstanceNorm1d(4)),
    ("InstanceNorm1d affine", S1, lambda: nn.InstanceNorm1d(4, affine=True)),
    ("InstanceNorm2d", S2, lambda: nn.InstanceNorm2d(4)),
    ("InstanceNorm2d affine", S2, lambda: nn.InstanceNorm2d(4, affine=True, track_running_stats=True)),
    ("InstanceNorm3d affine", S3, lambda: nn.InstanceNorm3d(4, affine=True)),
    ("GroupNorm", S2, lambda: nn.GroupNorm(2, 4)),
    ("GroupNorm affine=False", S2, lambda: nn.GroupNorm(2, 4, affine=False)),
    ("LayerNorm", SEQ, lambda: nn.LayerNorm(8)),
    ("LayerNorm bias=False (weight only)", SEQ,
     lambda: Fn(lambda m, x: F.layer_norm(x, (8,), m.w, None), w=nn.Parameter(torch.ones(8)))),
    ("LayerNorm elementwise_affine=False", SEQ, lambda: nn.LayerNorm(8, elementwise_affine=False)),
    ("LayerNorm2d (permute, layer_norm, permute)", S2,
     lambda: Fn(lambda m, x: m.ln(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2), ln=nn.LayerNorm(4))),
    ("RMSNorm hf (LlamaRMSNorm)", SEQ,
     lambda: Fn(lambda m, x: m.w * (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype),
                w=nn.Parameter(torch.ones(8)))),
    ("ReLU", SEQ, lambda: nn.ReLU()),
    ("ReLU inplace", SEQ, lambda: nn.ReLU(inplace=True)),
    ("ReLU6", SEQ, lambda: nn.ReLU6()),
    ("ReLU6 inplace", SEQ, lambda: nn.ReLU6(inplace=True)),
    ("Hardtanh", SEQ, lambda: nn.Hardtanh(-2.0, 2.0)),
    ("Hardtanh inplace", SEQ, lambda: nn.Hardtanh(inplace=True)),
    ("Hardsigmoid", SEQ, lambda: nn.Hardsigmoid()),
    ("Hardswish", SEQ, lambda: nn.Hardswish()),
    ("LeakyReLU", SEQ, lambda: nn.LeakyReLU(0.1)),
    ("PReLU", S2, lambda: nn.PReLU(4)),
    ("ELU", SEQ, lambda: nn.ELU()),
    ("CELU", SEQ, lambda: nn.CELU()),
    ("SELU", SEQ, lambda: nn.SELU()),
    ("GELU", SEQ, lambda: nn.GELU()),
    ("GELU tanh", SEQ, lambda: nn.GELU(approximate="tanh")),
    ("NewGELU (python)", SEQ,
     lambda: Fn(lambda m, x: 0.5 * x * (1.0 + torch.tanh(0.7978845608 * (x + 0.044715 * torch.pow(x, 3.0)))))),
    ("GLU", SEQ, lambda: nn.GLU()),
    ("SiLU", SEQ, lambda: nn.SiLU()),
    ("Mish", SEQ, lambda: nn.Mish()),
    ("Sigmoid", SEQ, lambda: nn.Sigmoid()),
    ("Tanh", SEQ, lambda: nn.Tanh()),
    ("Tanhshrink", SEQ, lambda: nn.Tanhshrink()),
    ("LogSigmoid", SEQ, lambda: nn.LogSigmoid()),
    ("Softplus", SEQ, lambda: nn.Softplus()),
    ("Softsign", SEQ, lambda: nn.Softsign()),
    ("Threshold", SEQ, lambda: nn.Threshold(0.1, 0.0)),
    ("Softmax", SEQ, lambda: nn.Softmax(-1)),
    ("Softmax dtype=float32", SEQ, lambda: Fn(lambda m, x: F.softmax(x, -1, dtype=torch.float32))),
    ("LogSoftmax", SEQ, lambda: nn.LogSoftmax(-1)),
    ("Softmin", SEQ, lambda: nn.Softmin(-1)),
    ("Dropout", SEQ, lambda: nn.Dropout(0.2)),
    ("Dropout1d", S1, lambda: nn.Dropout1d(0.2) if has("Dropout1d") else nn.Dropout2d(0.2)),
    ("Dropout2d", S2, lambda: nn.Dropout2d(0.2)),
    ("Dropout3d", S3, lambda: nn.Dropout3d(0.2)),
    ("AlphaDropout", SEQ, lambda: nn.AlphaDropout(0.2)),
    ("DropPath / StochasticDepth (row)", SEQ,
     lambda: Fn(lambda m, x: x * x.new_empty((x.shape[0], 1, 1)).bernoulli_(0.8).div_(0.8))),
    ("MaxPool1d", S1, lambda: nn.MaxPool1d(2)),
    ("MaxPool2d", S2, lambda: nn.MaxPool2d(2)),
    ("MaxPool3d", S3, lambda: nn.MaxPool3d(2)),
    ("AvgPool1d", S1, lambda: nn.AvgPool1d(2)),
    ("AvgPool2d", S2, lambda: nn.AvgPool2d(2)),
    ("AvgPool3d", S3, lambda: nn.AvgPool3d(2)),
    ("AdaptiveAvgPool1d", S1, lambda: nn.AdaptiveAvgPool1d(3)),
    ("AdaptiveAvgPool1d 1", S1, lambda: nn.AdaptiveAvgPool1d(1)),
    ("AdaptiveAvgPool2d", S2, lambda: nn.AdaptiveAvgPool2d(3)),
    ("AdaptiveAvgPool2d 1", S2, lambda: nn.AdaptiveAvgPool2d(1)),
    ("AdaptiveAvgPool3d", S3, lambda: nn.AdaptiveAvgPool3d(3)),
    ("AdaptiveMaxPool1d", S1, lambda: nn.AdaptiveMaxPool1d(3)),
    ("AdaptiveMaxPool2d", S2, lambda: nn.AdaptiveMaxPool2d(3)),
    ("AdaptiveMaxPool3d", S3, lambda: nn.AdaptiveMaxPool3d(3)),
    ("ZeroPad2d", S2, lambda: nn.ZeroPad2d(1)),
    ("ConstantPad1d", S1, lambda: nn.ConstantPad1d(1, 0.5)),
    ("ConstantPad2d", S2, lambda: nn.ConstantPad2d(1, 0.5)),
    ("ConstantPad3d", S3, lambda: nn.ConstantPad3d(1, 0.5)),
    ("ReflectionPad1d", S1, lambda: nn.ReflectionPad1d(1)),
    ("ReflectionPad2d", S2, lambda: nn.ReflectionPad2d(1)),
    ("ReflectionPad3d", S3, lambda: nn.ReflectionPad3d(1)),
    ("ReplicationPad1d", S1, lambda: nn.ReplicationPad1d(1)),
    ("ReplicationPad2d", S2, lambda: nn.ReplicationPad2d(1)),
    ("ReplicationPad3d", S3, lambda: nn.ReplicationPad3d(1)),
    ("CircularPad2d (F.pad circular)", S2, lambda: Fn(lambda m, x: F.pad(x, (1, 1, 1, 1), mode="circular"))),
    ("Upsample nearest", S2, lambda: nn.Upsample(scale_factor=2, mode="nearest")),
    ("Upsample bilinear", S2, lambda: nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)),
    ("Upsample bicubic", S2, lambda: nn.Upsample(scale_factor=2, mode="bicubic", align_corners=False)),
    ("Upsample linear", S1, lambda: nn.Upsample(scale_factor=2, mode="linear", align_corners=False)),
    ("Upsample nearest 1d", S1, lambda: nn.Upsample(scale_factor=2, mode="nearest")),
    ("Upsample nearest 3d", S3, lambda: nn.Upsample(scale_factor=2, mode="nearest")),
    ("Upsample trilinear", S3, lambda: nn.Upsample(scale_factor=2, mode="trilinear", align_corners=False)),
    ("PixelShuffle", S2, lambda: Fn(lambda m, x: F.pixel_shuffle(x, 2))),
    ("PixelUnshuffle", S2, lambda: Fn(lambda m, x: F.pixel_unshuffle(x, 2))),
    ("ChannelShuffle", S2, lambda: nn.ChannelShuffle(2)),
    ("Unfold", S2, lambda: nn.Unfold(3, padding=1)),
    ("Fold", (2, 36, 16), lambda: nn.Fold((4, 4), 3, padding=1)),
    ("Flatten / View / Reshape / Permute / Transpose", S2,
     lambda: Fn(lambda m, x: x.flatten(1).view(2, -1).reshape(2, 4, -1).permute(0, 2, 1).transpose(1, 2))),
    ("Contiguous / Squeeze / Unsqueeze / Select / Slice / Expand", S2,
     lambda: Fn(lambda m, x: x.transpose(1, 2).contiguous().unsqueeze(1).squeeze(1).select(1, 0)[..., 1:5].expand(2, 4, 4))),
    ("Chunk / Split", SEQ, lambda: Fn(lambda m, x: torch.cat(x.chunk(2, -1) + x.split([3, 5], -1), -1))),
    ("RepeatInterleave", SEQ, lambda: Fn(lambda m, x: x.repeat_interleave(2, dim=1))),
    ("Add (with a float32 tensor)", SEQ, lambda: Fn(lambda m, x: x + m.p, p=nn.Parameter(torch.randn(8)))),
    ("Mul (with a float32 tensor)", SEQ, lambda: Fn(lambda m, x: x * m.p, p=nn.Parameter(torch.randn(8)))),
    ("Concat (with a float32 tensor)", SEQ, lambda: Fn(lambda m, x: torch.cat([x, m.p.expand(2, 5, 8)], -1),
                                                     p=nn.Parameter(torch.randn(8)))),
    ("Scale / Neg", SEQ, lambda: Fn(lambda m, x: -(x / 3.0))),
    ("MaskedFill", SEQ, lambda: Fn(lambda m, x: x.masked_fill(torch.arange(8) > 4, -1e4))),
    ("MatMul", SEQ, lambda: Fn(lambda m, x: x @ x.transpose(1, 2))),
    ("Sum / Mean / Amax", SEQ, lambda: Fn(lambda m, x: x.sum(-1) + x.mean(-1) + x.amax(-1))),
    ("To float32", SEQ, lambda: Fn(lambda m, x: x.to(torch.float32))),
    ("MultiheadAttention", SEQ, lambda: Fn(lambda m, x: m.a(x, x, x, need_weights=False)[0],
                                           a=nn.MultiheadAttention(8, 2, batch_first=True))),
    ("ScaledDotProductAttention", (2, 2, 5, 8),
     lambda: Fn(lambda m, x: F.scaled_dot_product_attention(x, x, x)) if hasattr(F, "scaled_dot_product_attention")
     else None),
    ("RNN", SEQ, lambda: nn.RNN(8, 6, batch_first=True)),
    ("GRU", SEQ, lambda: nn.GRU(8, 6, batch_first=True)),
    ("LSTM", SEQ, lambda: nn.LSTM(8, 6, batch_first=True)),
    ("RNNCell", (2, 8), lambda: nn.RNNCell(8, 6)),
    ("GRUCell", (2, 8), lambda: nn.GRUCell(8, 6)),
    ("LSTMCell", (2, 8), lambda: nn.LSTMCell(8, 6)),
]


def outputs(y):
    """The floating-point tensors of a module's result (RNNs return tuples)."""
    if isinstance(y, torch.Tensor):
        return [y] if y.is_floating_point() else []
    return [t for item in y for t in outputs(item)]


def run(shape, make, phase, model_dtype):
    """model_dtype None: float32 parameters under bfloat16 autocast; else the whole model in it."""
    torch.manual_seed(0)
    # (A float16 model's input is a product, not the leaf: an in-place layer may then write it.)
    pre = nn.Linear(shape[-1], shape[-1]) if model_dtype != torch.float16 else Fn(lambda m, x: x * 1)
    layer = make()
    if layer is None:
        return "absent"
    x = torch.randn(*shape)
    with torch.no_grad():
        expected = [tuple(t.shape) for t in outputs(layer(pre(x)))]  # the float32 model's
    if model_dtype is not None:
        pre, layer, x = pre.to(model_dtype), layer.to(model_dtype), x.to(model_dtype)
        x.requires_grad_(model_dtype == torch.float16 and phase != "eval")  # as a Linear's output would
    if phase == "eval":
        pre.eval(), layer.eval()
    with torch.no_grad() if phase == "eval" else torch.enable_grad():
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=model_dtype is None):
            h = pre(x)
            assert h.dtype == (model_dtype or torch.bfloat16)
            y = layer(h)
        found = [tuple(t.shape) for t in outputs(y)]
        if found != expected:
            raise RuntimeError("wrong shape: {}, the float32 model's {}".format(found, expected))
        if phase == "train":
            sum(t.float().sum() for t in outputs(y)).backward()
    return "ok ({})".format(str(outputs(y)[0].dtype).replace("torch.", ""))


def attempt(shape, make, phase, model_dtype):
    try:
        return run(shape, make, phase, model_dtype)
    except Exception as e:  # noqa: BLE001 -- the point is to print whatever it raises
        return "{}: {}".format(type(e).__name__, str(e).strip().splitlines()[0])


def table(model_dtype):
    failing = 0
    for label, shape, make in CASES:
        train = attempt(shape, make, "train", model_dtype)
        if train.startswith("ok") or train == "absent":
            print("{:<62} {}".format(label, train))
            continue
        failing += 1
        forward = attempt(shape, make, "forward", model_dtype)
        evaluation = attempt(shape, make, "eval", model_dtype)
        where = "backward" if forward.startswith("ok") else "forward"
        print("{:<62} FAILS in {} ({}); eval: {}".format(label, where, train, evaluation))
    print("{} of {} cases fail".format(failing, len(CASES)))


def main():
    print("torch {} CPU, bfloat16 autocast, float32 parameters, input from a bfloat16 Linear".format(torch.__version__))
    table(None)
    for flag, dtype in (("--bf16-model", torch.bfloat16), ("--f16-model", torch.float16)):
        if flag in sys.argv:
            print("\ntorch {} CPU, no autocast, the whole model {} (parameters and input)".format(
                torch.__version__, str(dtype).replace("torch.", "")))
            table(dtype)
    return 0


if __name__ == "__main__":
    sys.exit(main())
