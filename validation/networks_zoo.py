"""Validation networks for issue 13's examples, with the module names their specs use:
the original U-Net (examples/unet.yaml), a DDPM-style U-Net (examples/diffusion_unet.yaml)
and Ultralytics' YOLOv8 (examples/yolov8.yaml), each at a small size (compare.py's SPECS
give the --set values).

YOLOv8 is written out as ultralytics 8.4.190 builds it from yolov8.yaml (nn/modules/conv.py
Conv, block.py Bottleneck, C2f, SPPF, head.py Detect; tasks.py's DetectionModel runs the
modules in order, keeping the outputs later modules read): ultralytics does not install
beside torch 2.13's CPU build (its torchvision's C ops do not load) nor in torch 1.13's
interpreter. check_yolo.py proves the two are the same model: the same parameters, names and
shapes, and the same outputs for the same weights.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


# --------------------------------------------------------------------------
# U-Net (Ronneberger et al. 2015): valid convolutions, center-cropped skips
# --------------------------------------------------------------------------

class DoubleConv(nn.Module):
    def __init__(self, cin, c):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, c, 3)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(c, c, 3)
        self.relu2 = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.relu2(self.conv2(self.relu1(self.conv1(x))))


class Up(nn.Module):
    def __init__(self, cin, c):
        super().__init__()
        self.up = nn.ConvTranspose2d(cin, c, 2, stride=2)
        self.conv = DoubleConv(2 * c, c)

    def forward(self, x, skip):
        x = self.up(x)
        h, w = x.shape[2], x.shape[3]
        oy, ox = (skip.shape[2] - h) // 2, (skip.shape[3] - w) // 2
        # the crop as two slices, as the spec writes it (torch 1.13's skip[:, :, a:b, c:d] also
        # makes a SliceBackward0 node for each `:`, whose backward copies the whole gradient;
        # 2.x skips full slices)
        skip = skip.narrow(2, oy, h).narrow(3, ox, w)
        return self.conv(torch.cat([skip, x], 1))


class UNet(nn.Module):
    """down1 pool1 ... down4 pool4 bottom up4..up1.{up, conv.{conv1,relu1,conv2,relu2}} head."""

    def __init__(self, base=8, classes=2, in_channels=1):
        super().__init__()
        c = [base, 2 * base, 4 * base, 8 * base, 16 * base]
        self.down1 = DoubleConv(in_channels, c[0])
        self.pool1 = nn.MaxPool2d(2)
        self.down2 = DoubleConv(c[0], c[1])
        self.pool2 = nn.MaxPool2d(2)
        self.down3 = DoubleConv(c[1], c[2])
        self.pool3 = nn.MaxPool2d(2)
        self.down4 = DoubleConv(c[2], c[3])
        self.pool4 = nn.MaxPool2d(2)
        self.bottom = DoubleConv(c[3], c[4])
        self.up4 = Up(c[4], c[3])
        self.up3 = Up(c[3], c[2])
        self.up2 = Up(c[2], c[1])
        self.up1 = Up(c[1], c[0])
        self.head = nn.Conv2d(c[0], classes, 1)

    def forward(self, x):
        d1 = self.down1(x)
        d2 = self.down2(self.pool1(d1))
        d3 = self.down3(self.pool2(d2))
        d4 = self.down4(self.pool3(d3))
        x = self.bottom(self.pool4(d4))
        x = self.up4(x, d4)
        x = self.up3(x, d3)
        x = self.up2(x, d2)
        x = self.up1(x, d1)
        return self.head(x)


# --------------------------------------------------------------------------
# DDPM-style U-Net (pesser/pytorch_diffusion's model.py, three levels, one block each)
# --------------------------------------------------------------------------

def timestep_embedding(t, dim):
    """get_timestep_embedding: sinusoidal features of the timesteps t ([B] int64)."""
    half = dim // 2
    emb = math.log(10000) / (half - 1)
    emb = torch.exp(torch.arange(half, dtype=torch.float32) * -emb)
    emb = t.float()[:, None] * emb[None, :]
    return torch.cat([torch.sin(emb), torch.cos(emb)], dim=1)


class ResnetBlock(nn.Module):
    def __init__(self, cin, cout, temb_ch, groups):
        super().__init__()
        self.norm1 = nn.GroupNorm(groups, cin)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.temb_proj = nn.Linear(temb_ch, cout)
        self.norm2 = nn.GroupNorm(groups, cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        if cin != cout:
            self.nin_shortcut = nn.Conv2d(cin, cout, 1)

    def forward(self, x, temb):
        h = x
        h = self.norm1(h)
        h = F.silu(h)
        h = self.conv1(h)
        h = h + self.temb_proj(F.silu(temb))[:, :, None, None]
        h = self.norm2(h)
        h = F.silu(h)
        h = self.conv2(h)
        if hasattr(self, "nin_shortcut"):
            x = self.nin_shortcut(x)
        return x + h


class AttnBlock(nn.Module):
    def __init__(self, c, groups):
        super().__init__()
        self.norm = nn.GroupNorm(groups, c)
        self.q = nn.Conv2d(c, c, 1)
        self.k = nn.Conv2d(c, c, 1)
        self.v = nn.Conv2d(c, c, 1)
        self.proj_out = nn.Conv2d(c, c, 1)

    def forward(self, x):
        h_ = x
        h_ = self.norm(h_)
        q = self.q(h_)
        k = self.k(h_)
        v = self.v(h_)
        b, c, h, w = q.shape
        q = q.reshape(b, c, h * w)
        q = q.permute(0, 2, 1)
        k = k.reshape(b, c, h * w)
        w_ = torch.bmm(q, k)
        w_ = w_ * (int(c) ** (-0.5))
        w_ = F.softmax(w_, dim=2)
        v = v.reshape(b, c, h * w)
        w_ = w_.permute(0, 2, 1)
        h_ = torch.bmm(v, w_)
        h_ = h_.reshape(b, c, h, w)
        h_ = self.proj_out(h_)
        return x + h_


class _Sampling(nn.Module):
    def __init__(self, c, down):
        super().__init__()
        self.down = down
        self.conv = nn.Conv2d(c, c, 3, stride=2 if down else 1, padding=1)

    def forward(self, x):
        if not self.down:
            x = F.interpolate(x, scale_factor=2.0, mode="nearest")
        return self.conv(x)


class _Level(nn.Module):
    def __init__(self, block, attn=None, sampling=None):
        super().__init__()
        self.block = nn.ModuleList([block])
        if attn is not None:
            self.attn = nn.ModuleList([attn])
        if sampling is not None:
            setattr(self, "downsample" if sampling.down else "upsample", sampling)


class DiffusionUNet(nn.Module):
    """temb.dense.{0,1} conv_in down.{0,1,2} mid.{block_1,attn_1,block_2} up.{2,1,0} norm_out conv_out.
    One timestep for the batch (the spec's Constant): its embedding is [1, ch]."""

    def __init__(self, ch=32, groups=8, t=500):
        super().__init__()
        self.ch, self.t = ch, t
        c2, te = 2 * ch, 4 * ch
        self.temb = nn.Module()
        self.temb.dense = nn.ModuleList([nn.Linear(ch, te), nn.Linear(te, te)])
        self.conv_in = nn.Conv2d(3, ch, 3, padding=1)
        self.down = nn.ModuleList([
            _Level(ResnetBlock(ch, ch, te, groups), sampling=_Sampling(ch, True)),
            _Level(ResnetBlock(ch, c2, te, groups), sampling=_Sampling(c2, True)),
            _Level(ResnetBlock(c2, c2, te, groups), attn=AttnBlock(c2, groups))])
        self.mid = nn.Module()
        self.mid.block_1 = ResnetBlock(c2, c2, te, groups)
        self.mid.attn_1 = AttnBlock(c2, groups)
        self.mid.block_2 = ResnetBlock(c2, c2, te, groups)
        self.up = nn.ModuleList([
            _Level(ResnetBlock(c2 + ch, ch, te, groups)),
            _Level(ResnetBlock(c2 + c2, c2, te, groups), sampling=_Sampling(c2, False)),
            _Level(ResnetBlock(c2 + c2, c2, te, groups), attn=AttnBlock(c2, groups), sampling=_Sampling(c2, False))])
        self.norm_out = nn.GroupNorm(groups, ch)
        self.conv_out = nn.Conv2d(ch, 3, 3, padding=1)

    def forward(self, x):
        with torch.no_grad():
            temb = timestep_embedding(torch.tensor([self.t]), self.ch)
        temb = self.temb.dense[0](temb)
        temb = F.silu(temb)
        temb = self.temb.dense[1](temb)
        h0 = self.conv_in(x)
        h1 = self.down[0].block[0](h0, temb)
        h = self.down[0].downsample(h1)
        h2 = self.down[1].block[0](h, temb)
        h = self.down[1].downsample(h2)
        h = self.down[2].block[0](h, temb)
        h3 = self.down[2].attn[0](h)
        h = self.mid.block_1(h3, temb)
        h = self.mid.attn_1(h)
        h = self.mid.block_2(h, temb)
        h = self.up[2].block[0](torch.cat([h, h3], dim=1), temb)
        h = self.up[2].attn[0](h)
        h = self.up[2].upsample(h)
        h = self.up[1].block[0](torch.cat([h, h2], dim=1), temb)
        h = self.up[1].upsample(h)
        h = self.up[0].block[0](torch.cat([h, h1], dim=1), temb)
        h = self.norm_out(h)
        h = F.silu(h)
        h = self.conv_out(h)
        return h


# --------------------------------------------------------------------------
# Ultralytics YOLOv8 (8.4.190), scale n
# --------------------------------------------------------------------------

class Conv(nn.Module):
    """Ultralytics' Conv modules all call one SiLU module (Conv.default_act), which the module
    tracking would see as one module called 57 times; SiLU holds nothing, so here each Conv
    has its own, named as the spec names each call (model.0.act): the same tensors."""

    def __init__(self, c1, c2, k=1, s=1, g=1, act=True):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2, groups=g, bias=False)
        self.bn = nn.BatchNorm2d(c2, eps=0.001, momentum=0.03)  # as initialize_weights sets them
        self.act = nn.SiLU() if act else nn.Identity()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    def __init__(self, c1, c2, shortcut=True, k=(3, 3), e=0.5):
        super().__init__()
        c_ = int(c2 * e)
        self.cv1 = Conv(c1, c_, k[0], 1)
        self.cv2 = Conv(c_, c2, k[1], 1)
        self.add = shortcut and c1 == c2

    def forward(self, x):
        return x + self.cv2(self.cv1(x)) if self.add else self.cv2(self.cv1(x))


class C2f(nn.Module):
    def __init__(self, c1, c2, n=1, shortcut=False):
        super().__init__()
        self.c = int(c2 * 0.5)
        self.cv1 = Conv(c1, 2 * self.c, 1, 1)
        self.cv2 = Conv((2 + n) * self.c, c2, 1)
        self.m = nn.ModuleList(Bottleneck(self.c, self.c, shortcut, e=1.0) for _ in range(n))

    def forward(self, x):
        y = list(self.cv1(x).chunk(2, 1))
        y.extend(m(y[-1]) for m in self.m)
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    def __init__(self, c1, c2, k=5):
        super().__init__()
        c_ = c1 // 2
        self.cv1 = Conv(c1, c_, 1, 1)  # activated: parse_model restores it for legacy (v8) rows
        self.cv2 = Conv(c_ * 4, c2, 1, 1)
        self.m = nn.MaxPool2d(kernel_size=k, stride=1, padding=k // 2)

    def forward(self, x):
        y = [self.cv1(x)]
        y.extend(self.m(y[-1]) for _ in range(3))
        return self.cv2(torch.cat(y, 1))


class Concat(nn.Module):
    def forward(self, x):
        return torch.cat(x, 1)


class DFL(nn.Module):
    def __init__(self, c1=16):
        super().__init__()
        self.conv = nn.Conv2d(c1, 1, 1, bias=False).requires_grad_(False)


class Detect(nn.Module):
    """`legacy` (YOLOv8; parse_model clears it once a C3k2 is built, as in YOLO11): the class
    branch of two 3x3 Convs; otherwise of a depthwise 3x3 Conv (DWConv) and a 1x1 Conv, twice."""

    def __init__(self, nc, ch, reg_max=16, legacy=True):
        super().__init__()
        self.nc, self.nl, self.reg_max = nc, len(ch), reg_max
        c2, c3 = max((16, ch[0] // 4, reg_max * 4)), max(ch[0], min(nc, 100))
        self.cv2 = nn.ModuleList(nn.Sequential(Conv(x, c2, 3), Conv(c2, c2, 3), nn.Conv2d(c2, 4 * reg_max, 1)) for x in ch)
        if legacy:
            self.cv3 = nn.ModuleList(nn.Sequential(Conv(x, c3, 3), Conv(c3, c3, 3), nn.Conv2d(c3, nc, 1)) for x in ch)
        else:
            self.cv3 = nn.ModuleList(nn.Sequential(nn.Sequential(Conv(x, x, 3, g=x), Conv(x, c3, 1)),
                                                   nn.Sequential(Conv(c3, c3, 3, g=c3), Conv(c3, c3, 1)),
                                                   nn.Conv2d(c3, nc, 1)) for x in ch)
        self.dfl = DFL(reg_max)

    def forward(self, x):  # training: forward_head's boxes and scores
        bs = x[0].shape[0]
        boxes = torch.cat([self.cv2[i](x[i]).view(bs, 4 * self.reg_max, -1) for i in range(self.nl)], dim=-1)
        scores = torch.cat([self.cv3[i](x[i]).view(bs, self.nc, -1) for i in range(self.nl)], dim=-1)
        return {"boxes": boxes, "scores": scores, "feats": x}


def _yolo_layers(depth, width, max_channels, nc):
    """yolov8.yaml through parse_model's scaling: (from, module) in order, the saved indices."""
    def w(c):
        return math.ceil(min(c, max_channels) * width / 8) * 8

    def d(n):
        return max(round(n * depth), 1)
    up = lambda: nn.Upsample(None, 2, "nearest")  # noqa: E731
    return [
        (-1, Conv(3, w(64), 3, 2)), (-1, Conv(w(64), w(128), 3, 2)), (-1, C2f(w(128), w(128), d(3), True)),
        (-1, Conv(w(128), w(256), 3, 2)), (-1, C2f(w(256), w(256), d(6), True)),
        (-1, Conv(w(256), w(512), 3, 2)), (-1, C2f(w(512), w(512), d(6), True)),
        (-1, Conv(w(512), w(1024), 3, 2)), (-1, C2f(w(1024), w(1024), d(3), True)),
        (-1, SPPF(w(1024), w(1024), 5)),
        (-1, up()), ([-1, 6], Concat()), (-1, C2f(w(512) + w(1024), w(512), d(3))),
        (-1, up()), ([-1, 4], Concat()), (-1, C2f(w(256) + w(512), w(256), d(3))),
        (-1, Conv(w(256), w(256), 3, 2)), ([-1, 12], Concat()), (-1, C2f(w(256) + w(512), w(512), d(3))),
        (-1, Conv(w(512), w(512), 3, 2)), ([-1, 9], Concat()), (-1, C2f(w(512) + w(1024), w(1024), d(3))),
        ([15, 18, 21], Detect(nc, (w(256), w(512), w(1024)))),
    ]


class YoloV8(nn.Module):
    """model.0 ... model.22, run as DetectionModel._predict_once runs them; the output is
    cat([boxes, scores], 1), the spec's `pred` (its loss stands in for v8DetectionLoss)."""

    def __init__(self, depth=0.33, width=0.25, max_channels=1024, nc=80):
        super().__init__()
        self._build(_yolo_layers(depth, width, max_channels, nc))

    def _build(self, layers):
        self.model = nn.Sequential(*(m for _, m in layers))
        self.froms = [f for f, _ in layers]
        self.save = sorted({j for f in self.froms if f != -1 for j in ([f] if isinstance(f, int) else f) if j != -1})

    def forward(self, x):
        y = []
        for i, (f, m) in enumerate(zip(self.froms, self.model)):
            if f != -1:
                x = y[f] if isinstance(f, int) else [x if j == -1 else y[j] for j in f]
            x = m(x)
            y.append(x if i in self.save else None)
        return torch.cat([x["boxes"], x["scores"]], 1)


# --------------------------------------------------------------------------
# A detector's two heads on one backbone, trained with a weighted sum of two losses
# (examples/multihead_net.yaml): per-cell class scores with cross-entropy, per-cell boxes with
# smooth L1, `loss = 1.0 * ce + 0.5 * smooth_l1` (networks.py's loss terms).
# --------------------------------------------------------------------------

class MultiHeadNet(nn.Module):
    def __init__(self, classes=5):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, padding=1)
        self.bn = nn.BatchNorm2d(16)
        self.relu = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.conv = nn.Conv2d(16, 32, 3, padding=1)
        self.relu2 = nn.ReLU()
        self.pool2 = nn.MaxPool2d(2)
        self.cls = nn.Conv2d(32, classes, 1)
        self.box = nn.Conv2d(32, 4, 1)

    def forward(self, x):
        f = self.pool(self.relu(self.bn(self.stem(x))))
        f = self.pool2(self.relu2(self.conv(f)))
        return self.cls(f), self.box(f)
