"""Validation networks for what applies beyond one plain step: activation checkpointing,
gradient accumulation and data parallelism (examples/resblock_cnn.yaml, resblock_mlp.yaml).

Each is a chain of *units* — the spec's top-level entries, a block instance (a `repeat`
instance of a block) or a layer — and its forward runs them one after the other, as
`nn.Sequential` does, so that a checkpointing harness can regroup them
(checkpointing.py): `units()` lists (qualified name, module, is it a block instance).
"""
import torch.nn as nn


class Units(nn.Module):
    """forward(x): every unit in order, `x = unit(x)`."""

    def units(self):
        out = []
        for name, child in self.named_children():
            if isinstance(child, nn.Sequential):      # a repeated entry: one unit per instance
                out += [(f"{name}.{n}", c, bool(list(c.children()))) for n, c in child.named_children()]
            else:
                out.append((name, child, bool(list(child.children()))))
        return out

    def forward(self, x):
        for _, unit, _ in self.units():
            x = unit(x)
        return x


class ResBlock(nn.Module):
    """torchvision's BasicBlock with WideResNet's dropout between the convolutions:
    conv1 bn1 relu1 (in place) drop conv2 bn2, `out += identity` (or the 1x1 downsample's
    output), relu2 (in place)."""

    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu1 = nn.ReLU(inplace=True)
        self.drop = nn.Dropout(0.1)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))
        self.relu2 = nn.ReLU(inplace=True)

    def forward(self, x):
        identity = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu1(out)
        out = self.drop(out)
        out = self.conv2(out)
        out = self.bn2(out)
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        out = self.relu2(out)
        return out


class ResblockCnn(Units):
    """stem_conv stem_bn stem_relu layer1.{0,1} layer2.{0,1} pool flatten fc."""

    def __init__(self):
        super().__init__()
        self.stem_conv = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.stem_bn = nn.BatchNorm2d(16)
        self.stem_relu = nn.ReLU(inplace=True)
        self.layer1 = nn.Sequential(ResBlock(16, 16), ResBlock(16, 16))
        self.layer2 = nn.Sequential(ResBlock(16, 32, stride=2), ResBlock(32, 32))
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(32, 10)


class MlpBlock(nn.Module):
    """A transformer's MLP with its residual: x + drop(fc2(gelu(fc1(x))))."""

    def __init__(self, width, hidden):
        super().__init__()
        self.fc1 = nn.Linear(width, hidden)
        self.gelu = nn.GELU()
        self.fc2 = nn.Linear(hidden, width)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        return x + self.drop(self.fc2(self.gelu(self.fc1(x))))


class ResblockMlp(Units):
    """embed relu blocks.{0,1,2} head."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(256, 128)
        self.relu = nn.ReLU()
        self.blocks = nn.Sequential(*[MlpBlock(128, 512) for _ in range(3)])
        self.head = nn.Linear(128, 10)


# name -> (build, input_shape per sample, input dtype, loss, batches), as networks.Net takes them
SCALING_NETWORKS = {
    "resblock_mlp": (ResblockMlp, (256,), "float32", "cross_entropy", [256]),
    "resblock_cnn": (ResblockCnn, (3, 32, 32), "float32", "cross_entropy", [4]),
}
