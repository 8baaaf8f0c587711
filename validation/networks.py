"""The validation networks, in plain PyTorch, with the module names nnmem's
specs use (per-layer figures are matched by qualified module name).

NETWORKS: name -> Net(build, input_shape (per sample), input_dtype, loss,
batches).  Losses: 'cross_entropy' (int64 targets of shape [N], classes =
last dim of the output), 'mse' (float target shaped like the output),
'mean' (loss = out.mean(), no target), 'nll' (like cross_entropy), 'l1' and
'bce_with_logits' (like mse; bce's target in [0, 1]).  A model with several outputs has a list
of (kind, weight) terms, one per output (measure.py sums them as `w1 * l1 + w2 * l2`, a weight
None adding its loss as it is); own_loss: the model computes the loss itself from the targets
(Hugging Face's labels=...).
"""
from dataclasses import dataclass
from typing import Callable, List, Optional, Tuple, Union

import math

import torch
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


# --------------------------------------------------------------------------
# torchvision's ResNet and VGG, written out (torchvision 0.14.1, models/resnet.py and
# models/vgg.py): the same modules, built in the same order, with the same names,
# parameter order and initialisation (so the same random numbers are drawn and the
# measurements, down to the loss value, are those of torchvision's models), and forward()
# written statement by statement as torchvision's: a Python variable keeps a tensor
# alive until it is rebound, so `out = self.bn2(self.conv2(out))` would hold the old
# `out` one layer longer than torchvision's two statements (measured: +1.6 MB in
# ResNet-50's eval peak).  No torchvision import: it does not install beside torch
# 2.13's CPU build.  check_torchvision.py proves the equivalence under torch 1.13.
# --------------------------------------------------------------------------

def _conv3x3(cin, cout, stride=1):
    return nn.Conv2d(cin, cout, kernel_size=3, stride=stride, padding=1, bias=False)


def _conv1x1(cin, cout, stride=1):
    return nn.Conv2d(cin, cout, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    """conv1 bn1 relu conv2 bn2 [downsample], out += identity, relu (the same
    in-place ReLU module called twice)."""
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = _conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = _conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x

        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)

        out = self.conv2(out)
        out = self.bn2(out)

        if self.downsample is not None:
            identity = self.downsample(x)

        out += identity
        out = self.relu(out)

        return out


class Bottleneck(nn.Module):
    """conv1 bn1 conv2 bn2 conv3 bn3 relu [downsample] (stride on conv2: ResNet v1.5)."""
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        width = planes
        self.conv1 = _conv1x1(inplanes, width)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = _conv3x3(width, width, stride)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = _conv1x1(width, planes * self.expansion)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x

        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)

        out = self.conv2(out)
        out = self.bn2(out)
        out = self.relu(out)

        out = self.conv3(out)
        out = self.bn3(out)

        if self.downsample is not None:
            identity = self.downsample(x)

        out += identity
        out = self.relu(out)

        return out


class ResNet(nn.Module):
    """conv1 bn1 relu maxpool layer1..layer4 avgpool, torch.flatten, fc."""

    def __init__(self, block, layers, num_classes=1000):
        super().__init__()
        self.inplanes = 64
        self.dilation = 1
        self.groups = 1
        self.base_width = 64
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2)
        self.layer3 = self._make_layer(block, 256, layers[2], stride=2)
        self.layer4 = self._make_layer(block, 512, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(_conv1x1(self.inplanes, planes * block.expansion, stride),
                                       nn.BatchNorm2d(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.relu(x)
        x = self.maxpool(x)

        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)

        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        x = self.fc(x)

        return x


def resnet18():
    return ResNet(BasicBlock, [2, 2, 2, 2])


def resnet50():
    return ResNet(Bottleneck, [3, 4, 6, 3])


class VGG(nn.Module):
    """features, avgpool (AdaptiveAvgPool2d 7x7), torch.flatten, classifier.{0 fc, 1 relu
    (inplace), 2 dropout, 3 fc, 4 relu, 5 dropout, 6 fc}."""

    def __init__(self, features, num_classes=1000, dropout=0.5):
        super().__init__()
        self.features = features
        self.avgpool = nn.AdaptiveAvgPool2d((7, 7))
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(True), nn.Dropout(p=dropout),
            nn.Linear(4096, 4096), nn.ReLU(True), nn.Dropout(p=dropout),
            nn.Linear(4096, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
                if m.bias is not None:
                    nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.features(x)
        x = self.avgpool(x)
        x = torch.flatten(x, 1)
        x = self.classifier(x)
        return x


VGG16_CFG = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]


def vgg16():
    """torchvision's vgg16(): features.{conv, relu(inplace), ..., maxpool} from cfg 'D'."""
    layers, cin = [], 3
    for v in VGG16_CFG:
        if v == "M":
            layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
        else:
            layers += [nn.Conv2d(cin, v, kernel_size=3, padding=1), nn.ReLU(inplace=True)]
            cin = v
    return VGG(nn.Sequential(*layers))


class DavenetVGG16(nn.Module):
    """DAVEnet's image model (models/ImageModels.py VGG16): vgg16().features
    without its last MaxPool2d, plus Conv2d(512, 1024, 3, padding=1) as
    image_model.30.  The whole VGG16 is built (and its classifier dropped), as
    DAVEnet does with torchvision's, so the same random numbers are drawn."""

    def __init__(self, embedding_dim=1024):
        super().__init__()
        seed_model = vgg16().features
        seed_model = nn.Sequential(*list(seed_model.children())[:-1])
        seed_model.add_module(str(len(seed_model)),
                              nn.Conv2d(512, embedding_dim, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1)))
        self.image_model = seed_model

    def forward(self, x):
        return self.image_model(x)


class TfMnistCnn(nn.Module):
    """aymericdamien's TensorFlow MNIST CNN in PyTorch.  Module names:
    conv1 relu1 pool1 conv2 relu2 pool2 flatten fc1 relu3 drop out."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 5, padding=2)
        self.relu1 = nn.ReLU()
        self.pool1 = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(32, 64, 5, padding=2)
        self.relu2 = nn.ReLU()
        self.pool2 = nn.MaxPool2d(2)
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(7 * 7 * 64, 1024)
        self.relu3 = nn.ReLU()
        self.drop = nn.Dropout(p=0.25)
        self.out = nn.Linear(1024, 10)

    def forward(self, x):
        x = self.pool1(self.relu1(self.conv1(x)))
        x = self.pool2(self.relu2(self.conv2(x)))
        x = self.drop(self.relu3(self.fc1(self.flatten(x))))
        return self.out(x)


class SimpleCNN(nn.Module):
    """The blog post's SimpleCNN with fc1 fixed to 64*28*28 inputs.  The
    ReLUs are unregistered nn.ReLU() instances created in forward (their
    saved tensors are attributed to '<functional>')."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, kernel_size=3, stride=1, padding=1)
        self.conv2 = nn.Conv2d(32, 64, kernel_size=3, stride=1, padding=1)
        self.fc1 = nn.Linear(64 * 28 * 28, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = nn.ReLU()(self.conv1(x))
        x = nn.ReLU()(self.conv2(x))
        x = x.view(x.size(0), -1)
        x = nn.ReLU()(self.fc1(x))
        return self.fc2(x)


def lenet5():
    """Names: conv1 act1 pool1 conv2 act2 pool2 flatten fc1 act3 fc2 act4 fc3."""
    from collections import OrderedDict
    return nn.Sequential(OrderedDict([
        ("conv1", nn.Conv2d(1, 6, 5)), ("act1", nn.Tanh()), ("pool1", nn.AvgPool2d(2)),
        ("conv2", nn.Conv2d(6, 16, 5)), ("act2", nn.Tanh()), ("pool2", nn.AvgPool2d(2)),
        ("flatten", nn.Flatten()),
        ("fc1", nn.Linear(400, 120)), ("act3", nn.Tanh()),
        ("fc2", nn.Linear(120, 84)), ("act4", nn.Tanh()),
        ("fc3", nn.Linear(84, 10))]))


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


# --------------------------------------------------------------------------
# torchvision's EfficientNet-B0, written out (torchvision 0.14.1, models/efficientnet.py and
# ops/misc.py, ops/stochastic_depth.py): the same modules, built in the same order, with the
# same names, initialisation and forward() code.  No torchvision import: it does not install
# beside torch 2.13's CPU build.  check_torchvision.py compares it with torchvision's under
# torch 1.13.
# --------------------------------------------------------------------------

def stochastic_depth(input, p, mode, training=True):
    """torchvision.ops.stochastic_depth."""
    if p < 0.0 or p > 1.0:
        raise ValueError(f"drop probability has to be between 0 and 1, but got {p}")
    if mode not in ["batch", "row"]:
        raise ValueError(f"mode has to be either 'batch' or 'row', but got {mode}")
    if not training or p == 0.0:
        return input

    survival_rate = 1.0 - p
    if mode == "row":
        size = [input.shape[0]] + [1] * (input.ndim - 1)
    else:
        size = [1] * input.ndim
    noise = torch.empty(size, dtype=input.dtype, device=input.device)
    noise = noise.bernoulli_(survival_rate)
    if survival_rate > 0.0:
        noise.div_(survival_rate)
    return input * noise


class StochasticDepth(nn.Module):
    """torchvision.ops.StochasticDepth."""

    def __init__(self, p, mode):
        super().__init__()
        self.p = p
        self.mode = mode

    def forward(self, input):
        return stochastic_depth(input, self.p, self.mode, self.training)


class Conv2dNormActivation(nn.Sequential):
    """torchvision.ops.Conv2dNormActivation with BatchNorm2d and SiLU(inplace=True) (or none)."""

    def __init__(self, cin, cout, kernel_size=3, stride=1, groups=1, activation=True):
        layers = [nn.Conv2d(cin, cout, kernel_size, stride, (kernel_size - 1) // 2, groups=groups, bias=False),
                  nn.BatchNorm2d(cout)]
        if activation:
            layers.append(nn.SiLU(inplace=True))
        super().__init__(*layers)


class SqueezeExcitation(nn.Module):
    """torchvision.ops.SqueezeExcitation(activation=SiLU(inplace=True))."""

    def __init__(self, input_channels, squeeze_channels):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(input_channels, squeeze_channels, 1)
        self.fc2 = nn.Conv2d(squeeze_channels, input_channels, 1)
        self.activation = nn.SiLU(inplace=True)
        self.scale_activation = nn.Sigmoid()

    def _scale(self, input):
        scale = self.avgpool(input)
        scale = self.fc1(scale)
        scale = self.activation(scale)
        scale = self.fc2(scale)
        return self.scale_activation(scale)

    def forward(self, input):
        scale = self._scale(input)
        return scale * input


class MBConv(nn.Module):
    """block.{[expansion] depthwise SE projection}, stochastic_depth; residual when the shape is kept."""

    def __init__(self, expand_ratio, kernel, stride, cin, cout, stochastic_depth_prob):
        super().__init__()
        self.use_res_connect = stride == 1 and cin == cout
        layers = []
        expanded = cin * expand_ratio   # _make_divisible(cin * ratio * 1.0, 8) is the same for B0
        if expanded != cin:
            layers.append(Conv2dNormActivation(cin, expanded, kernel_size=1))
        layers.append(Conv2dNormActivation(expanded, expanded, kernel_size=kernel, stride=stride, groups=expanded))
        layers.append(SqueezeExcitation(expanded, max(1, cin // 4)))
        layers.append(Conv2dNormActivation(expanded, cout, kernel_size=1, activation=False))
        self.block = nn.Sequential(*layers)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")
        self.out_channels = cout

    def forward(self, input):
        result = self.block(input)
        if self.use_res_connect:
            result = self.stochastic_depth(result)
            result += input
        return result


class EfficientNetB0(nn.Module):
    """features.{0 stem, 1-7 MBConv stages, 8 head conv}, avgpool, flatten, classifier.{0 dropout, 1 linear}."""

    # expand_ratio, kernel, stride, input_channels, out_channels, num_layers
    SETTING = [(1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2), (6, 3, 2, 40, 80, 3),
               (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4), (6, 3, 1, 192, 320, 1)]

    def __init__(self, num_classes=1000, stochastic_depth_prob=0.2, dropout=0.2):
        super().__init__()
        layers = [Conv2dNormActivation(3, 32, kernel_size=3, stride=2)]
        total_stage_blocks = sum(s[5] for s in self.SETTING)
        stage_block_id = 0
        for expand, kernel, stride, cin, cout, n in self.SETTING:
            stage = []
            for i in range(n):
                sd_prob = stochastic_depth_prob * float(stage_block_id) / total_stage_blocks
                stage.append(MBConv(expand, kernel, stride if i == 0 else 1, cin if i == 0 else cout, cout, sd_prob))
                stage_block_id += 1
            layers.append(nn.Sequential(*stage))
        layers.append(Conv2dNormActivation(320, 1280, kernel_size=1))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout, inplace=True), nn.Linear(1280, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                init_range = 1.0 / math.sqrt(m.out_features)
                nn.init.uniform_(m.weight, -init_range, init_range)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.features(x)

        x = self.avgpool(x)
        x = torch.flatten(x, 1)

        x = self.classifier(x)

        return x


# --------------------------------------------------------------------------
# Issue 13's layers: padding, resampling, shuffles and activations (each also in 1.13)
# --------------------------------------------------------------------------

class ZooNet(nn.Module):
    """pad conv1 prelu pad2 conv2 hardtanh unshuffle selu conv3 celu(inplace) drop (AlphaDropout)
    up (bilinear) zpad conv4 unfold fold shuffle threshold logsig conv5 glu softsign tanhshrink down (nearest,
    to a size) sd (StochasticDepth, row) softmin head; loss bce_with_logits on [N, 2, 16, 16]."""

    def __init__(self):
        super().__init__()
        self.pad = nn.ReflectionPad2d(1)
        self.conv1 = nn.Conv2d(3, 8, 3)
        self.prelu = nn.PReLU(8)
        self.pad2 = nn.ReplicationPad2d((1, 0, 1, 0))
        self.conv2 = nn.Conv2d(8, 16, 2)
        self.hardtanh = nn.Hardtanh(-2.0, 2.0)
        self.unshuffle = nn.PixelUnshuffle(2)
        self.selu = nn.SELU()
        self.conv3 = nn.Conv2d(64, 32, 1)
        self.celu = nn.CELU(0.5, inplace=True)
        self.drop = nn.AlphaDropout(0.1)
        self.up = nn.Upsample(scale_factor=2, mode="bilinear")
        self.zpad = nn.ZeroPad2d(1)
        self.conv4 = nn.Conv2d(32, 16, 3)
        self.unfold = nn.Unfold(2, stride=2)
        self.fold = nn.Fold(16, 2, stride=2)
        self.shuffle = nn.PixelShuffle(2)
        self.threshold = nn.Threshold(0.1, 0.0)
        self.logsig = nn.LogSigmoid()
        self.conv5 = nn.Conv2d(4, 8, 3, padding=1)
        self.glu = nn.GLU(dim=1)
        self.softsign = nn.Softsign()
        self.tanhshrink = nn.Tanhshrink()
        self.down = nn.Upsample(size=(16, 16))
        self.sd = StochasticDepth(0.5, "row")
        self.softmin = nn.Softmin(dim=1)
        self.head = nn.Conv2d(4, 2, 1)

    NAMES = ("pad conv1 prelu pad2 conv2 hardtanh unshuffle selu conv3 celu drop up zpad conv4 unfold fold "
             "shuffle threshold logsig conv5 glu softsign tanhshrink down sd softmin head").split()

    def forward(self, x):
        # one statement per layer: `x` is rebound as each layer returns, so no Python variable
        # holds a tensor longer than nn.Sequential would (the inference peak stays comparable)
        for name in self.NAMES:
            x = getattr(self, name)(x)
        return x


class ZooSeq(nn.Module):
    """1-D: pad (ReflectionPad1d) conv1 act (Hardtanh, inplace) cpad (ConstantPad1d) up (linear,
    align_corners) conv2 prelu (one weight) rpad (ReplicationPad1d) pool flatten fc; loss l1 on [N, 8]."""

    def __init__(self):
        super().__init__()
        self.pad = nn.ReflectionPad1d(2)
        self.conv1 = nn.Conv1d(4, 8, 5)
        self.act = nn.Hardtanh(inplace=True)
        self.cpad = nn.ConstantPad1d((1, 2), 0.5)
        self.up = nn.Upsample(scale_factor=1.5, mode="linear", align_corners=True)
        self.conv2 = nn.Conv1d(8, 8, 3)
        self.prelu = nn.PReLU()
        self.rpad = nn.ReplicationPad1d(1)
        self.pool = nn.AdaptiveAvgPool1d(4)
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(32, 8)

    def forward(self, x):
        for name in ("pad", "conv1", "act", "cpad", "up", "conv2", "prelu", "rpad", "pool", "flatten", "fc"):
            x = getattr(self, name)(x)
        return x


class ZooMlp(nn.Module):
    """fc1 glu fc2 threshold(inplace) fc3 selu(inplace) fc4 out (LogSoftmax); loss nll."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.glu = nn.GLU()
        self.fc2 = nn.Linear(64, 64)
        self.threshold = nn.Threshold(-0.5, -0.5, inplace=True)
        self.fc3 = nn.Linear(64, 64)
        self.selu = nn.SELU(inplace=True)
        self.fc4 = nn.Linear(64, 10)
        self.out = nn.LogSoftmax(dim=1)

    def forward(self, x):
        for name in ("fc1", "glu", "fc2", "threshold", "fc3", "selu", "fc4", "out"):
            x = getattr(self, name)(x)
        return x


class ZooTorch2(nn.Module):
    """Layers torch 1.13 lacks or cannot train: pad (CircularPad2d) conv1 shuffle (ChannelShuffle)
    prelu zpad3 (ZeroPad3d, on channels too) conv2 flatten (start_dim 2) cpad (CircularPad1d)
    crop (ZeroPad1d, negative) conv3 glu head.{0 flatten, 1 linear}; loss huber."""

    NAMES = "pad conv1 shuffle prelu zpad3 conv2 flatten cpad crop conv3 glu head".split()

    def __init__(self):
        super().__init__()
        self.pad = nn.CircularPad2d(1)
        self.conv1 = nn.Conv2d(4, 8, 3)
        self.shuffle = nn.ChannelShuffle(2)
        self.prelu = nn.PReLU(8)
        self.zpad3 = nn.ZeroPad3d(1)
        self.conv2 = nn.Conv2d(10, 8, 3)
        self.flatten = nn.Flatten(2)
        self.cpad = nn.CircularPad1d(2)
        self.crop = nn.ZeroPad1d((0, -4))
        self.conv3 = nn.Conv1d(8, 4, 3, padding=1)
        self.glu = nn.GLU(dim=1)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(128, 10))

    def forward(self, x):
        for name in self.NAMES:
            x = getattr(self, name)(x)
        return x


class GruTagger(nn.Module):
    """gru (GRU 16 -> 32, 2 layers, bidirectional, batch_first, dropout 0.25) fc (Linear 64 -> 8)
    on every step; loss mse on [N, 12, 8]. The GRU's h_n is dropped at once (`[0]`)."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(16, 32, num_layers=2, bidirectional=True, batch_first=True, dropout=0.25)
        self.fc = nn.Linear(64, 8)

    def forward(self, x):
        return self.fc(self.gru(x)[0])


class LstmSeq(nn.Module):
    """lstm (LSTM 16 -> 32, 2 layers, batch_first) fc (Linear 32 -> 10) on every step; loss mse.
    torch 2.x runs oneDNN's LSTM here, 1.13 the generic path."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(16, 32, num_layers=2, batch_first=True)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        return self.fc(self.lstm(x)[0])


class RnnCells(nn.Module):
    """cell0 (LSTMCell 16 -> 32 on x) cell1 (LSTMCell on x and cell0's (h, c)) gru (GRUCell on x and
    cell1's h) fc (Linear 32 -> 10); loss cross_entropy."""

    def __init__(self):
        super().__init__()
        self.cell0 = nn.LSTMCell(16, 32)
        self.cell1 = nn.LSTMCell(16, 32)
        self.gru = nn.GRUCell(16, 32)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):  # one expression: each state is freed once read, as the spec's graph frees it
        return self.fc(self.gru(x, self.cell1(x, self.cell0(x))[0]))


LM_VOCAB = 200


class BowSparse(nn.Module):
    """examples/bow_sparse.yaml: embed (Embedding 500 -> 32, sparse=True: a sparse gradient) bag
    (the mean over the sequence) fc1 (Linear 32 -> 64) relu fc2 (Linear 64 -> 4)."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(500, 32, sparse=True)
        self.fc1 = nn.Linear(32, 64)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(64, 4)

    def forward(self, ids):
        return self.fc2(self.relu(self.fc1(self.embed(ids).mean(1))))


class LstmLM(nn.Module):
    """examples/lstm_lm.yaml: embed (Embedding 200 -> 32) lstm (LSTM 32 -> 32, 2 layers, batch_first)
    decoder (Linear 32 -> 200, its weight the embedding's: tied) on every step; the logits viewed as
    [N·T, 200]; loss cross_entropy against the next ids [N·T]."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(LM_VOCAB, 32)
        self.lstm = nn.LSTM(32, 32, num_layers=2, batch_first=True)
        self.decoder = nn.Linear(32, LM_VOCAB)
        self.decoder.weight = self.embed.weight

    def forward(self, ids):
        return self.decoder(self.lstm(self.embed(ids))[0]).view(-1, LM_VOCAB)


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


# Hugging Face transformers models from small configs with random weights (no download),
# torch 2.x only; `transformers` is imported when one is built. Their specs are the examples'
# with the --set values in validation/specs.json.
HF_VOCAB, HF_SEQ = 1000, 32


def _hf(kind, impl):
    def build():
        import transformers as T
        if kind == "gpt2":
            return T.GPT2LMHeadModel(T.GPT2Config(vocab_size=HF_VOCAB, n_positions=64, n_embd=64, n_layer=2, n_head=4,
                                                  attn_implementation=impl))
        if kind == "llama":
            return T.LlamaForCausalLM(T.LlamaConfig(vocab_size=HF_VOCAB, hidden_size=64, intermediate_size=128,
                                                    num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                                    max_position_embeddings=64, attn_implementation=impl))
        if kind == "bert_pretraining":
            return T.BertForPreTraining(T.BertConfig(vocab_size=HF_VOCAB, hidden_size=64, num_hidden_layers=2,
                                                     num_attention_heads=4, intermediate_size=128,
                                                     max_position_embeddings=64, attn_implementation=impl))
        if kind == "mixtral":  # experts_implementation "grouped_mm", a model's default on the CPU
            return T.MixtralForCausalLM(T.MixtralConfig(vocab_size=HF_VOCAB, hidden_size=64, intermediate_size=128,
                                                        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                                        num_local_experts=4, num_experts_per_tok=2,
                                                        max_position_embeddings=64, attn_implementation=impl))
        if kind == "roberta":  # position ids from padding_idx + 1: 66 positions for 32 + 2
            return T.RobertaModel(T.RobertaConfig(vocab_size=HF_VOCAB, hidden_size=64, num_hidden_layers=2,
                                                  num_attention_heads=4, intermediate_size=128, max_position_embeddings=66,
                                                  attn_implementation=impl))
        if kind == "t5":  # relu feed-forward, 2 + 2 layers, the relative bias's 32 buckets
            return T.T5ForConditionalGeneration(T.T5Config(vocab_size=HF_VOCAB, d_model=64, d_kv=16, d_ff=128, num_layers=2,
                                                           num_heads=4, decoder_start_token_id=0,
                                                           attn_implementation=impl))
        if kind == "bert":
            return T.BertModel(T.BertConfig(vocab_size=HF_VOCAB, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                            intermediate_size=128, max_position_embeddings=64, attn_implementation=impl))
        return T.ViTForImageClassification(T.ViTConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                                       intermediate_size=128, image_size=32, patch_size=8, num_labels=10,
                                                       attn_implementation=impl))
    return build


def _lm_logits(model, ids):  # ForCausalLMLoss's view: [B * T, vocab]
    return model(input_ids=ids).logits.view(-1, HF_VOCAB)


def _bert_pooled(model, ids):
    return model(input_ids=ids).pooler_output


def _bert_pretraining(model, ids, targets=None):
    """BertForPreTraining's two outputs (the MLM scores viewed as its loss views them); with
    the targets, its own output: HF's loss is masked_lm_loss + next_sentence_loss."""
    if targets is None:
        out = model(input_ids=ids)
        return out.prediction_logits.view(-1, HF_VOCAB), out.seq_relationship_logits
    return model(input_ids=ids, labels=targets[0].view(ids.shape[0], -1), next_sentence_label=targets[1])


def _t5(model, ids, targets=None):
    """T5ForConditionalGeneration with use_cache=False (examples/t5.yaml says why). With the targets,
    its own output: the labels [B, T], shifted right into the decoder's ids inside forward, and
    CrossEntropyLoss(ignore_index=-100) over the logits; without, the logits for the shifted ids."""
    if targets is None:
        return model(input_ids=ids, decoder_input_ids=model._shift_right(ids), use_cache=False).logits.view(-1, HF_VOCAB)
    return model(input_ids=ids, labels=targets[0].view(ids.shape[0], -1), use_cache=False)


def _vit_logits(model, pixels):
    return model(pixel_values=pixels).logits


class TorchEncoder(nn.Module):
    """PyTorch's own nn.TransformerEncoder: two nn.TransformerEncoderLayer(32, 4, 64, dropout
    0.1, batch_first) in a row; norm_first=True also with GELU and a final LayerNorm."""

    def __init__(self, norm_first=False):
        super().__init__()
        layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.1, batch_first=True,
                                           norm_first=norm_first, activation="gelu" if norm_first else "relu")
        self.encoder = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(32) if norm_first else None,
                                             enable_nested_tensor=False)

    def forward(self, x):
        return self.encoder(x)


class TorchDecoder(nn.Module):
    """One nn.TransformerDecoderLayer(32, 4, 64, batch_first), its memory the input itself."""

    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerDecoderLayer(32, 4, dim_feedforward=64, dropout=0.1, batch_first=True)

    def forward(self, x):
        return self.layer(x, x)


class MaskedAttention(nn.Module):
    """nn.MultiheadAttention(32, 4, batch_first) self-attention with a causal bool attn_mask
    [L, L] and a bool key_padding_mask [N, L] (the last two positions padded), both made in
    forward, need_weights=False; then a Linear."""

    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(32, 4, batch_first=True)
        self.out = nn.Linear(32, 32)

    def forward(self, x):
        n, length = x.shape[0], x.shape[1]
        mask = torch.ones(length, length, dtype=torch.bool).triu(1)
        padding = torch.zeros(n, length, dtype=torch.bool)
        padding[:, -2:] = True
        y, _ = self.attn(x, x, x, key_padding_mask=padding, attn_mask=mask, need_weights=False)
        return self.out(y)


def _hf_net(kind, impl):
    if kind == "t5":
        return Net(_hf(kind, impl), (HF_SEQ,), "int64", "cross_entropy", [2], _t5, HF_VOCAB, own_loss=True)
    if kind == "vit":
        return Net(_hf(kind, impl), (3, 32, 32), "float32", "cross_entropy", [2], _vit_logits)
    pooled = kind in ("bert", "roberta")
    call = _bert_pooled if pooled else _lm_logits
    return Net(_hf(kind, impl), (HF_SEQ,), "int64", "mean" if pooled else "cross_entropy", [2], call,
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
}
NETWORKS.update({"hf_%s_%s" % (kind, impl): _hf_net(kind, impl)
                 for kind in ("gpt2", "llama", "bert", "vit", "roberta", "mixtral", "t5") for impl in ("sdpa", "eager")})
# BertForPreTraining: masked-LM scores [B * T, vocab] and next-sentence scores [B, 2], each with
# cross-entropy, summed by the model itself.
NETWORKS.update({name: Net(_hf("bert_pretraining", impl), (HF_SEQ,), "int64",
                           [("cross_entropy", None), ("cross_entropy", None)], [2], _bert_pretraining,
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
