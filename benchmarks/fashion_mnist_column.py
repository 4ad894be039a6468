"""What one deep learner's Fashion-MNIST column of the field table's full tier costs, from measured epochs.

Run from the repository root (Fashion-MNIST from Debian's ``dataset-fashion-mnist`` or ``PLCORE_DATA_HOME``)::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/fashion_mnist_column.py [--learner proden] [--device cuda]

The full tier (``benchmarks/field.py``) runs, per deep learner on Fashion-MNIST's 70,000 rows with
uniform bags (r = 3): 10 outer folds, and in each the declared grid (4 points: learning rate x weight
decay) over 3 inner folds, then the best point refitted on the outer training fold, 200 epochs each.
Run in full that is hours even where the configurations stack, so this script times the fits
the column is made of on rows of the sizes it uses (42,000 rows for an inner fold's training part,
63,000 for the refit), at 1 and ``--epochs`` epochs, so that a fit's one-off cost (set-up, the
final confidences) and its cost per epoch are measured apart, and scales them:

* stacked: 10 x (3 fits of the 4 points together + 1 refit), what ``fit_path`` does on a GPU
  (on a CPU it fits a step this large one configuration at a time: ``stacking_pays``);
* one at a time (``protocol.select.shared=false``): 10 x (12 single fits + 1 refit).

Inner and outer scoring (predicting 21,000 and 7,000 rows) is left out: it is a forward pass,
under a second. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

OUTER, INNER, EPOCHS = 10, 3, 200
INNER_ROWS, OUTER_ROWS = 42_000, 63_000


def _data(data_home, seed=0):
    from sklearn.preprocessing import StandardScaler

    from plcore.datasets import load_dataset
    from plcore.datasets.bags import UniformBags

    ds = load_dataset("fashion-mnist", data_home=data_home)
    S = UniformBags(r=3).generate(ds.y_true, random_state=seed)
    rows = np.random.default_rng(seed).permutation(ds.n_samples)[:OUTER_ROWS]
    return StandardScaler().fit_transform(ds.X[rows]).astype(np.float32), S[rows]


def _stacked_fit(learner, X, S, points):
    """The stacked trainer itself, whether or not ``fit_path`` would stack on this device
    (:func:`plcore_deep._stacked.stacking_pays`: on a CPU, not for a step this large)."""
    from plcore_deep import _stacked

    X_valid, S_valid = learner._validate_fit(X, S)
    return _stacked.train_stacked(X_valid, S_valid, learner._make_method(), learner._loop_config(X_valid), points)


def _timed(fit) -> float:
    start = time.perf_counter()
    fit()
    return time.perf_counter() - start


FITS = ("single", "refit", "stacked")


def measure(learner_name="proden", device=None, epochs=3, data_home=None, fits=FITS) -> dict:
    """Seconds of one fit (a one-off part and a part per epoch) for each kind of fit the column
    makes (``fits``: a subset of :data:`FITS`), and the column's time scaled from them."""
    from sklearn.model_selection import ParameterGrid

    from plcore.registry import get_registry

    registry = get_registry()
    component = registry.components[("learner", learner_name)]
    points = list(ParameterGrid(component.spec.search_space))
    X, S = _data(data_home)
    base = registry.create("learner", learner_name).set_params(random_state=0, **({"device": device} if device else {}))
    base.set_params(n_epochs=1).fit(X[:512], S[:512])   # one-off start-up (CUDA context, kernels), not timed
    stacks = bool(getattr(base, "_stacks", False))
    runs = {"single": ("single, inner fold", lambda e: base.set_params(n_epochs=e).fit(X[:INNER_ROWS], S[:INNER_ROWS])),
            "refit": ("refit, outer fold", lambda e: base.set_params(n_epochs=e).fit(X, S)),
            "stacked": (f"{len(points)} stacked, inner fold",
                        lambda e: _stacked_fit(base.set_params(n_epochs=e), X[:INNER_ROWS], S[:INNER_ROWS], points))}
    cost = {}
    for key in fits:
        if key == "stacked" and not stacks:
            continue
        label, fit = runs[key]
        one, many = _timed(lambda: fit(1)), _timed(lambda: fit(epochs))
        per_epoch = (many - one) / (epochs - 1)
        cost[label] = {"once": max(one - per_epoch, 0.0), "epoch": per_epoch, "seconds": many}
    full = {label: c["once"] + EPOCHS * c["epoch"] for label, c in cost.items()}
    nan = float("nan")
    refit = full.get("refit, outer fold", nan)
    alone = OUTER * (INNER * len(points) * full.get("single, inner fold", nan) + refit)
    stacked = OUTER * (INNER * full.get(f"{len(points)} stacked, inner fold", nan) + refit) if stacks else alone
    from plcore_deep._stacked import stacking_pays

    config = base._loop_config(X[:INNER_ROWS])
    return {"learner": learner_name, "device": str(config.device), "points": len(points),
            "cost": cost, "alone": alone, "stacked": stacked, "stacks": stacks,
            "fit_path_stacks": stacks and stacking_pays(config, INNER_ROWS, X.shape[1], S.shape[1])}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--learner", default="proden")
    ap.add_argument("--device", default=None, help='"cpu" or "cuda" (default: the learner\'s, "auto")')
    ap.add_argument("--epochs", type=int, default=3, help="the longer of the two timed fits (default 3)")
    ap.add_argument("--fits", nargs="+", choices=FITS, default=list(FITS),
                    help="the fits to time (default: all; --epochs 200 --fits stacked refit times whole fits)")
    ap.add_argument("--data-home", default=os.environ.get("PLCORE_DATA_HOME"))
    args = ap.parse_args(argv)
    if args.epochs < 2:
        ap.error("--epochs must be at least 2")
    r = measure(args.learner, args.device, args.epochs, args.data_home, args.fits)
    print(f"{r['learner']} on Fashion-MNIST (r = 3), MLP 784-500-10, batch 128, {r['device']}, "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}, {os.cpu_count()} CPU(s)\n")
    print("| fit | rows | one-off (s) | per epoch (s) | 200 epochs (s) |")
    print("|---|---|---|---|---|")
    for label, c in r["cost"].items():
        rows = OUTER_ROWS if label.startswith("refit") else INNER_ROWS
        measured = f" (measured {c['seconds']:.0f})" if args.epochs == EPOCHS else ""
        print(f"| {label} | {rows:,} | {c['once']:.2f} | {c['epoch']:.3f} | "
              f"{c['once'] + EPOCHS * c['epoch']:.0f}{measured} |")
    has_alone, has_stacked = not math.isnan(r["alone"]), r["stacks"] and not math.isnan(r["stacked"])
    column = [f"one at a time {r['alone'] / 3600:.2f} h" if has_alone else "",
              f"stacked {r['stacked'] / 3600:.2f} h" if has_stacked else ""]
    if has_alone and has_stacked:
        column.append(f"({r['alone'] / r['stacked']:.1f}x)")
    if not r["stacks"]:
        column.append("(this learner does not stack)")
    print(f"\nfull tier's column, {OUTER} outer x ({INNER} inner x {r['points']} points + refit), {EPOCHS} epochs: "
          + (" ".join(c for c in column if c) or "needs the refit and a single or stacked fit"))
    if r["stacks"]:
        print(f"fit_path on {r['device']} " + ("stacks these configurations" if r["fit_path_stacks"] else
                                               "fits these configurations one at a time (stacking_pays)"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
