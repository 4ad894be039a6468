"""Images per second of the deep learners' image path (issue 74): training steps of PRODEN and PiCO on
the CIFAR backbones, and the two views beside the per-image PIL pipeline the authors' code runs (PiCO's
and PLENCH's ``strong_transform``: RandomResizedCrop, flip, RandAugment(3), Cutout), on the same images.

    python benchmarks/images.py                      # the CPU: ResNet-32 and ResNet-18, batch 64
    python benchmarks/images.py --device cuda --batch-size 256 --networks resnet18 wrn28_2 resnet32

Reads one of the CIFAR-10 subsets (``--data``, default ``$PLCORE_DATA_HOME/images/cifar10-subset-a.npz``).
Prints one table: per learner and network the training images per second (weak view, and PiCO's
strong view, included; the median of ``--repeat`` timings and their spread, the range over the
median), and per view images per second batched on the device against per image in PIL.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

def _default_data() -> Path:
    """``$PLCORE_DATA_HOME/images/cifar10-subset-a.npz``, else the one in ``../shared/datasets``."""
    import os

    home = os.environ.get("PLCORE_DATA_HOME")
    base = Path(home).expanduser() if home else Path(__file__).resolve().parents[2] / "shared" / "datasets"
    return base / "images" / "cifar10-subset-a.npz"


def _data(path, n):
    from plcore.datasets import load_dataset
    from plcore.registry import get_registry
    from plcore.run.protocols import apply_bags
    from plcore.utils import dense_candidates

    ds = load_dataset(path)
    ds = apply_bags(ds.subset(np.arange(min(n, ds.n_samples))),
                    get_registry().create("bags", "flip", p=0.3, random_state=0), 0)
    return ds.X, dense_candidates(ds.S)


def train_rate(learner, network, X, S, *, batch_size, epochs, device, repeat=3) -> tuple[float, float, float]:
    """(images per second, seconds per step, relative spread) of ``epochs`` epochs: a fit of
    ``1 + epochs`` epochs less one of 1 epoch (the set-up and the final pass cancel out), after a
    warm-up fit; the median of ``repeat`` such differences (a shared CPU's figures move between
    runs), and their range over the median."""
    from plcore.registry import get_registry

    def fit(n_epochs):
        est = get_registry().create("learner", learner)
        est.set_params(network=network, n_epochs=n_epochs, batch_size=batch_size, device=device, random_state=0)
        t0 = time.perf_counter()
        est.fit(X, S)
        return time.perf_counter() - t0

    fit(1)                                       # threads, kernels and caches warmed up
    spans = [max(fit(1 + epochs) - fit(1), 1e-9) for _ in range(repeat)]
    seconds = float(np.median(spans))
    steps = epochs * int(np.ceil(len(X) / batch_size))
    return epochs * len(X) / seconds, seconds / steps, (max(spans) - min(spans)) / seconds


def _pil_strong(images_uint8, rng):
    """The authors' per-image strong view in PIL (RandomResizedCrop(0.2-1), flip, RandAugment(3) with a
    Cutout of up to half the side), as PiCO's ``utils/randaugment.py`` and PLENCH's run it."""
    import random

    from PIL import Image, ImageEnhance, ImageOps

    ops = [lambda im, v: ImageOps.autocontrast(im), lambda im, v: ImageEnhance.Brightness(im).enhance(v),
           lambda im, v: ImageEnhance.Color(im).enhance(v), lambda im, v: ImageEnhance.Contrast(im).enhance(v),
           lambda im, v: ImageOps.equalize(im), lambda im, v: im, lambda im, v: ImageOps.posterize(im, int(v)),
           lambda im, v: im.rotate(v), lambda im, v: ImageEnhance.Sharpness(im).enhance(v),
           lambda im, v: im.transform(im.size, Image.AFFINE, (1, v, 0, 0, 1, 0)),
           lambda im, v: im.transform(im.size, Image.AFFINE, (1, 0, 0, v, 1, 0)),
           lambda im, v: ImageOps.solarize(im, int(v)),
           lambda im, v: im.transform(im.size, Image.AFFINE, (1, 0, v * im.size[0], 0, 1, 0)),
           lambda im, v: im.transform(im.size, Image.AFFINE, (1, 0, 0, 0, 1, v * im.size[1]))]
    ranges = [(0, 1), (0.05, 0.95), (0.05, 0.95), (0.05, 0.95), (0, 1), (0, 1), (4, 8), (-30, 30), (0.05, 0.95),
              (-0.3, 0.3), (-0.3, 0.3), (0, 256), (-0.3, 0.3), (-0.3, 0.3)]
    out = []
    for image in images_uint8:
        im = Image.fromarray(image)
        area, ratio = rng.uniform(0.2, 1.0), np.exp(rng.uniform(np.log(3 / 4), np.log(4 / 3)))
        w, h = int(min(32, round(32 * np.sqrt(area * ratio)))), int(min(32, round(32 * np.sqrt(area / ratio))))
        x0, y0 = rng.randint(0, 33 - w), rng.randint(0, 33 - h)
        im = im.crop((x0, y0, x0 + w, y0 + h)).resize((32, 32), Image.BILINEAR)
        if rng.rand() < 0.5:
            im = ImageOps.mirror(im)
        for k in random.choices(range(len(ops)), k=3):
            im = ops[k](im, ranges[k][0] + (ranges[k][1] - ranges[k][0]) * rng.rand())
        out.append(np.asarray(im, dtype=np.float32) / 255)
    return np.stack(out)


def view_rates(X, device, batch_size, repeats=5) -> list[tuple[str, float, float]]:
    """(view, batched images/s on ``device``, per-image PIL images/s or nan)."""
    import torch

    from plcore_deep._image_views import StrongView, WeakView

    xb = torch.from_numpy(X[:batch_size].astype(np.float32)).to(device)
    images = (X[:batch_size].reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1) * 255).round().astype(np.uint8)
    rows = []
    for name, view in (("weak (shift 4, flip)", WeakView((3, 32, 32))), ("strong (crop, flip, RandAugment, Cutout)",
                                                                         StrongView())):
        g = torch.Generator().manual_seed(0)
        view(xb, g)
        if device != "cpu":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(repeats):
            view(xb, g)
        if device != "cpu":
            torch.cuda.synchronize()
        batched = repeats * batch_size / (time.perf_counter() - t0)
        pil = float("nan")
        if name.startswith("strong"):
            rng = np.random.RandomState(0)
            _pil_strong(images, rng)             # PIL's modules imported, caches warmed up
            t0 = time.perf_counter()
            for _ in range(repeats):
                _pil_strong(images, rng)
            pil = repeats * batch_size / (time.perf_counter() - t0)
        rows.append((name, batched, pil))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(_default_data()))
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--networks", nargs="+", default=["resnet32", "resnet18"])
    ap.add_argument("--learners", nargs="+", default=["proden", "pico"])
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--rows", type=int, default=256, help="training images (default 256)")
    ap.add_argument("--epochs", type=int, default=2, help="timed epochs (default 2)")
    ap.add_argument("--repeat", type=int, default=3, help="timed differences, their median reported (default 3)")
    args = ap.parse_args(argv)
    import torch

    X, S = _data(args.data, args.rows)
    print(f"torch {torch.__version__}, device {args.device}, {torch.get_num_threads()} CPU threads, "
          f"{len(X)} images, batch {args.batch_size}\n")
    print(f"| learner | network | training images/s (median of {args.repeat}) | seconds per step | spread |\n"
          "|---|---|---|---|---|")
    for network in args.networks:
        for learner in args.learners:
            rate, step, spread = train_rate(learner, network, X, S, batch_size=args.batch_size, epochs=args.epochs,
                                            device=args.device, repeat=args.repeat)
            print(f"| {learner} | {network} | {rate:.0f} | {step:.3f} | {100 * spread:.0f} % |", flush=True)
    print("\n| view | batched on the device, images/s | per image in PIL, images/s | ratio |\n|---|---|---|---|")
    for name, batched, pil in view_rates(X, args.device, args.batch_size):
        ratio = "–" if np.isnan(pil) else f"{batched / pil:.1f}x"
        print(f"| {name} | {batched:.0f} | {'–' if np.isnan(pil) else f'{pil:.0f}'} | {ratio} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
