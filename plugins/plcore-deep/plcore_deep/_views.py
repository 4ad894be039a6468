"""Views of a row, for the methods that contrast or match several views of it (PiCO, ABLE, DIRK,
CRDPLL); PyTorch.

A view is a callable ``view(x, generator) -> x'`` on a mini-batch on the device, drawing its
randomness from the loop's generator (so a fit is reproducible). :func:`make_view` picks one by
name.

* ``"identity"``: the row itself -- PLENCH's choice for tabular data (its tabular data sets
  return the same row as the weak, strong and distillation view);
* ``"gaussian"``: ``x + noise_scale * N(0, I)``, the field's tabular recipe for PiCO (Fuchs &
  Kalinke, UAI 2025);
* ``"image"``: for rows of square one-channel images (``network="lenet"``): a random shift of up
  to 4 pixels (zero padding 4, then a random crop back to the side, as ``RandomCrop(side, 4)``)
  and a horizontal flip with probability 1/2, each row drawn independently.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

__all__ = ["VIEWS", "make_view", "identity", "GaussianNoise", "ImageShiftFlip"]

VIEWS = ("identity", "gaussian", "image")


def identity(x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
    return x


class GaussianNoise:
    """``x + scale * N(0, I)``, the noise drawn on the CPU from ``generator`` (device independent)."""

    def __init__(self, scale: float):
        self.scale = float(scale)

    def __call__(self, x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        noise = torch.randn(x.shape, generator=generator).to(x.device)
        return x + self.scale * noise


class ImageShiftFlip:
    """A random crop after zero padding of ``pad`` pixels, and a horizontal flip with probability
    1/2, per row of ``side x side`` pixels (flattened)."""

    def __init__(self, pad: int = 4):
        self.pad = int(pad)

    def __call__(self, x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        n, d = x.shape
        side, p = math.isqrt(d), self.pad
        images = F.pad(x.reshape(n, 1, side, side), (p, p, p, p))
        dy = torch.randint(0, 2 * p + 1, (n,), generator=generator).to(x.device)
        dx = torch.randint(0, 2 * p + 1, (n,), generator=generator).to(x.device)
        flip = (torch.rand(n, generator=generator) < 0.5).to(x.device)
        rows = (dy[:, None] + torch.arange(side, device=x.device)[None, :])            # (n, side)
        cols = (dx[:, None] + torch.arange(side, device=x.device)[None, :])
        cols = torch.where(flip[:, None], cols.flip(1), cols)
        out = images[torch.arange(n, device=x.device)[:, None, None], 0, rows[:, :, None], cols[:, None, :]]
        return out.reshape(n, d)


def make_view(name: str, *, network: str = "mlp", noise_scale: float = 0.1):
    """The view ``name`` (:data:`VIEWS`); ``"auto"`` is ``"image"`` for ``network="lenet"`` and
    ``"gaussian"`` otherwise (the view plcore's published PiCO figures were measured with;
    PLENCH's tabular runs are ``"identity"``)."""
    if name == "auto":
        name = "image" if network == "lenet" else "gaussian"
    if name == "identity":
        return identity
    if name == "gaussian":
        return GaussianNoise(noise_scale)
    if name == "image":
        return ImageShiftFlip()
    raise ValueError(f"augmentation must be one of {('auto',) + VIEWS}, got {name!r}")
