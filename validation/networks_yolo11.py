"""Ultralytics' YOLO11 detection model (examples/ultralytics/yolo11.yaml, examples/yolo11.yaml)
written out as ultralytics 8.4.190 builds it from yolo11.yaml (nn/modules/block.py C3k2, C3k,
C3, Bottleneck, C2PSA, PSABlock, Attention; head.py Detect with legacy False; tasks.py's
parse_model, which gives every C3k2 c3k=True at scales m, l and x), on networks_zoo.py's Conv,
SPPF and DetectionModel loop (YoloV8). check_yolo.py proves it is ultralytics' model: the same
parameters, names and shapes at every scale, the same outputs and input gradient for the same
weights.
"""
import math

import torch
import torch.nn as nn

from networks_zoo import Bottleneck, Concat, Conv, Detect, SPPF, YoloV8


class C3k(nn.Module):
    """C3 with n Bottlenecks of kernels (k, k): cv3(cat(m(cv1(x)), cv2(x)))."""

    def __init__(self, c1, c2, n=1, shortcut=True, e=0.5, k=3):
        super().__init__()
        c_ = int(c2 * e)
        self.cv1 = Conv(c1, c_, 1, 1)
        self.cv2 = Conv(c1, c_, 1, 1)
        self.cv3 = Conv(2 * c_, c2, 1)
        self.m = nn.Sequential(*(Bottleneck(c_, c_, shortcut, k=(k, k), e=1.0) for _ in range(n)))

    def forward(self, x):
        return self.cv3(torch.cat((self.m(self.cv1(x)), self.cv2(x)), 1))


class C3k2(nn.Module):
    """C2f whose blocks are C3k(c, c, 2) when c3k, else Bottleneck(c, c) (e 0.5); shortcut True."""

    def __init__(self, c1, c2, n=1, c3k=False, e=0.5, shortcut=True):
        super().__init__()
        self.c = int(c2 * e)
        self.cv1 = Conv(c1, 2 * self.c, 1, 1)
        self.cv2 = Conv((2 + n) * self.c, c2, 1)
        self.m = nn.ModuleList(C3k(self.c, self.c, 2, shortcut) if c3k else Bottleneck(self.c, self.c, shortcut)
                               for _ in range(n))

    def forward(self, x):
        y = list(self.cv1(x).chunk(2, 1))
        y.extend(m(y[-1]) for m in self.m)
        return self.cv2(torch.cat(y, 1))


class Attention(nn.Module):
    def __init__(self, dim, num_heads=8, attn_ratio=0.5):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.key_dim = int(self.head_dim * attn_ratio)
        self.scale = self.key_dim ** -0.5
        h = dim + self.key_dim * num_heads * 2
        self.qkv = Conv(dim, h, 1, act=False)
        self.proj = Conv(dim, dim, 1, act=False)
        self.pe = Conv(dim, dim, 3, 1, g=dim, act=False)

    def forward(self, x):
        B, C, H, W = x.shape
        N = H * W
        qkv = self.qkv(x)
        q, k, v = qkv.view(B, self.num_heads, self.key_dim * 2 + self.head_dim, N).split(
            [self.key_dim, self.key_dim, self.head_dim], dim=2)
        attn = ((q * self.scale).transpose(-2, -1) @ k).softmax(dim=-1)
        x = (v @ attn.transpose(-2, -1)).view(B, C, H, W) + self.pe(v.reshape(B, C, H, W))
        return self.proj(x)


class PSABlock(nn.Module):
    def __init__(self, c, attn_ratio=0.5, num_heads=4, shortcut=True):
        super().__init__()
        self.attn = Attention(c, attn_ratio=attn_ratio, num_heads=num_heads)
        self.ffn = nn.Sequential(Conv(c, c * 2, 1), Conv(c * 2, c, 1, act=False))
        self.add = shortcut

    def forward(self, x):
        x = x + self.attn(x) if self.add else self.attn(x)
        return x + self.ffn(x) if self.add else self.ffn(x)


class C2PSA(nn.Module):
    def __init__(self, c1, c2, n=1, e=0.5):
        super().__init__()
        assert c1 == c2
        self.c = int(c1 * e)
        self.cv1 = Conv(c1, 2 * self.c, 1, 1)
        self.cv2 = Conv(2 * self.c, c1, 1)
        self.m = nn.Sequential(*(PSABlock(self.c, attn_ratio=0.5, num_heads=max(self.c // 64, 1)) for _ in range(n)))

    def forward(self, x):
        a, b = self.cv1(x).split((self.c, self.c), dim=1)
        return self.cv2(torch.cat((a, self.m(b)), 1))


def _yolo11_layers(depth, width, max_channels, nc, c3k_all):
    """yolo11.yaml through parse_model: (from, module) in order. c3k_all: scales m, l, x."""
    def w(c):
        return math.ceil(min(c, max_channels) * width / 8) * 8

    n = max(round(2 * depth), 1)
    up = lambda: nn.Upsample(None, 2, "nearest")  # noqa: E731
    c3k2 = lambda c1, c2, c3k, e=0.5: C3k2(c1, c2, n, c3k or c3k_all, e)  # noqa: E731
    return [
        (-1, Conv(3, w(64), 3, 2)), (-1, Conv(w(64), w(128), 3, 2)), (-1, c3k2(w(128), w(256), False, 0.25)),
        (-1, Conv(w(256), w(256), 3, 2)), (-1, c3k2(w(256), w(512), False, 0.25)),
        (-1, Conv(w(512), w(512), 3, 2)), (-1, c3k2(w(512), w(512), True)),
        (-1, Conv(w(512), w(1024), 3, 2)), (-1, c3k2(w(1024), w(1024), True)),
        (-1, SPPF(w(1024), w(1024), 5)), (-1, C2PSA(w(1024), w(1024), n)),
        (-1, up()), ([-1, 6], Concat()), (-1, c3k2(w(1024) + w(512), w(512), False)),
        (-1, up()), ([-1, 4], Concat()), (-1, c3k2(w(512) + w(512), w(256), False)),
        (-1, Conv(w(256), w(256), 3, 2)), ([-1, 13], Concat()), (-1, c3k2(w(256) + w(512), w(512), False)),
        (-1, Conv(w(512), w(512), 3, 2)), ([-1, 10], Concat()), (-1, c3k2(w(512) + w(1024), w(1024), True)),
        ([16, 19, 22], Detect(nc, (w(256), w(512), w(1024)), legacy=False)),
    ]


class Yolo11(YoloV8):
    """model.0 ... model.23, run as YoloV8 runs its modules (DetectionModel._predict_once)."""

    def __init__(self, depth=0.50, width=0.25, max_channels=1024, nc=80, c3k_all=False):
        nn.Module.__init__(self)
        self._build(_yolo11_layers(depth, width, max_channels, nc, c3k_all))
