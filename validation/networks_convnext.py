"""torchvision's ConvNeXt, written out (torchvision 0.14.1, models/convnext.py and ops/misc.py's
Conv2dNormActivation and Permute): the same modules, built in the same order, with the same
names, initialisation and forward() code, at any width and depth (examples/convnext_tiny.yaml's
variables c, d1..d4). No torchvision import: it does not install beside torch 2.13's CPU
build. check_torchvision.py compares it with torchvision's convnext_tiny and a small
ConvNeXt under torch 1.13.

Stochastic depth (mode row) draws which samples keep their residual branch, at random in
training mode; what it allocates does not depend on the draw: a [N, 1, 1, 1] noise tensor
(bernoulli_, div_ in place), kept by the multiply, and an output of the input's size even for
samples it zeroes. measure.py seeds torch (manual_seed(0)) before building the model, so the
draws, like every other random number, are the same on every run anyway; the first block's
p is 0 (torchvision's linear rule), which returns the input itself, as nnmem's does.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


from networks_efficientnet import StochasticDepth  # torchvision.ops.StochasticDepth


class LayerNorm2d(nn.LayerNorm):
    """torchvision.models.convnext.LayerNorm2d: layer_norm over the channels, permuted last and back."""

    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        x = x.permute(0, 3, 1, 2)
        return x


class Permute(nn.Module):
    """torchvision.ops.misc.Permute."""

    def __init__(self, dims):
        super().__init__()
        self.dims = dims

    def forward(self, x):
        return torch.permute(x, self.dims)


class Conv2dNormActivation(nn.Sequential):
    """torchvision.ops.Conv2dNormActivation(3, c, 4, 4, padding 0, LayerNorm2d, no activation, bias): the stem."""

    def __init__(self, cin, cout):
        super().__init__(nn.Conv2d(cin, cout, kernel_size=4, stride=4, padding=0, bias=True), LayerNorm2d(cout, eps=1e-6))


class CNBlock(nn.Module):
    def __init__(self, dim, layer_scale, stochastic_depth_prob):
        super().__init__()
        self.block = nn.Sequential(
            nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim, bias=True),
            Permute([0, 2, 3, 1]),
            nn.LayerNorm(dim, eps=1e-6),
            nn.Linear(in_features=dim, out_features=4 * dim, bias=True),
            nn.GELU(),
            nn.Linear(in_features=4 * dim, out_features=dim, bias=True),
            Permute([0, 3, 1, 2]),
        )
        self.layer_scale = nn.Parameter(torch.ones(dim, 1, 1) * layer_scale)
        self.stochastic_depth = StochasticDepth(stochastic_depth_prob, "row")

    def forward(self, input):
        result = self.layer_scale * self.block(input)
        result = self.stochastic_depth(result)
        result += input
        return result


class ConvNeXt(nn.Module):
    """features.{0 stem, 1 3 5 7 stages of CNBlocks, 2 4 6 downsampling}, avgpool,
    classifier.{0 LayerNorm2d, 1 flatten, 2 linear}; convnext_tiny's defaults."""

    def __init__(self, c=96, depths=(3, 3, 9, 3), stochastic_depth_prob=0.1, layer_scale=1e-6, num_classes=1000):
        super().__init__()
        # (input_channels, out_channels, num_layers) as torchvision's CNBlockConfig
        setting = [(c, 2 * c, depths[0]), (2 * c, 4 * c, depths[1]), (4 * c, 8 * c, depths[2]), (8 * c, None, depths[3])]
        layers = [Conv2dNormActivation(3, c)]
        total_stage_blocks = sum(n for _, _, n in setting)
        stage_block_id = 0
        for cin, cout, n in setting:
            stage = []
            for _ in range(n):
                sd_prob = stochastic_depth_prob * stage_block_id / (total_stage_blocks - 1.0)
                stage.append(CNBlock(cin, layer_scale, sd_prob))
                stage_block_id += 1
            layers.append(nn.Sequential(*stage))
            if cout is not None:
                layers.append(nn.Sequential(LayerNorm2d(cin, eps=1e-6), nn.Conv2d(cin, cout, kernel_size=2, stride=2)))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(LayerNorm2d(8 * c, eps=1e-6), nn.Flatten(1), nn.Linear(8 * c, num_classes))
        for m in self.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, x):
        x = self.features(x)
        x = self.avgpool(x)
        x = self.classifier(x)
        return x


def convnext_valid():
    """The validation network: examples/convnext_tiny.yaml with c 16, depths 3, 3, 3, 3 (at 32 x 32)."""
    return ConvNeXt(c=16, depths=(3, 3, 3, 3))
