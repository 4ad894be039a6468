"""Three columns per method and data set: the paper's defaults, nested label-free selection, oracle.

Run from the repository root::

    .venv/bin/python benchmarks/selection.py [--data-home DIR] [--methods plknn cenda+plknn plc ...]
                                             [--datasets lost msrc-v2] [--n-splits 10]
                                             [--columns defaults nested oracle] [--device cpu]

A method is a registry name: a learner (``plknn``), a reducer before a learner
(``cenda+plknn``: only the reducer's declared grid is searched, the learner keeps its
defaults) or a clusterer (``plc``: the clustering protocol, rho 0.10 on random partitions,
or the stored splits of ``msrc-v2-plc-splits`` for ``msrc-v2``). For every method and data set
it runs the protocol three times on the same folds (seed 0; a component's ``random_state``
is 0 too):

* ``defaults``: the component's default parameters (the paper's setting);
* ``nested``: ``select={"method": "grid"}`` over the declared ``ComponentSpec.search_space``
  -- chosen on each training fold by 3-fold inner CV scored by the covering rate (clusterers:
  on each partition's labelled candidate sets), from candidate sets only (a figure one may
  publish);
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
from plcore.run.protocols import Setup, clustering, kfold
from plcore.registry import get_registry

#: the clustering protocol's data: PLC's paper uses msrc-v2's stored splits (rho 0.10)
CLUSTERING_DATA = {"msrc-v2": "msrc-v2-plc-splits"}
COLUMNS = ("defaults", "nested", "oracle")
_SELECT = {"defaults": "none", "nested": "grid", "oracle": "oracle"}


def _chosen(res) -> str:
    keys = sorted({k for s in res.steps for k in s if k.startswith("selected.")})
    parts = []
    for key in keys:
        counts = Counter(s[key] for s in res.steps)
        parts.append(f"{key.split('.', 2)[2]}: " + ", ".join(f"{v:g}x{n}" if n > 1 else f"{v:g}"
                                                             for v, n in sorted(counts.items())))
    return "; ".join(parts) or "-"


def _seeded(comp, device=None):
    est = comp.spec.cls()
    if "random_state" in est.get_params():  # as the app does: the run's seed, so that the
        est.set_params(random_state=0)      # three columns differ by their parameters only
    if device is not None and "device" in est.get_params():
        est.set_params(device=device)       # plcore-deep: where to train (default: auto)
    return est


def _columns(method: str, ds_name: str, data_home: str, n_splits: int, columns=COLUMNS, device=None):
    """``[(cell, chosen)]`` for each of ``columns`` (defaults, nested, oracle; a column left out
    is ``("–", "")``)."""
    registry = get_registry()
    names = method.split("+")
    kinds = {n: next(c.kind for c in registry.components.values()
                     if c.name == n and c.kind in ("learner", "reducer", "clusterer")) for n in names}
    out = []
    if kinds[names[-1]] == "clusterer":
        ds = load_dataset(CLUSTERING_DATA.get(ds_name, ds_name), data_home=data_home)
        comp = registry.get("clusterer", names[-1])
        for column in columns:
            res = clustering(Setup(clusterer=_seeded(comp)), ds, rho=0.1, n_partitions=n_splits,
                             select={"method": _SELECT[column]}, progress=False)
            out.append((column, res.steps, "acc", _chosen(res)))
    else:
        ds = load_dataset(ds_name, data_home=data_home)
        learner = _seeded(registry.get("learner", names[-1]), device)
        reducer = _seeded(registry.get("reducer", names[0])) if len(names) == 2 else None
        space = None
        if reducer is not None:  # search the reducer's grid; the learner keeps its defaults
            declared = registry.get("reducer", names[0]).spec.search_space
            space = {f"reducer.{p}": list(v) for p, v in declared.items()}
        for column in columns:
            method_ = _SELECT[column]
            select = {"method": method_, "space": space} if method_ != "none" else {"method": "none"}
            res = kfold(Setup(learner=learner, reducer=reducer), ds, n_splits=n_splits, select=select,
                        refit=False, progress=False)
            out.append((column, res.steps, "accuracy", _chosen(res)))
    cells = {column: ("–", "") for column in COLUMNS}
    for column, steps, key, chose in out:
        values = np.array([s[key] for s in steps])
        cells[column] = (f"{values.mean():.3f} ± {values.std():.3f}", chose)
    return [cells[c] for c in COLUMNS]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-home", default=os.environ.get("PLCORE_DATA_HOME", "../shared/datasets"))
    ap.add_argument("--methods", "--learners", nargs="+", default=["plknn"])
    ap.add_argument("--datasets", nargs="+", default=["lost", "msrc-v2"])
    ap.add_argument("--n-splits", type=int, default=10)
    ap.add_argument("--columns", nargs="+", choices=COLUMNS, default=list(COLUMNS),
                    help="which columns to run (the others print as '–')")
    ap.add_argument("--device", default=None, help="plcore-deep learners: cpu, cuda or auto (their default)")
    args = ap.parse_args(argv)
    print("| method | data set | defaults | nested (candidate sets) | oracle (test labels) | nested chose | oracle chose |")
    print("|---|---|---|---|---|---|---|")
    for method in args.methods:
        for ds_name in args.datasets:
            (d, _), (n, n_chose), (o, o_chose) = _columns(method, ds_name, args.data_home, args.n_splits,
                                                          args.columns, args.device)
            print(f"| {method} | {ds_name} | {d} | {n} | {o} | {n_chose} | {o_chose} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
