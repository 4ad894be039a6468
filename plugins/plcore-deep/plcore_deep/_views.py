"""Views of a row, for the methods that contrast or match several views of it (PiCO, ABLE, DIRK,
CRDPLL); PyTorch.

A view is a callable ``view(x, generator) -> x'`` on a mini-batch on the device, drawing its
randomness from the loop's generator (so a fit is reproducible). :func:`make_view` picks one by
name.

* ``"identity"``: the row itself -- PLENCH's choice for tabular data (its tabular data sets
  return the same row as the weak, strong and distillation view);
* ``"gaussian"``: ``x + noise_scale * N(0, I)``, the field's tabular recipe for PiCO (Fuchs &
  Kalinke, UAI 2025);
* ``"image"``: for rows of square images (``network="lenet"``, one channel; the CIFAR networks,
  three): a random shift of up to 4 pixels (zero padding 4, then a random crop back to the side,
  as ``RandomCrop(side, 4)``) and a horizontal flip with probability 1/2, each row drawn
  independently (:class:`plcore_deep._image_views.WeakView`);
* ``"strong"``: for the CIFAR networks, the papers' strong augmentation (a random resized crop,
  a flip, RandAugment and Cutout: :class:`plcore_deep._image_views.StrongView`), the default there.

With a CIFAR network every method also trains on the ``"image"`` view of each batch (the papers'
and PLENCH's training transform): the loop applies it, and a method's second view is drawn from it.
"""

from __future__ import annotations

import torch

__all__ = ["VIEWS", "make_view", "identity", "GaussianNoise", "ImageShiftFlip"]

VIEWS = ("identity", "gaussian", "image", "strong")


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
        from plcore_deep._image_networks import image_shape
        from plcore_deep._image_views import WeakView

        return WeakView(image_shape(x.shape[1]), self.pad)(x, generator)


def make_view(name: str, *, network: str = "mlp", noise_scale: float = 0.1):
    """The view ``name`` (:data:`VIEWS`); ``"auto"`` is ``"strong"`` for the CIFAR networks,
    ``"image"`` for ``network="lenet"`` and ``"gaussian"`` otherwise (the view plcore's published
    PiCO figures were measured with; PLENCH's tabular runs are ``"identity"``)."""
    from plcore_deep._image_networks import IMAGE_NETWORKS

    if name == "auto":
        name = "strong" if network in IMAGE_NETWORKS else "image" if network == "lenet" else "gaussian"
    if name == "identity":
        return identity
    if name == "gaussian":
        return GaussianNoise(noise_scale)
    if name == "image":
        return ImageShiftFlip()
    if name == "strong":
        from plcore_deep._image_views import StrongView

        return StrongView()
    raise ValueError(f"augmentation must be one of {('auto',) + VIEWS}, got {name!r}")
