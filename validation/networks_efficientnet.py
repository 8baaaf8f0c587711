"""torchvision's EfficientNet-B0 written out, with its stochastic depth (networks.py's NETWORKS;
networks_convnext.py reuses StochasticDepth)."""
import math

import torch
import torch.nn as nn


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
