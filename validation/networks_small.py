"""Our own small validation networks, one memory behaviour each (networks.py's NETWORKS)."""

import torch
import torch.nn as nn


# --------------------------------------------------------------------------
# Our own small networks, one memory behaviour each
# --------------------------------------------------------------------------

def _stage(cin, cout, stride):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU(inplace=True))


class BnReluCnn(nn.Module):
    """stage{1,2,3}.{0 conv,1 bn,2 relu(inplace)}, pool, gap, flatten, fc."""

    def __init__(self):
        super().__init__()
        self.stage1 = _stage(3, 32, 1)
        self.stage2 = _stage(32, 64, 2)
        self.stage3 = _stage(64, 64, 1)
        self.pool = nn.MaxPool2d(2)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(64, 10)

    def forward(self, x):
        x = self.stage3(self.stage2(self.stage1(x)))
        return self.fc(self.flatten(self.gap(self.pool(x))))


class Mlp(nn.Module):
    """fc1 relu drop fc2 gelu fc3 on a flat 784 vector."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 512)
        self.relu = nn.ReLU()
        self.drop = nn.Dropout(0.2)
        self.fc2 = nn.Linear(512, 256)
        self.gelu = nn.GELU()
        self.fc3 = nn.Linear(256, 10)

    def forward(self, x):
        return self.fc3(self.gelu(self.fc2(self.drop(self.relu(self.fc1(x))))))


class Block(nn.Module):
    """conv1 bn1 relu1(inplace) conv2 bn2, + identity, relu2.
    inplace_add=False: out = out + identity; relu2 = ReLU() (out-of-place).
    inplace_add=True:  out += identity;      relu2 = ReLU(inplace=True)."""

    def __init__(self, c, inplace_add):
        super().__init__()
        self.inplace_add = inplace_add
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)
        self.relu2 = nn.ReLU(inplace=inplace_add)

    def forward(self, x):
        identity = x
        out = self.bn2(self.conv2(self.relu1(self.bn1(self.conv1(x)))))
        if self.inplace_add:
            out += identity
        else:
            out = out + identity
        return self.relu2(out)


class ResidualNet(nn.Module):
    """stem_conv stem_bn stem_relu block1.* block2.* pool flatten fc."""

    def __init__(self):
        super().__init__()
        self.stem_conv = nn.Conv2d(3, 32, 3, padding=1)
        self.stem_bn = nn.BatchNorm2d(32)
        self.stem_relu = nn.ReLU(inplace=True)
        self.block1 = Block(32, inplace_add=False)
        self.block2 = Block(32, inplace_add=True)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = self.stem_relu(self.stem_bn(self.stem_conv(x)))
        x = self.block2(self.block1(x))
        return self.fc(self.flatten(self.pool(x)))


class ConcatNet(nn.Module):
    """stem, a_conv a_act, b_conv b_act, torch.cat (in forward), down
    down_act, pool, flatten, fc."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, padding=1)
        self.a_conv = nn.Conv2d(16, 16, 1)
        self.a_act = nn.ReLU()
        self.b_conv = nn.Conv2d(16, 16, 3, padding=1)
        self.b_act = nn.SiLU()
        self.down = nn.Conv2d(32, 32, 3, stride=2, padding=1)
        self.down_act = nn.Sigmoid()
        self.pool = nn.AdaptiveMaxPool2d(1)
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        s = self.stem(x)
        y = torch.cat([self.a_act(self.a_conv(s)), self.b_act(self.b_conv(s))], dim=1)
        y = self.down_act(self.down(y))
        return self.fc(self.flatten(self.pool(y)))


class ConcatFork(nn.Module):
    """a_conv, b_conv (both on the input), torch.cat([a, b]) and torch.cat([b, a]) (cat_ab,
    cat_ba, functional), p_conv and q_conv (one on each), their sum (add), pool, flatten, fc.
    a's and b's gradients each arrive from two concatenations and are summed."""

    def __init__(self):
        super().__init__()
        self.a_conv = nn.Conv2d(3, 16, 3, padding=1)
        self.b_conv = nn.Conv2d(3, 16, 3, padding=1)
        self.p_conv = nn.Conv2d(32, 16, 1)
        self.q_conv = nn.Conv2d(32, 16, 1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(16, 10)

    @staticmethod
    def cats(a, b):  # a and b are freed on return, after their last reader, as in nnmem
        return torch.cat([a, b], dim=1), torch.cat([b, a], dim=1)

    def forward(self, x):
        ab, ba = self.cats(self.a_conv(x), self.b_conv(x))
        y = self.p_conv(ab) + self.q_conv(ba)
        return self.fc(self.flatten(self.pool(y)))


class FrozenBackbone(nn.Module):
    """backbone.{0 conv,1 relu,2 pool,3 conv,4 relu,5 pool} (frozen),
    head.{0 flatten,1 linear,2 relu,3 linear} (trainable)."""

    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))
        for p in self.backbone.parameters():
            p.requires_grad_(False)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(64 * 8 * 8, 128), nn.ReLU(),
                                  nn.Linear(128, 10))

    def forward(self, x):
        return self.head(self.backbone(x))


class ActivationsNet(nn.Module):
    """fc0 leaky fc1 relu6 fc2 gelu fc3 silu fc4 sigmoid fc5 tanh fc6."""

    ACTS = [("leaky", lambda: nn.LeakyReLU(0.1)), ("relu6", nn.ReLU6), ("gelu", nn.GELU),
            ("silu", nn.SiLU), ("sigmoid", nn.Sigmoid), ("tanh", nn.Tanh)]

    def __init__(self):
        super().__init__()
        for i, (name, make) in enumerate(self.ACTS):
            setattr(self, f"fc{i}", nn.Linear(256, 256))
            setattr(self, name, make())
        self.fc6 = nn.Linear(256, 10)

    def forward(self, x):
        for i, (name, _) in enumerate(self.ACTS):
            x = getattr(self, name)(getattr(self, f"fc{i}")(x))
        return self.fc6(x)


class UNetSmall(nn.Module):
    """A two-level U-Net: enc1.{0 conv,1 bn,2 leaky(inplace)} pool enc2.{0 conv,1 elu} up
    (ConvTranspose2d) torch.cat([up, enc1]) dec.{0 conv,1 relu(inplace)} head out_act."""

    def __init__(self):
        super().__init__()
        self.enc1 = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16),
                                  nn.LeakyReLU(0.1, inplace=True))
        self.pool = nn.MaxPool2d(2)
        self.enc2 = nn.Sequential(nn.Conv2d(16, 32, 3, padding=1), nn.ELU())
        self.up = nn.ConvTranspose2d(32, 16, 2, stride=2)
        self.dec = nn.Sequential(nn.Conv2d(32, 16, 3, padding=1), nn.ReLU(inplace=True))
        self.head = nn.Conv2d(16, 1, 1)
        self.out_act = nn.Sigmoid()

    def forward(self, x):
        e1 = self.enc1(x)
        u = self.up(self.enc2(self.pool(e1)))
        return self.out_act(self.head(self.dec(torch.cat([u, e1], dim=1))))


class SeNet(nn.Module):
    """Squeeze-and-excitation: stem act, squeeze fc1 relu fc2 gate, x * gate (broadcast),
    drop (Dropout2d), pool (AvgPool2d), flatten, fc."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 32, 3, padding=1)
        self.act = nn.SiLU()
        self.squeeze = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(32, 8, 1)
        self.relu = nn.ReLU()
        self.fc2 = nn.Conv2d(8, 32, 1)
        self.gate = nn.Sigmoid()
        self.drop = nn.Dropout2d(0.1)
        self.pool = nn.AvgPool2d(2)
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(32 * 16 * 16, 10)

    def forward(self, x):
        x = self.act(self.stem(x))
        g = self.gate(self.fc2(self.relu(self.fc1(self.squeeze(x)))))
        x = x * g
        return self.fc(self.flatten(self.pool(self.drop(x))))


class LlamaRMSNorm(nn.Module):
    """transformers' LlamaRMSNorm, written out (transformers does not build for torch 1.13)."""

    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        h = x.to(torch.float32)
        variance = h.pow(2).mean(-1, keepdim=True)
        h = h * torch.rsqrt(variance + self.eps)
        return self.weight * h.to(dtype)


class T5LayerNorm(nn.Module):
    """transformers' T5LayerNorm, written out (for torch 1.13 too): the input itself times rstd
    (its variance from x.float()), cast to a 16-bit weight's dtype."""

    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
        hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        if self.weight.dtype in [torch.float16, torch.bfloat16]:
            hidden_states = hidden_states.to(self.weight.dtype)
        return self.weight * hidden_states


def torch_rms_norm(hidden):
    return nn.RMSNorm(hidden, eps=1e-6)


class RmsMlp(nn.Module):
    """Tokens [N, 16, 64]: inp (Linear), two pre-norm residual blocks (norm, fc1 to 128, GELU,
    fc2, added back), and a final norm whose output the loss reads (`mean`): backward starts in
    that norm with every activation live, so the step's peak is inside its backward
    (layers/norm.cpp's RMSNorm program). RmsMlp(torch_rms_norm) is the same with nn.RMSNorm
    (torch 2.4 and later), whose F.rms_norm is on the CPU a composite of the same ops but for
    the last product's order, normalised input times weight; RmsMlp(T5LayerNorm) with T5's."""

    def __init__(self, norm=LlamaRMSNorm):
        super().__init__()
        self.inp = nn.Linear(64, 64)
        self.blocks = nn.ModuleList(nn.ModuleDict({"norm": norm(64), "fc1": nn.Linear(64, 128), "act": nn.GELU(),
                                                   "fc2": nn.Linear(128, 64)}) for _ in range(2))
        self.norm = norm(64)

    def forward(self, x):
        x = self.inp(x)
        for b in self.blocks:
            x = x + b["fc2"](b["act"](b["fc1"](b["norm"](x))))
        return self.norm(x)
