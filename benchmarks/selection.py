"""Three columns per method and data set: the paper's defaults, nested label-free selection, oracle.

Run from the repository root::

    .venv/bin/python benchmarks/selection.py [--data-home DIR] [--learners plknn ...]
                                             [--datasets lost msrc-v2] [--n-splits 10]

For every learner (a registry name; its declared ``ComponentSpec.search_space`` is searched)
and data set it runs ``plcore.protocols.kfold`` three times on the same folds (seed 0; a
learner's ``random_state`` is 0 too):

* ``defaults``: the component's default parameters (the paper's setting);
* ``nested``: ``select={"method": "grid"}`` -- chosen on each training fold by 3-fold inner CV
  scored by the covering rate, from candidate sets only (a figure one may publish);
* ``oracle``: ``select={"method": "oracle"}`` -- the grid point with the best TEST accuracy,
  what a paper that tuned on true labels could have reported (never "ours").

Prints a markdown table: mean +- std over the folds, and the values each column used.
"""

from __future__ import annotations

import argparse
import os
from collections import Counter

import numpy as np

from plcore.datasets import load_dataset
from plcore.protocols import Setup, kfold
from plcore.registry import get_registry


def _chosen(res) -> str:
    keys = sorted({k for s in res.steps for k in s if k.startswith("selected.")})
    parts = []
    for key in keys:
        counts = Counter(s[key] for s in res.steps)
        parts.append(f"{key.split('.', 2)[2]}: " + ", ".join(f"{v:g}x{n}" if n > 1 else f"{v:g}"
                                                             for v, n in sorted(counts.items())))
    return "; ".join(parts) or "-"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-home", default=os.environ.get("PLCORE_DATA_HOME", "../shared/datasets"))
    ap.add_argument("--learners", nargs="+", default=["plknn"])
    ap.add_argument("--datasets", nargs="+", default=["lost", "msrc-v2"])
    ap.add_argument("--n-splits", type=int, default=10)
    args = ap.parse_args(argv)
    registry = get_registry()
    print("| learner | data set | defaults | nested (candidate sets) | oracle (test labels) | nested chose | oracle chose |")
    print("|---|---|---|---|---|---|---|")
    for name in args.learners:
        comp = registry.get("learner", name)
        for ds_name in args.datasets:
            ds = load_dataset(ds_name, data_home=args.data_home)
            cells, chose = [], []
            for select in ({"method": "none"}, {"method": "grid"}, {"method": "oracle"}):
                learner = comp.spec.cls()
                if "random_state" in learner.get_params():  # as the app does: the run's seed, so that the
                    learner.set_params(random_state=0)      # three columns differ by their parameters only
                res = kfold(Setup(learner=learner), ds, n_splits=args.n_splits, select=select,
                            refit=False, progress=False)
                steps = np.array([s["accuracy"] for s in res.steps])
                cells.append(f"{steps.mean():.3f} ± {steps.std():.3f}")
                chose.append(_chosen(res))
            print(f"| {name} | {ds_name} | {cells[0]} | {cells[1]} | {cells[2]} | {chose[1]} | {chose[2]} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
