"""Effect of SAUTE's class-variance floor ``var_smoothing`` on PL-KNN accuracy (default d').

``plcore.protocols.kfold(Setup(reducer=SauteReducer(var_smoothing=v), learner=PlKnnLearner()))``:
10 shuffled folds, seed 0, z-scored with training-fold statistics, PL-KNN k = 10. The floor
is relative to each feature's overall variance (see ``plcore_saute._info``). Prints a table.

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \\
    .venv/bin/python benchmarks/saute_smoothing.py --data-home ../shared/datasets [--values 1e-2 0.1 1]
"""

from __future__ import annotations

import argparse
import os

from plcore.datasets.loaders import load_dataset
from plcore.learners import PlKnnLearner
from plcore.protocols import Setup, kfold
from plcore_saute import SauteReducer


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data-home", default=os.environ.get("PLCORE_DATA_HOME"))
    p.add_argument("--datasets", nargs="+", default=["msrc-v2", "lost"])
    p.add_argument("--values", nargs="+", type=float, default=[1e-2, 0.1, 1.0])
    args = p.parse_args(argv)
    print("| data set | var_smoothing | accuracy (10-fold mean ± std) |")
    print("| --- | ---: | --- |")
    for name in args.datasets:
        ds = load_dataset(name, data_home=args.data_home)
        for v in args.values:
            res = kfold(Setup(reducer=SauteReducer(var_smoothing=v), learner=PlKnnLearner()), ds,
                        progress=False)
            print(f"| {name} | {v:g} | {res.summary['accuracy_mean']:.3f} ± "
                  f"{res.summary['accuracy_std']:.3f} |", flush=True)


if __name__ == "__main__":
    main()
