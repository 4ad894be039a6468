"""The image views of the deep partial-label papers, on mini-batches on the device (PyTorch): rows of
``C x H x W`` pixels in ``[0, 1]``, channel-major, every image drawn independently from the loop's
generator.

* :class:`WeakView` -- the view every method trains on (PRODEN, PiCO, PLENCH's ``transform``): a
  shift of up to 4 pixels (zero padding, then a crop back: ``RandomCrop(32, 4)``) and a horizontal
  flip with probability 1/2;
* :class:`StrongView` -- the second view of PiCO and its family, CRDPLL, ABLE, DIRK, CroSel (PLENCH's
  and PiCO's ``strong_transform``): a random resized crop (area 0.2-1, aspect 3/4-4/3), a
  flip, then FixMatch's RandAugment as those codes run it (three operations drawn with replacement
  from fourteen, each at a magnitude drawn uniformly from its range), then a Cutout of a random
  side up to half the image, filled with CIFAR's mean colour (125, 123, 114).

The operations follow PIL's definitions (which the authors' per-image pipelines call) on float
images: an enhancement blends with its degenerate image, the geometric operations sample with
zero fill. Nothing is done image by image on the host; on CUDA a batch's views are a few kernels.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

__all__ = ["WeakView", "StrongView", "RAND_AUGMENT"]

#: FixMatch's RandAugment as PiCO's and PLENCH's ``RandomAugment(3)``: (operation, low, high)
RAND_AUGMENT = (("auto_contrast", 0, 1), ("brightness", 0.05, 0.95), ("color", 0.05, 0.95),
                ("contrast", 0.05, 0.95), ("equalize", 0, 1), ("identity", 0, 1), ("posterize", 4, 8),
                ("rotate", -30, 30), ("sharpness", 0.05, 0.95), ("shear_x", -0.3, 0.3), ("shear_y", -0.3, 0.3),
                ("solarize", 0, 256), ("translate_x", -0.3, 0.3), ("translate_y", -0.3, 0.3))
_FILL = (125 / 255, 123 / 255, 114 / 255)


def _images(x, shape):
    return x.reshape(x.shape[0], *shape)


def _rand(n, generator, device):
    return torch.rand(n, generator=generator).to(device)


def _sample(images, theta):
    """Each image resampled at ``theta`` (n, 2, 3), output coordinates -> input coordinates in
    [-1, 1], bilinear, zero outside."""
    grid = F.affine_grid(theta.to(images.dtype), list(images.shape), align_corners=False)
    return F.grid_sample(images, grid, mode="bilinear", padding_mode="zeros", align_corners=False)


def _gray(images):
    if images.shape[1] == 1:
        return images
    r, g, b = images[:, 0:1], images[:, 1:2], images[:, 2:3]
    return 0.299 * r + 0.587 * g + 0.114 * b


def _blend(degenerate, images, v):
    return (degenerate + v[:, None, None, None] * (images - degenerate)).clamp(0, 1)


def _equalize(images):
    """Per channel, the pixel levels mapped by their cumulative histogram (PIL's ``equalize``)."""
    n, c, h, w = images.shape
    levels = (images * 255).round().long().reshape(n * c, h * w)
    hist = torch.zeros(n * c, 256, device=images.device).scatter_add_(1, levels, torch.ones_like(levels,
                                                                                             dtype=torch.float))
    last = hist.gather(1, levels.max(dim=1, keepdim=True).values)   # the count of the top level
    step = torch.div(h * w - last, 255, rounding_mode="floor")
    before = hist.cumsum(1) - hist
    lut = torch.where(step > 0, torch.div(before + torch.div(step, 2, rounding_mode="floor"), step.clamp_min(1),
                                          rounding_mode="floor").clamp(0, 255),
                      torch.arange(256, device=images.device, dtype=torch.float)[None].expand(n * c, 256))
    return (lut.gather(1, levels) / 255).reshape(n, c, h, w)


def _op(name, images, v):
    """One operation at magnitudes ``v`` (one per image)."""
    n = images.shape[0]
    one, zero = torch.ones_like(v), torch.zeros_like(v)
    if name == "identity":
        return images
    if name == "auto_contrast":
        lo = images.amin(dim=(2, 3), keepdim=True)
        hi = images.amax(dim=(2, 3), keepdim=True)
        return torch.where(hi > lo, (images - lo) / (hi - lo).clamp_min(1e-8), images)
    if name == "brightness":
        return _blend(torch.zeros_like(images), images, v)
    if name == "color":
        return _blend(_gray(images).expand_as(images), images, v)
    if name == "contrast":
        return _blend(_gray(images).mean(dim=(1, 2, 3), keepdim=True).expand_as(images), images, v)
    if name == "equalize":
        return _equalize(images)
    if name == "posterize":
        keep = 2.0 ** (8 - v.floor())[:, None, None, None]
        return torch.floor(torch.floor(images * 255) / keep) * keep / 255
    if name == "sharpness":
        kernel = torch.tensor([[1.0, 1, 1], [1, 5, 1], [1, 1, 1]], device=images.device, dtype=images.dtype) / 13
        c = images.shape[1]
        smooth = F.conv2d(images, kernel.expand(c, 1, 3, 3), groups=c)
        degenerate = images.clone()
        degenerate[:, :, 1:-1, 1:-1] = smooth                    # PIL keeps the border pixels
        return _blend(degenerate, images, v)
    if name == "solarize":
        return torch.where(images * 255 >= v[:, None, None, None], 1 - images, images)
    if name == "rotate":
        a = v * math.pi / 180
        theta = torch.stack([torch.stack([a.cos(), -a.sin(), zero], 1), torch.stack([a.sin(), a.cos(), zero], 1)], 1)
    elif name == "shear_x":      # PIL (1, v, 0, 0, 1, 0) about the top-left corner
        theta = torch.stack([torch.stack([one, v, v], 1), torch.stack([zero, one, zero], 1)], 1)
    elif name == "shear_y":
        theta = torch.stack([torch.stack([one, zero, zero], 1), torch.stack([v, one, v], 1)], 1)
    elif name == "translate_x":  # a fraction v of the width
        theta = torch.stack([torch.stack([one, zero, 2 * v], 1), torch.stack([zero, one, zero], 1)], 1)
    elif name == "translate_y":
        theta = torch.stack([torch.stack([one, zero, zero], 1), torch.stack([zero, one, 2 * v], 1)], 1)
    else:
        raise ValueError(f"unknown operation {name!r}")
    return _sample(images, theta.reshape(n, 2, 3))


class WeakView:
    """Shift by up to ``pad`` pixels (zero padding, a random crop back) and flip with probability 1/2."""

    def __init__(self, shape, pad: int = 4):
        self.shape, self.pad = tuple(shape), int(pad)

    def __call__(self, x, generator=None):
        n, device, p = x.shape[0], x.device, self.pad
        c, h, w = self.shape
        images = F.pad(_images(x, self.shape), (p, p, p, p))
        dy = torch.randint(0, 2 * p + 1, (n,), generator=generator).to(device)
        dx = torch.randint(0, 2 * p + 1, (n,), generator=generator).to(device)
        flip = (torch.rand(n, generator=generator) < 0.5).to(device)
        rows = dy[:, None] + torch.arange(h, device=device)[None, :]
        cols = dx[:, None] + torch.arange(w, device=device)[None, :]
        cols = torch.where(flip[:, None], cols.flip(1), cols)
        out = images[torch.arange(n, device=device)[:, None, None, None], torch.arange(c, device=device)[None, :, None,
                     None], rows[:, None, :, None], cols[:, None, None, :]]
        return out.reshape(n, -1)


class StrongView:
    """Random resized crop and flip, ``n_ops`` RandAugment operations, a Cutout (module docstring);
    ``shape`` ``(C, H, W)``, or ``None``: read off the rows' width."""

    def __init__(self, shape=None, n_ops: int = 3, scale=(0.2, 1.0), ratio=(3 / 4, 4 / 3)):
        self.shape, self.n_ops, self.scale, self.ratio = shape, int(n_ops), scale, ratio

    def _crop_flip(self, images, generator):
        n, device = images.shape[0], images.device
        area = self.scale[0] + (self.scale[1] - self.scale[0]) * _rand(n, generator, device)
        log_r = math.log(self.ratio[0]) + (math.log(self.ratio[1]) - math.log(self.ratio[0])) * _rand(n, generator,
                                                                                                        device)
        r = log_r.exp()
        w, h = (area * r).sqrt().clamp(max=1.0), (area / r).sqrt().clamp(max=1.0)
        cx = (1 - w) * (2 * _rand(n, generator, device) - 1)     # the crop's centre, inside the image
        cy = (1 - h) * (2 * _rand(n, generator, device) - 1)
        sign = torch.where(_rand(n, generator, device) < 0.5, -1.0, 1.0)
        zero = torch.zeros_like(w)
        theta = torch.stack([torch.stack([w * sign, zero, cx], 1), torch.stack([zero, h, cy], 1)], 1)
        return _sample(images, theta)

    def _cutout(self, images, generator):
        n, _, h, w = images.shape
        device = images.device
        side = 0.5 * _rand(n, generator, device) * w
        x0 = (_rand(n, generator, device) * w - side / 2).clamp_min(0).floor()
        y0 = (_rand(n, generator, device) * h - side / 2).clamp_min(0).floor()
        xs, ys = torch.arange(w, device=device)[None], torch.arange(h, device=device)[None]
        inside_x = (xs >= x0[:, None]) & (xs <= (x0 + side)[:, None])
        inside_y = (ys >= y0[:, None]) & (ys <= (y0 + side)[:, None])
        hole = (inside_y[:, :, None] & inside_x[:, None, :] & (side[:, None, None] > 0))[:, None]
        fill = torch.tensor(_FILL[:images.shape[1]] if images.shape[1] == 3 else (0.5,), device=device,
                            dtype=images.dtype)[None, :, None, None]
        return torch.where(hole, fill, images)

    def __call__(self, x, generator=None):
        from plcore_deep._image_networks import image_shape

        n, device = x.shape[0], x.device
        shape = self.shape or image_shape(x.shape[1])
        images = self._crop_flip(_images(x, shape), generator)
        for _ in range(self.n_ops):
            which = torch.randint(0, len(RAND_AUGMENT), (n,), generator=generator).to(device)
            u = _rand(n, generator, device)
            out = images.clone()
            for k, (name, low, high) in enumerate(RAND_AUGMENT):
                rows = torch.nonzero(which == k).flatten()
                if rows.numel():
                    out[rows] = _op(name, images[rows], low + (high - low) * u[rows]).clamp(0, 1)
            images = out
        return self._cutout(images, generator).reshape(n, -1)
