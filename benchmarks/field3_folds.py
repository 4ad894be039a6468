"""How many outer folds each field/3 task runs: the ranking's stability across field/2's folds.

Run from the repository root (reads the committed field/2 run files, trains nothing)::

    .venv/bin/python benchmarks/field3_folds.py [--results leaderboard] [--target 0.8] [--cap 3]

TabArena's successor chooses the folds of a data set by how stable the methods' ranking is across
them: with ``rho`` the mean pairwise Spearman correlation between the folds' rankings of every
row (here: field/2's 57 classification rows with an ok file on each of the task's 3 folds), the
Spearman-Brown reliability of the mean of ``k`` folds is ``Rel(k) = k rho / (1 + (k - 1) rho)``,
and a task runs the fewest folds with ``Rel(k) >= --target``, at most ``--cap`` (field/2's
splits are 3-fold; a task that would need more runs all 3 and its reliability is printed).
Printed: one row per task, then the total of folds.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from itertools import combinations

import numpy as np


def reliability(rho: float, k: int) -> float:
    """Spearman-Brown: the reliability of the mean of ``k`` folds whose pairwise correlation is ``rho``."""
    return k * rho / (1 + (k - 1) * rho)


def folds_needed(rho: float, target: float, cap: int) -> int:
    """The fewest folds whose reliability reaches ``target`` (at most ``cap``)."""
    return next((k for k in range(1, cap + 1) if reliability(rho, k) >= target), cap)


def fold_stability(results, protocol: str = "field-2") -> dict:
    """``{task: (rho, rows)}``: the mean pairwise Spearman correlation of the classification rows'
    accuracies between the task's folds, over the rows with an ok file on every fold."""
    from scipy.stats import spearmanr

    from plcore.leaderboard import iter_runs

    acc = defaultdict(lambda: defaultdict(dict))
    n_folds = {}
    for _, run in iter_runs(results, protocol):
        if run.track == "classification" and run.ok:
            acc[run.dataset.name][run.component.row_key][run.fold.index] = run.scores["accuracy"]
            n_folds[run.dataset.name] = run.fold.n_splits
    out = {}
    for task, rows in acc.items():
        k = n_folds[task]
        full = [r for r in rows.values() if len(r) == k]
        M = np.array([[r[f] for f in range(k)] for r in full])
        rho = float(np.mean([spearmanr(M[:, a], M[:, b])[0] for a, b in combinations(range(k), 2)]))
        out[task] = (rho, len(full))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default="leaderboard")
    parser.add_argument("--target", type=float, default=0.8)
    parser.add_argument("--cap", type=int, default=3)
    args = parser.parse_args(argv)
    found = fold_stability(args.results)
    print("| task | rows | rho | Rel(1) | Rel(2) | Rel(3) | folds |\n|---|---|---|---|---|---|---|")
    total = 0
    for task, (rho, n) in found.items():
        k = folds_needed(rho, args.target, args.cap)
        total += k
        rel = " | ".join(f"{reliability(rho, j):.2f}" for j in (1, 2, 3))
        print(f"| {task} | {n} | {rho:.3f} | {rel} | {k} |")
    print(f"\n{total} folds over {len(found)} tasks (field/2: {3 * len(found)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
