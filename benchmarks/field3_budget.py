"""How many optimizer steps field/3's deep rows train: the label-free probe that fixed the budget.

Run from the repository root::

    OMP_NUM_THREADS=1 PLCORE_DATA_HOME=../shared/datasets .venv/bin/python benchmarks/field3_budget.py \\
        [--learners proden cc cavl lws pop valen] [--steps 4000] [--every 100] [--tol 0.01] [--out curves.csv]

For each reference learner (its shipped defaults: MLP 500, Adam at 1e-3, batch 128) and each task
of field/2, the first outer fold's training rows are split as field/3 splits them (20% validation
rows, :func:`plcore.run.protocols.validation_split`), and the learner trains ``--steps``
optimizer steps on the rest with a checkpoint every ``--every`` steps. A checkpoint records the
validation rows' covering rate, from their candidate sets only: no true label and no test row is
read (the labels handed to the fold are zeros). A curve has *settled* at the first checkpoint
whose covering rate is within ``--tol`` of the curve's best.

Printed: per learner the steps at which its curves settled (median, 75th and 90th percentile over
the tasks, and the largest); then the same over every curve. field/3's budget is the 90th
percentile over every curve at ``--learning-rate 10**-3.5`` (the median of PLENCH's draws), rounded
up to a multiple of 100 (docs/leaderboard.md, "field/3: the cost model", says why not of 500).
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import sys
import time

import numpy as np

REFERENCE = ["proden", "cc", "cavl", "lws", "pop", "valen"]


def settled(values, steps, tol: float) -> int:
    """The first step whose value is within ``tol`` of the curve's best."""
    values = np.asarray(values)
    return int(steps[int(np.argmax(values >= values.max() - tol))])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--learners", nargs="+", default=REFERENCE)
    parser.add_argument("--tasks", nargs="+", default=None, help="field/2's tasks (default: all 21)")
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--every", type=int, default=100)
    parser.add_argument("--tol", type=float, default=0.01)
    parser.add_argument("--validation", type=float, default=0.2)
    parser.add_argument("--learning-rate", type=float, default=None,
                        help="train at this step size instead of the defaults' (field/3: 10**-3.5, the median of "
                             "PLENCH's draws)")
    parser.add_argument("--out", default=None, help="write every checkpoint as a CSV row")
    args = parser.parse_args(argv)

    from plcore.leaderboard.jobs import create_component
    from plcore.leaderboard.protocol import checked_data, load_protocol
    from plcore.registry import get_registry
    from plcore.run.protocols import Setup
    from plcore.run.protocols import Budget, budget_fold

    protocol = load_protocol("field/2")
    registry = get_registry()
    budget = Budget(args.steps, args.every, 1, args.validation)
    tasks = args.tasks or protocol.track_datasets("classification")
    rows, found = [], {}
    for task in tasks:
        (_, drawn), splits = checked_data(protocol, task, os.environ.get("PLCORE_DATA_HOME"))
        train, _ = splits["classification"][0]
        blind = np.zeros(drawn.n_samples, dtype=int)   # no true label reaches the probe
        for name in args.learners:
            learner = create_component(registry, "learner", name, 0)
            if args.learning_rate is not None:
                learner.set_params(learning_rate=args.learning_rate)
            setup = Setup(learner=learner)
            t0 = time.perf_counter()
            fold = budget_fold(setup, drawn.X, drawn.S, blind, train, np.empty(0, dtype=int), budget=budget,
                               space={}, preprocessing="standardize", seed=0)
            cr = fold.curves[0][:, 0]
            at = settled(cr, fold.steps[0], args.tol)
            found.setdefault(name, []).append(at)
            print(f"{task:30s} {name:8s} settled at {at:5d} steps (best CR {cr.max():.3f}, "
                  f"{time.perf_counter() - t0:.1f} s)", flush=True)
            rows += [{"task": task, "learner": name, "step": s, "covering_rate": float(c)}
                     for s, c in zip(fold.steps[0], cr)]
    if args.out:
        with open(args.out, "w", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
    print("\n| learner | curves | median | 75th pct | 90th pct | largest |\n|---|---|---|---|---|---|")
    every = [s for v in found.values() for s in v]
    for name, values in [*found.items(), ("all", every)]:
        q = np.percentile(values, [50, 75, 90])
        print(f"| {name} | {len(values)} | {q[0]:.0f} | {q[1]:.0f} | {q[2]:.0f} | {max(values)} |")
    budget_steps = int(math.ceil(np.percentile(every, 90) / 100) * 100)
    print(f"\nbudget: the 90th percentile over every curve, rounded up to a multiple of 100: {budget_steps} steps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
