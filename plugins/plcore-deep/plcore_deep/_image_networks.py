"""The CIFAR backbones of the deep partial-label papers (PyTorch), on rows of ``3 x 32 x 32`` pixels
in ``[0, 1]``, channel-major (:mod:`plcore.datasets.loaders.cifar`).

* ``"resnet18"``: ResNet-18 (He et al., 2016) with the CIFAR stem (one 3x3 convolution, stride 1,
  no max-pool), widths 64-128-256-512, two basic blocks a stage: PRODEN's, PiCO's, CAVL's, POP's
  CIFAR network (``resnet.py`` in PiCO's code);
* ``"wrn28_2"``: WideResNet-28-2 (Zagoruyko & Komodakis, 2016), pre-activation blocks, widths
  32-64-128, four blocks a stage (the network of CRDPLL's and ALIM's CIFAR runs);
* ``"resnet32"``: the CIFAR ResNet-32 (He et al., 2016, section 4.2), widths 16-32-64, five basic
  blocks a stage: PLENCH's image featurizer (``lib/resnet.py``, ``resnet(depth=32)``).

Each starts with :class:`ImageInput`: the row reshaped to an image and each channel standardised by
the training images' own mean and standard deviation (set by :func:`set_input_statistics` when a fit
starts; saved with the weights), so the data stay in ``[0, 1]`` for the augmentations. torchvision's
``resnet18`` would need another PyTorch build here (the CUDA wheels beside torchvision, 5.5 GB), so
the blocks are written out; no pretrained weights are used.
"""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["IMAGE_NETWORKS", "ImageInput", "image_shape", "build_image_network", "set_input_statistics",
           "image_macs"]

#: name -> multiply-adds of one 32 x 32 image's forward pass (counted by benchmarks/images.py)
IMAGE_NETWORKS = {"resnet18": 556_000_000, "wrn28_2": 216_000_000, "resnet32": 69_000_000}


def image_shape(n_features: int) -> tuple[int, int, int]:
    """``(channels, side, side)`` of rows of ``n_features`` values: three-channel square images
    (``3 * side^2``) where that divides, else one channel; a ``ValueError`` otherwise."""
    for channels in (3, 1):
        side = math.isqrt(n_features // channels)
        if n_features % channels == 0 and channels * side * side == n_features and side >= 8:
            return channels, side, side
    raise ValueError(f"an image network needs rows of square images (3 x side^2 values, e.g. 3072 for CIFAR's "
                     f"32 x 32 colour images), got d={n_features}")


class ImageInput(nn.Module):
    """Rows -> ``(n, C, H, W)`` images, each channel standardised by stored statistics."""

    def __init__(self, n_features: int):
        super().__init__()
        self.shape = image_shape(n_features)
        self.register_buffer("mean", torch.zeros(self.shape[0]))
        self.register_buffer("std", torch.ones(self.shape[0]))

    def forward(self, x):
        images = x.reshape(x.shape[0], *self.shape)
        return (images - self.mean[None, :, None, None]) / self.std[None, :, None, None]


@torch.no_grad()
def set_input_statistics(model: nn.Module, X: torch.Tensor) -> None:
    """Every :class:`ImageInput` of ``model`` standardises by the channel means and standard
    deviations of the rows ``X`` (the training images)."""
    for module in model.modules():
        if isinstance(module, ImageInput):
            images = X.reshape(X.shape[0], module.shape[0], -1)
            module.mean.copy_(images.mean(dim=(0, 2)))
            module.std.copy_(images.std(dim=(0, 2)).clamp_min(1e-6))


def _conv3(a, b, stride=1):
    return nn.Conv2d(a, b, 3, stride=stride, padding=1, bias=False)


class _Basic(nn.Module):
    """conv-BN-ReLU-conv-BN plus the shortcut (a 1x1 convolution and BN where the shape changes), ReLU."""

    def __init__(self, a, b, stride):
        super().__init__()
        self.body = nn.Sequential(_conv3(a, b, stride), nn.BatchNorm2d(b), nn.ReLU(inplace=True), _conv3(b, b),
                                  nn.BatchNorm2d(b))
        self.short = (nn.Identity() if stride == 1 and a == b else
                      nn.Sequential(nn.Conv2d(a, b, 1, stride=stride, bias=False), nn.BatchNorm2d(b)))

    def forward(self, x):
        return torch.relu(self.body(x) + self.short(x))


class _PreAct(nn.Module):
    """WideResNet's block: BN-ReLU-conv-BN-ReLU-conv plus the shortcut (a 1x1 convolution of the
    activated input where the shape changes)."""

    def __init__(self, a, b, stride):
        super().__init__()
        self.pre = nn.Sequential(nn.BatchNorm2d(a), nn.ReLU(inplace=True))
        self.body = nn.Sequential(_conv3(a, b, stride), nn.BatchNorm2d(b), nn.ReLU(inplace=True), _conv3(b, b))
        self.short = None if stride == 1 and a == b else nn.Conv2d(a, b, 1, stride=stride, bias=False)

    def forward(self, x):
        o = self.pre(x)
        return self.body(o) + (x if self.short is None else self.short(o))


def _stages(block, widths, blocks, first_width):
    layers, a = [], first_width
    for k, b in enumerate(widths):
        for i in range(blocks):
            layers.append(block(a, b, 2 if i == 0 and k > 0 else 1))
            a = b
    return layers


def build_image_network(name: str, n_features: int, n_classes: int) -> nn.Sequential:
    """The backbone ``name`` (:data:`IMAGE_NETWORKS`) with a linear classifier on its pooled
    features. PyTorch's default initialisation (drawn from the global generator), except
    ResNet-32's convolutions: He-normal, as PLENCH initialises them."""
    stem_channels = image_shape(n_features)[0]
    if name == "resnet18":
        body = [_conv3(stem_channels, 64), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
                *_stages(_Basic, (64, 128, 256, 512), 2, 64)]
        width = 512
    elif name == "wrn28_2":
        body = [_conv3(stem_channels, 16), *_stages(_PreAct, (32, 64, 128), 4, 16), nn.BatchNorm2d(128),
                nn.ReLU(inplace=True)]
        width = 128
    elif name == "resnet32":
        body = [_conv3(stem_channels, 16), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
                *_stages(_Basic, (16, 32, 64), 5, 16)]
        width = 64
    else:
        raise ValueError(f"network must be one of {', '.join(IMAGE_NETWORKS)}, got {name!r}")
    model = nn.Sequential(ImageInput(n_features), *body, nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(width, n_classes))
    if name == "resnet32":
        for m in model.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.normal_(m.weight, 0.0, math.sqrt(2.0 / (m.kernel_size[0] * m.kernel_size[1] * m.out_channels)))
    return model


def image_macs(name: str, n_features: int) -> int:
    """Multiply-adds of one row's forward pass, scaled from a 32 x 32 image's by the pixel count."""
    _, h, w = image_shape(n_features)
    return int(IMAGE_NETWORKS[name] * h * w / 1024)
