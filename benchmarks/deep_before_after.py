"""plcore's deep learners at the leaderboard's deep settings, this checkout against an earlier one
(issue 65): what a change of the training loop or of a method gives the callers that fit them
with their own defaults (the leaderboard's deep track, a user's run).

    OMP_NUM_THREADS=1 python benchmarks/deep_before_after.py --before CHECKOUT
        [--learners pico dirk ...] [--dataset lost] [--epochs 50] [--seeds 0 1 2]

``CHECKOUT`` is another plcore checkout, e.g. ``git worktree add ../plcore-before <commit>``.
Each learner is fitted with its defaults, ``n_epochs`` as field/2's deep track sets it (50) and
one thread, on the data set's first two thirds of rows in a fixed shuffled order, standardized
on them (as a leaderboard fold trains), with the candidate sets given; once per seed here and
once by the earlier checkout's plcore-deep in a worker process, interleaved. The table prints
both seconds (the fit), their ratio and whether the test predictions on the last third are the
same (a change that keeps every fit to the bit answers "yes").
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
#: the default set: the five PiCO-family rows that are three quarters of field/2's deep track
#: (docs/leaderboard.md), the other learners the loop's changes touch, and two light ones
DEFAULT = ["pico", "pico_plus", "alim", "dirk", "conf_pico", "able", "crosel", "conf_crosel", "proden", "cc"]


def data_of(name: str, data_home) -> tuple:
    """(X_train, S_train, X_test) of ``name``: two thirds of the rows for training (a fixed shuffle,
    seed 0), the features standardized on them."""
    from plcore.datasets.loaders import load_dataset

    ds = load_dataset(name, data_home)
    order = np.random.RandomState(0).permutation(ds.n_samples)
    cut = 2 * ds.n_samples // 3
    train, test = order[:cut], order[cut:]
    X = np.asarray(ds.X, dtype=float)
    mean, std = X[train].mean(axis=0), X[train].std(axis=0)
    std[std == 0] = 1.0
    S = ds.S.toarray() if hasattr(ds.S, "toarray") else np.asarray(ds.S)
    return (X[train] - mean) / std, S[train].astype(bool), (X[test] - mean) / std


def timed_fit(option: str, data, epochs: int, seed: int, params: dict | None = None) -> tuple:
    """Seconds of one fit of learner ``option`` (its defaults but ``params``, ``epochs``, the CPU) on
    ``data = (X, S, X_test)`` and its test predictions."""
    import plcore_deep
    from plcore_deep.plugin import LEARNER_OPTIONS

    X, S, X_test = data
    est = getattr(plcore_deep, LEARNER_OPTIONS[option].split(":")[1])(**(params or {}), n_epochs=epochs,
                                                                       device="cpu", random_state=seed)
    t = time.perf_counter()
    est.fit(X, S)
    return time.perf_counter() - t, est.predict(X_test)


def main(argv=None) -> int:
    from plench_parity import _use_checkout, _where_plcore_deep

    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--before", required=True, type=Path, help="an earlier plcore checkout")
    ap.add_argument("--learners", nargs="+", default=DEFAULT)
    ap.add_argument("--dataset", default="lost")
    ap.add_argument("--epochs", type=int, default=50, help="field/2's deep track: 50")
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--data-home", default=os.environ.get("PLCORE_DATA_HOME"))
    args = ap.parse_args(argv)
    if not (args.before / "plugins" / "plcore-deep" / "plcore_deep").is_dir():
        raise SystemExit(f"--before {args.before} is not a plcore checkout (no plugins/plcore-deep/plcore_deep)")
    os.environ.setdefault("OMP_NUM_THREADS", "1")     # one thread a side (the spawned worker inherits it)
    data = data_of(args.dataset, args.data_home)
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"), initializer=_use_checkout,
                             initargs=(str(args.before),)) as before:
        print(f"before: plcore-deep of {before.submit(_where_plcore_deep).result()}; {args.dataset}: "
              f"{data[0].shape[0]} training rows, {args.epochs} epochs, seeds {args.seeds}, one thread\n")
        timed_fit("proden", data, 1, 0)                 # warm-up: imports and first calls, both sides
        before.submit(timed_fit, "proden", data, 1, 0).result()
        print("| learner | s before | s now | now/before | same predictions |")
        print("|---|---|---|---|---|")
        ratios, totals = [], [0.0, 0.0]
        for option in args.learners:
            old = new = 0.0
            same = True
            for seed in args.seeds:
                t_old, p_old = before.submit(timed_fit, option, data, args.epochs, seed).result()
                t_new, p_new = timed_fit(option, data, args.epochs, seed)
                old, new, same = old + t_old, new + t_new, same and np.array_equal(p_old, p_new)
            ratios.append(new / old)
            totals = [totals[0] + old, totals[1] + new]
            print(f"| {option} | {old:.2f} | {new:.2f} | {new / old:.2f}x | {'yes' if same else 'NO'} |", flush=True)
    print(f"\nnow/before: median {statistics.median(ratios):.2f}x, total {totals[1] / totals[0]:.2f}x "
          f"({totals[0]:.0f} s before, {totals[1]:.0f} s now)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
