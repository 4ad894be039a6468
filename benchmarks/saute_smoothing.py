"""Effect of SAUTE's class-variance floor ``var_smoothing`` on PL-KNN accuracy (default d').

``plcore.run.protocols.kfold(Setup(reducer=SauteReducer(var_smoothing=v), learner=PlKnnLearner()))``:
10 shuffled folds, seed 0, z-scored with training-fold statistics, PL-KNN k = 10. The floor
is relative to each feature's overall variance (see ``plcore_saute._info``). Data sets with
exact labels get uniform bags (true label + ``--r`` random others, the Cour et al. protocol).
Prints a table, and the mean over the data sets per value.

The default is chosen on *development* data that no SAUTE figure is reported on (digits,
semeion, ecoli with r = 2; the figures are on lost and msrc-v2)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \\
    .venv/bin/python benchmarks/saute_smoothing.py --data-home ../shared/datasets \\
        [--datasets digits semeion ecoli] [--values 1e-2 0.03 0.1 0.3 1]
"""

from __future__ import annotations

import argparse
import os

import numpy as np

from plcore.datasets.bags import UniformBags
from plcore.datasets.loaders import load_dataset
from plcore.learners import PlKnnLearner
from plcore.run.protocols import Setup, kfold
from plcore_saute import SauteReducer


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-home", default=os.environ.get("PLCORE_DATA_HOME"))
    p.add_argument("--datasets", nargs="+", default=["digits", "semeion", "ecoli"])
    p.add_argument("--values", nargs="+", type=float, default=[1e-2, 0.03, 0.1, 0.3, 1.0])
    p.add_argument("--r", type=int, default=2, help="false positives per bag on exact-label data")
    args = p.parse_args(argv)
    print("| data set | var_smoothing | accuracy (10-fold mean ± std) |")
    print("| --- | ---: | --- |")
    means = {v: [] for v in args.values}
    for name in args.datasets:
        ds = load_dataset(name, data_home=args.data_home)
        bags = UniformBags(r=args.r)  # the protocol applies it to exact-label data only
        for v in args.values:
            res = kfold(Setup(reducer=SauteReducer(var_smoothing=v), learner=PlKnnLearner(), bags=bags), ds,
                        refit=False, progress=False)
            means[v].append(res.summary["accuracy_mean"])
            print(f"| {name} | {v:g} | {res.summary['accuracy_mean']:.3f} ± "
                  f"{res.summary['accuracy_std']:.3f} |", flush=True)
    print("\n| var_smoothing | mean over the data sets |\n| ---: | --- |")
    for v, acc in means.items():
        print(f"| {v:g} | {np.mean(acc):.3f} |")


if __name__ == "__main__":
    main()
