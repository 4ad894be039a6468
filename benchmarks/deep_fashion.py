"""Every deep learner on Fashion-MNIST with flip and instance-dependent candidate sets, and the time per epoch.

Run from the repository root (needs Debian's ``dataset-fashion-mnist``, or its IDX files in
``$PLCORE_DATA_HOME/fashion-mnist``)::

    .venv/bin/python benchmarks/deep_fashion.py [--epochs 20] [--learners proden cc ...]
        [--bags flip instance_dependent] [--recipes published defaults] [--out results.csv] [--quick]

The standard split (60,000 training and 10,000 test images, pixels / 255). Candidate sets for
the training images only, drawn once per kind with seed 0:

* ``flip``: each false label with probability 0.3 (``bags=flip``);
* ``instance_dependent``: the VALEN / POP recipe at rate 0.4 (``bags=instance_dependent``), its
  helper network fitted on the training images' true labels.

Recipes: ``published`` is the deep_published preset's MLP (3 x 300 with batch norm, Adam with a
one-cycle schedule up to 0.01, weight decay 1e-4, batch 256 here) for ``--epochs`` epochs;
``defaults`` the learners as shipped (MLP 500, Adam 1e-3, batch 128) for as many epochs. Every
fit is seeded (``random_state=0``) and uses the last epoch's model. Prints one markdown row per
fit: test accuracy, the training images disambiguated (argmax of the confidences = truth), the
fit's wall time and the time per epoch. ``--out`` appends each row to a CSV as soon as it is
done, and a rerun skips the rows already there.
"""

from __future__ import annotations

import argparse
import csv
import os
import time
from pathlib import Path

import numpy as np

from plcore.datasets import load_dataset
from plcore.datasets.bags import FlipBags, InstanceDependentBags

#: the deep_published preset's learner settings (plugins/plcore-deep/plcore_deep/experiments)
PUBLISHED = {"hidden_layer_sizes": (300, 300, 300), "batch_norm": True, "optimizer": "adam", "learning_rate": 0.01,
             "lr_schedule": "one_cycle", "weight_decay": 1e-4, "batch_size": "auto"}
RECIPES = {"published": PUBLISHED, "defaults": {}}
BAGS = {"flip": lambda: FlipBags(p=0.3, random_state=0),
        "instance_dependent": lambda: InstanceDependentBags(rate=0.4, random_state=0)}
LEARNERS = ["proden", "rc", "cc", "lws", "cavl", "pop", "pico", "valen"]
FIELDS = ["learner", "bags", "recipe", "epochs", "accuracy", "disambiguated", "fit_s", "s_per_epoch", "threads",
          "avg_candidates"]


def candidates(name: str, X, y, train):
    """The training images' candidate sets of kind ``name`` (seed 0), and how long they took."""
    t0 = time.perf_counter()
    S = BAGS[name]().generate(y[train], X[train], random_state=0, n_classes=10)
    return np.asarray(S, dtype=bool), time.perf_counter() - t0


def fit_one(learner: str, recipe: str, epochs: int, X_tr, S_tr, y_tr, X_te, y_te) -> dict:
    import plcore_deep
    from plcore_deep.plugin import LEARNER_OPTIONS

    cls = getattr(plcore_deep, LEARNER_OPTIONS[learner].split(":")[1])
    est = cls(n_epochs=epochs, device="cpu", random_state=0, **RECIPES[recipe])
    t0 = time.perf_counter()
    est.fit(X_tr, S_tr)
    fit_s = time.perf_counter() - t0
    return {"accuracy": float(np.mean(est.predict(X_te) == y_te)),
            "disambiguated": float(np.mean(np.argmax(est.confidences_, axis=1) == y_tr)),
            "fit_s": fit_s, "s_per_epoch": fit_s / epochs}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-home", default=os.environ.get("PLCORE_DATA_HOME"))
    ap.add_argument("--learners", nargs="+", default=LEARNERS, choices=LEARNERS)
    ap.add_argument("--bags", nargs="+", default=list(BAGS), choices=list(BAGS))
    ap.add_argument("--recipes", nargs="+", default=["published"], choices=list(RECIPES))
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--out", type=Path, help="CSV to append each fit to (rows already there are skipped)")
    ap.add_argument("--quick", action="store_true", help="3,000 training images, 2 epochs: a smoke run")
    args = ap.parse_args(argv)
    import torch

    ds = load_dataset("fashion-mnist", data_home=args.data_home)
    X, y = ds.X.astype(np.float32), ds.y_true
    test = ds.meta["test_rows"]
    train = np.flatnonzero(~test)
    if args.quick:
        train, args.epochs = train[:3000], 2
    done = set()
    if args.out and args.out.exists():
        with args.out.open() as f:
            done = {(r["learner"], r["bags"], r["recipe"], int(r["epochs"])) for r in csv.DictReader(f)}
    print(f"Fashion-MNIST: {len(train)} training and {int(test.sum())} test images; {args.epochs} epochs; "
          f"torch threads {torch.get_num_threads()}\n")
    print("| learner | candidates | recipe | test accuracy | training images disambiguated | fit (s) | s / epoch |")
    print("|---|---|---|---|---|---|---|")
    for bags in args.bags:
        S_tr, gen_s = candidates(bags, X, y, train)
        avg = float(S_tr.sum(axis=1).mean())
        print(f"<!-- {bags}: {avg:.2f} candidates per image on average, generated in {gen_s:.0f} s -->", flush=True)
        for recipe in args.recipes:
            for learner in args.learners:
                if (learner, bags, recipe, args.epochs) in done:
                    continue
                row = {"learner": learner, "bags": bags, "recipe": recipe, "epochs": args.epochs,
                       "threads": torch.get_num_threads(), "avg_candidates": round(avg, 3),
                       **fit_one(learner, recipe, args.epochs, X[train], S_tr, y[train], X[test], y[test])}
                print(f"| {learner} | {bags} | {recipe} | {100 * row['accuracy']:.2f} | "
                      f"{100 * row['disambiguated']:.2f} | {row['fit_s']:.0f} | {row['s_per_epoch']:.1f} |", flush=True)
                if args.out:
                    new = not args.out.exists()
                    with args.out.open("a", newline="") as f:
                        writer = csv.DictWriter(f, fieldnames=FIELDS)
                        if new:
                            writer.writeheader()
                        writer.writerow({k: row[k] for k in FIELDS})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
