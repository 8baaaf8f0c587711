"""torchvision's ResNet-18/50 and VGG16 written out, DAVEnet's VGG16 trunk, and the seeds' small
CNNs (TensorFlow's MNIST example, the fixed simple CNN, LeNet-5): validation networks of networks.py."""

import torch
import torch.nn as nn


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
