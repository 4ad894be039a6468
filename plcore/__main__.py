"""``python -m plcore``: run one k-fold experiment.

Default (no arguments): scikit-learn's embedded ``digits`` with uniform bags (r=3), PL-KNN
(k=10), 10-fold CV, features z-scored on each training fold. The last line printed is
``accuracy_mean=<m> accuracy_std=<s>``.

(The Hydra application of the "Runs" issue replaces this small argument parser.)
"""

from __future__ import annotations

import argparse
import os
import sys

from plcore.datasets import UniformBags, load_dataset
from plcore.exceptions import PlcoreError
from plcore.learners import PlKnnLearner
from plcore.protocols import PREPROCESSING, kfold


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m plcore", description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset", default="digits", help="name (digits, lost, msrc-v2, ecoli, ...) or path")
    p.add_argument("--data-home", default=None, help="folder of named data sets (default $PLCORE_DATA_HOME)")
    p.add_argument("--r", type=int, default=3, help="uniform bags: false positives per example "
                   "(used only for data sets without candidate sets)")
    p.add_argument("--k", type=int, default=10, help="PL-KNN neighbours")
    p.add_argument("--weights", default="linear", choices=["linear", "uniform"])
    p.add_argument("--folds", type=int, default=10)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--preprocessing", default="standardize", choices=PREPROCESSING)
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        ds = load_dataset(args.dataset, args.data_home)
        if not ds.is_partial:
            ds = ds.with_candidates(UniformBags(r=args.r, random_state=args.seed).generate(
                ds.y_true, n_classes=ds.n_classes))
        print(f"{ds}  learner=PL-KNN(k={args.k}, weights={args.weights})  "
              f"{args.folds}-fold  preprocessing={args.preprocessing}")
        res = kfold(PlKnnLearner(k=args.k, weights=args.weights), ds, n_splits=args.folds,
                    random_state=args.seed, preprocessing=args.preprocessing)
    except PlcoreError as err:
        if os.environ.get("PLCORE_FULL_ERROR"):
            raise
        print(f"error: {err}", file=sys.stderr)
        return 2
    for f in res.folds:
        print(f"fold {f.fold}: accuracy={f.accuracy:.4f} transductive_accuracy={f.transductive_accuracy:.4f}")
    s = res.summary()
    print(f"transductive_accuracy_mean={s['transductive_accuracy_mean']:.4f} fit_time_mean={s['fit_time_mean']:.4f}s")
    print(f"accuracy_mean={s['accuracy_mean']:.4f} accuracy_std={s['accuracy_std']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
