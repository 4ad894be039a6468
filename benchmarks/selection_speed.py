"""Nested selection through the shared path against scikit-learn's search, side by side.

Run from the repository root::

    OMP_NUM_THREADS=1 PLCORE_DATA_HOME=../shared/datasets .venv/bin/python benchmarks/selection_speed.py [--quick]

Each row runs the same nested, label-free selection through two paths on the same folds: k-fold over the
data set (``--quick``: 3 outer folds, else 10), in every training part a grid scored by the
covering rate over 3 inner folds, no refit; each path twice, alternating, the faster time kept
(a process's first large batched fit pays one-off allocations: 19 s against 12 s for the same
PRODEN search on lost): ``protocol.select.shared=true`` (the
default: the steps before the learner fitted once per other grid point and inner fold, the
learner once for all the values it fits together, ``plcore.run.shared_search``) and
``shared=false`` (scikit-learn's ``GridSearchCV``, every point fitted alone). It checks that both
chose the same values, reports the largest difference of an outer fold's accuracy (0 for the
classic learners; a batched network rounds differently from a single one), and prints a
markdown table::

    | learner | configurations | shared (s) | one at a time (s) | ratio | same selections | largest accuracy difference |

Data: lost (1122 rows, 108 features, 16 classes) from ``PLCORE_DATA_HOME``; without it, the
embedded digits with uniform candidate sets (r = 3). ``table_rows`` gives ``benchmarks/run_all.py``
its rows.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

#: (name, learner, reducer or None, grid over the protocol's keys, goal[, learner parameters]). With
#: a reducer, its fits dominate and the shared path fits it once per reducer point instead of once
#: per point of the whole grid: the ratio is bounded by the learner's values per reducer point (4
#: here). The deep learners run plcore's default MLP (500 hidden units, batch 128, Adam) for 20
#: epochs: the stacked path trains a group's configurations as one batched network
#: (plcore_deep._stacked); PiCO does not stack (a queue of its own), so both paths are
#: scikit-learn's search, one configuration at a time
CASES = (
    ("PL-KNN", "plknn", None,
     {"learner.k": [1, 3, 5, 10, 15, 20, 30, 50], "learner.weights": ["linear", "uniform"]}, 5.0),
    # its declared grid (c x delta x k_max): one fit and one search per query set serve all 12
    ("A-kNN", "aknn", None, {"learner.c": [0.25, 0.5, 1.0], "learner.delta": [0.1, 0.5], "learner.k_max": [20, 50]},
     5.0),
    ("CENDA + PL-KNN", "plknn", "cenda",
     {"reducer.thr": [0.99, 0.999], "reducer.mu": [0.2, 0.5], "learner.k": [3, 5, 10, 20]}, 5.0),
    # its declared grid; alpha shares the graph of each k (bound: 4 alphas per k)
    ("IPAL", "ipal", None, {"learner.k": [5, 10, 15], "learner.alpha": [0.5, 0.8, 0.95, 0.99]}, 1.0),
    # its declared grid; code_length shares the longest code's binary classifiers of each min_fraction
    # (bound: 20 + 40 + 60 columns trained as 60, 2x)
    ("PL-ECOC", "plecoc", None, {"learner.code_length": [20, 40, 60], "learner.min_fraction": [0.05, 0.1, 0.2]},
     1.5, {"random_state": 0}),
    ("PRODEN", "proden", None, {"learner.learning_rate": [1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2],
                                "learner.weight_decay": [1e-6, 1e-5, 1e-4, 1e-3]}, 8.0, {"n_epochs": 20, "random_state": 0}),
    ("CC", "cc", None, {"learner.learning_rate": [1e-4, 3e-4, 1e-3, 3e-3],
                        "learner.weight_decay": [1e-6, 1e-5, 1e-4]}, 8.0, {"n_epochs": 20, "random_state": 0}),
    ("PiCO (one at a time)", "pico", None, {"learner.learning_rate": [1e-3, 3e-3]}, 1.0,
     {"n_epochs": 3, "queue_size": 1024, "random_state": 0}),
)


def _dataset(data_home):
    from plcore.datasets import load_dataset

    if data_home and os.path.isdir(data_home):
        try:
            return "lost", load_dataset("lost", data_home=data_home)
        except Exception:  # noqa: BLE001 -- fall back to the embedded data below
            pass
    from sklearn.datasets import load_digits

    from plcore.data import PLDataset
    from plcore.datasets.bags import UniformBags

    X, y = load_digits(return_X_y=True)
    return "digits (r = 3)", PLDataset(X, UniformBags(r=3).generate(y, random_state=0), y)


def _setup(learner, reducer, params=None):
    from plcore.registry import get_registry
    from plcore.run.protocols import Setup

    registry = get_registry()
    return Setup(learner=registry.create("learner", learner).set_params(**(params or {})),
                 reducer=registry.create("reducer", reducer) if reducer else None)


def _run(setup, ds, space, shared, n_splits):
    from plcore.run.protocols import kfold

    select = {"method": "grid", "space": space, "cv": 3, "shared": shared}
    t0 = time.perf_counter()
    res = kfold(setup, ds, n_splits=n_splits, select=select, refit=False, progress=False)
    seconds = time.perf_counter() - t0
    chosen = [tuple(sorted((k, v) for k, v in s.items() if k.startswith("selected."))) for s in res.steps]
    return seconds, chosen, [s["accuracy"] for s in res.steps]


def measure(quick: bool = True, data_home=None, cases=CASES, device=None):
    """One dict per case: seconds shared and one at a time, their ratio, whether they agree
    (``device``: the deep learners' ``device``, default theirs, ``"auto"``)."""
    name, ds = _dataset(data_home)
    n_splits = 3 if quick else 10
    rows = []
    for label, learner, reducer, space, goal, *params in cases:
        if params and device is not None:
            params = [{**params[0], "device": device}]
        try:
            setup = _setup(learner, reducer, *params)
        except Exception as err:  # noqa: BLE001 -- a plugin not installed: say so in the row
            rows.append({"label": label, "error": f"{type(err).__name__}: {err}", "goal": goal})
            continue
        configurations = int(np.prod([len(v) for v in space.values()]))
        times = {True: [], False: []}
        for shared in (True, False, True, False):   # alternating, the faster of two: a process's first
            seconds, chose, acc = _run(setup, ds, space, shared, n_splits)   # large batched fit pays
            times[shared].append(seconds)                                    # one-off allocations
            if shared:
                chose_shared, acc_shared = chose, acc
            else:
                chose_alone, acc_alone = chose, acc
        t_shared, t_alone = min(times[True]), min(times[False])
        rows.append({"label": label + (f" on {device}" if params and device else ""), "data": name,
                     "configurations": configurations, "shared": t_shared,
                     "alone": t_alone, "ratio": t_alone / t_shared, "goal": goal, "outer": n_splits,
                     "same": chose_shared == chose_alone,
                     "accuracy_difference": float(np.max(np.abs(np.subtract(acc_shared, acc_alone))))})
    return rows


def _agreement(r) -> str:
    if r["accuracy_difference"] == 0:
        return "same selections and accuracies"
    return f"same selections; accuracies within {r['accuracy_difference']:.4f} (float rounding of a batched network)"


def table_rows(quick: bool = True) -> list[dict]:
    """Rows for ``benchmarks/run_all.py``."""
    out = []
    for r in measure(quick, os.environ.get("PLCORE_DATA_HOME")):
        if "error" in r:
            out.append({"method": f"{r['label']} nested selection", "measure": "not measured", "ratio": float("nan"),
                        "goal": f">= {r['goal']:g}x", "met": False, "note": r["error"]})
            continue
        out.append({
            "method": f"{r['label']} nested selection, shared vs GridSearchCV",
            "measure": f"{r['data']}, {r['outer']} outer x 3 inner folds, {r['configurations']} configurations: "
                       f"shared {r['shared']:.1f} s vs one at a time {r['alone']:.1f} s",
            "ratio": float(r["ratio"]), "goal": f">= {r['goal']:g}x, same selections",
            "met": bool(r["ratio"] >= r["goal"] and r["same"]),
            "note": (_agreement(r) if r["same"] else "SELECTIONS DIFFER"),
        })
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 outer folds (else 10)")
    ap.add_argument("--data-home", default=os.environ.get("PLCORE_DATA_HOME"))
    ap.add_argument("--only", nargs="+", metavar="LEARNER", choices=[c[0] for c in CASES],
                    help="the rows to time (default: all)")
    ap.add_argument("--device", default=None, help='the deep learners\' device ("cpu", "cuda"; default theirs, "auto")')
    args = ap.parse_args(argv)
    cases = [c for c in CASES if args.only is None or c[0] in args.only]
    rows = measure(args.quick, args.data_home, cases, args.device)
    print(f"Nested selection (covering rate, 3 inner folds), OMP_NUM_THREADS="
          f"{os.environ.get('OMP_NUM_THREADS', 'unset')}, {os.cpu_count()} CPU(s)\n")
    print("| learner | configurations | shared (s) | one at a time (s) | ratio | same selections | "
          "largest accuracy difference |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['label']} | – | – | – | – | not measured: {r['error']} | – |")
            continue
        print(f"| {r['label']} ({r['data']}, {r['outer']} outer folds) | {r['configurations']} | {r['shared']:.2f} | "
              f"{r['alone']:.2f} | {r['ratio']:.1f}x | {'yes' if r['same'] else 'NO'} | "
              f"{r['accuracy_difference']:.4f} |")
    return 0 if all(r.get("same", False) for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
