"""PLENCH's model-selection table for plcore's deep learners: test accuracy of the model CR, AA or the oracle picks.

Run from the repository root::

    OMP_NUM_THREADS=1 PLCORE_DATA_HOME=../shared/datasets .venv/bin/python benchmarks/deep_selection.py \\
        [--datasets lost msrc-v2 ecoli satimage] [--learners proden rc cc lws cavl pop] [--epochs 200] \\
        [--splits 5] [--r 3] [--jobs 1] [--out per_split.csv] [--table per_split.csv] [--quick]

PLENCH (Wang et al., ICLR 2025; ``plench/core/model_selection.py``) chooses a learner's
hyperparameters *and* its checkpoint on a held-out part of the training data, by one of:

* **CR**, the covering rate: share of validation rows whose prediction is in their candidate set;
* **AA**, the approximated accuracy: mean of the candidate-masked, renormalised softmax at the
  prediction (0 when the prediction is not a candidate);
* the **oracle**: true-label accuracy of the validation rows (an upper bound no user has).

Protocol (per data set, split seed s = 0 .. splits-1): a random 80/20 train/test split; 10% of
the training part held out as validation rows (their candidate sets are all CR and AA see; their
true labels only the oracle sees); features z-scored on the other 90%, the rows the network
trains on. Data with exact labels only (UCI) get uniform candidate sets, ``--r`` false positives
per row (``UniformBags``, seed s). For every configuration of the learners' ``SEARCH_SPACE``
(``plcore_deep.plugin``: learning rate x weight decay, 4 points) the network (plcore's default:
MLP 500, Adam, batch 128) trains ``--epochs`` epochs without early stopping, and after every
epoch the validation CR, AA and accuracy and the test accuracy are recorded
(``DeepLearner._train(on_epoch=...)``). Each criterion then picks the (configuration,
epoch) with its largest validation value -- within a run the earliest best epoch, as PLENCH's
``argmax`` over the run's records; across configurations the first in grid order (PLENCH sorts
the runs by value and takes the last of tied runs, in file-system order) -- and the test
accuracy of that checkpoint is the split's figure. ``oracle, last`` is PLENCH's "Oracle
Accuracy": the configuration with the best validation accuracy at the last epoch, no early
stopping. ``CR, ties to the latest epoch`` is CR with ties within a run broken the other way: a
share of a few dozen to a few hundred validation rows, CR often ties across many epochs.

Printed: one markdown row per data set and learner, each cell the test accuracy in percent,
mean +- standard error over the splits as PLENCH's ``collect_results.format_mean`` computes it
(population std / sqrt(n)); then how often CR and AA chose the oracle's configuration, and a
summary over the rows. ``--out`` writes one CSV row per (data set, learner, split, criterion);
``--table`` prints the table of such a file again without training.
"""

from __future__ import annotations

import argparse
import csv
import inspect
import itertools
import os
import time

import numpy as np

DATASETS = ["lost", "msrc-v2", "ecoli", "satimage"]
LEARNERS = ["proden", "rc", "cc", "lws", "cavl", "pop"]
CRITERIA = ("CR", "AA", "oracle", "oracle, last", "CR, latest tie")
_COLUMNS = ("CR", "AA", "oracle")  # the label-free criteria and the oracle (per-epoch record columns 0-2; 3: test)


def _require_on_epoch():
    from plcore_deep import DeepLearner

    if "on_epoch" not in inspect.signature(getattr(DeepLearner, "_train", lambda: None)).parameters:
        raise SystemExit("benchmarks/deep_selection.py needs DeepLearner._train(X, S, on_epoch=callable(epoch, "
                         "model)), a per-epoch hook this plcore-deep does not have yet; update plcore-deep")


def _splits(dataset: str, n_splits: int, r: int, data_home: str):
    """(X_fit, S_fit, X_val, S_val, y_val, X_test, y_test) per split seed, features z-scored on the fit rows."""
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    from plcore.datasets import load_dataset
    from plcore.datasets.bags import UniformBags
    from plcore.run.protocols import apply_bags
    from plcore.utils import dense_candidates

    base = load_dataset(dataset, data_home=data_home)
    for seed in range(n_splits):
        ds = apply_bags(base, UniformBags(r=r), seed)   # the data's own candidate sets when it has them
        X, S, y = np.asarray(ds.X, dtype=np.float64), dense_candidates(ds.S).astype(bool), np.asarray(ds.y_true)
        train, test = train_test_split(np.arange(ds.n_samples), test_size=0.2, random_state=seed)
        fit, val = train_test_split(train, test_size=0.1, random_state=seed)
        scaler = StandardScaler().fit(X[fit])
        yield seed, tuple(scaler.transform(X[rows]) if k == 0 else part[rows]
                          for rows in (fit, val, test) for k, part in enumerate((X, S, y)))


def _record(learner: str, data: tuple, params: dict, n_epochs: int, seed: int) -> np.ndarray:
    """Train one configuration; (n_epochs, 4): validation CR, AA, accuracy and test accuracy after each epoch."""
    import torch

    from plcore.metrics import approximated_accuracy, covering_rate
    import plcore_deep
    from plcore_deep.plugin import LEARNER_OPTIONS

    X_fit, S_fit, _, X_val, S_val, y_val, X_test, _, y_test = data
    cls = getattr(plcore_deep, LEARNER_OPTIONS[learner].split(":")[1])
    est = cls(**{**params, "device": "cpu", "random_state": seed, "n_epochs": int(n_epochs)})
    Xv = torch.from_numpy(X_val.astype(np.float32))
    Xt = torch.from_numpy(X_test.astype(np.float32))
    rows = []

    @torch.no_grad()
    def on_epoch(epoch, model):
        logits = model(Xv).double()
        proba = torch.softmax(logits, dim=1).numpy()
        pred = proba.argmax(axis=1)
        test = model(Xt).argmax(dim=1).numpy()
        rows.append((covering_rate(S_val, pred), approximated_accuracy(S_val, proba), np.mean(pred == y_val),
                     np.mean(test == y_test)))

    # the learner's own fit (DeepLearner._fit), without early stopping, plus the hook
    est._train(X_fit, S_fit, early_stopping=False, on_epoch=on_epoch)
    return np.asarray(rows, dtype=np.float64)


def select(curves: np.ndarray) -> dict:
    """``curves`` (n_configs, n_epochs, 4) -> criterion -> (config index, epoch index, validation value, test acc).

    PLENCH's rule, :func:`plcore.run.checkpoints.select_checkpoints`: within a configuration the
    earliest epoch with the best value; across configurations the first (grid order) with the
    best value. ``oracle`` is its ``oracle_es``; ``oracle, last``: the last epoch of the
    configuration with the best validation accuracy there (its ``oracle``). ``CR, latest tie``:
    CR with ties within a run broken towards the latest epoch (CR, a share of a few hundred
    rows, ties often)."""
    from plcore.run.checkpoints import select_checkpoints

    chosen = select_checkpoints(curves)
    latest = select_checkpoints(curves, ties="latest")
    picks = {"CR": chosen["cr"], "AA": chosen["aa"], "oracle": chosen["oracle_es"], "oracle, last": chosen["oracle"],
             "CR, latest tie": latest["cr"]}
    return {name: (c.draw, c.checkpoint, c.value, c.test_accuracy) for name, c in picks.items()}


def run_one(dataset: str, learner: str, args) -> list[dict]:
    """All splits of one (data set, learner): one dict per split and criterion."""
    import torch

    from plcore_deep.plugin import SEARCH_SPACE

    torch.set_num_threads(1)
    configs = [dict(zip(SEARCH_SPACE, values)) for values in itertools.product(*SEARCH_SPACE.values())]
    out = []
    for seed, data in _splits(dataset, args.splits, args.r, args.data_home):
        t0 = time.perf_counter()
        curves = np.stack([_record(learner, data, params, args.epochs, seed) for params in configs])
        seconds = time.perf_counter() - t0
        for name, (c, e, value, test) in select(curves).items():
            out.append({"dataset": dataset, "learner": learner, "split": seed, "criterion": name,
                        **{k: configs[c][k] for k in SEARCH_SPACE}, "config": c, "epoch": e + 1,
                        "val_value": value, "test_accuracy": test, "seconds": seconds})
    return out


def _cell(values) -> str:
    """PLENCH's ``format_mean``: percent, mean +- np.std(values / sqrt(n)) (population std / sqrt(n))."""
    from plcore.run.checkpoints import cell

    return cell(values)


def report(rows: list[dict], wall: float | None = None) -> None:
    """Print the markdown table and the summary line of the per-split selections ``rows``."""
    pairs = list(dict.fromkeys((r["dataset"], r["learner"]) for r in rows))
    print("| data set | learner | CR | AA | oracle | oracle, last epoch | CR, ties to the latest epoch | AA - CR "
          "| same config as oracle: CR / AA | epochs chosen: CR / AA / oracle (median) | time (s) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    summary = []
    for ds, lrn in pairs:
        mine = [r for r in rows if r["dataset"] == ds and r["learner"] == lrn]
        acc = {c: [r["test_accuracy"] for r in mine if r["criterion"] == c] for c in CRITERIA}
        cfg = {c: [r["config"] for r in mine if r["criterion"] == c] for c in _COLUMNS}
        ep = {c: int(np.median([r["epoch"] for r in mine if r["criterion"] == c])) for c in _COLUMNS}
        same = [sum(a == b for a, b in zip(cfg[c], cfg["oracle"])) for c in ("CR", "AA")]
        mean = {c: round(100 * float(np.mean(v)), 9) for c, v in acc.items()}   # no float noise in the signs
        gap = mean["AA"] - mean["CR"]
        seconds = sum(r["seconds"] for r in mine if r["criterion"] == "CR")
        summary.append((gap, mean["oracle"] - mean["CR"], mean["oracle"] - mean["AA"],
                        mean["CR, latest tie"] - mean["CR"]))
        print(f"| {ds} | {lrn} | " + " | ".join(_cell(acc[c]) for c in CRITERIA)
              + f" | {gap:+.2f} | {same[0]}/{len(cfg['CR'])} / {same[1]}/{len(cfg['AA'])} "
              f"| {ep['CR']} / {ep['AA']} / {ep['oracle']} | {seconds:.0f} |", flush=True)
    gaps = np.asarray(summary)
    print(f"\nAA above CR in {int(np.sum(gaps[:, 0] > 0))} of {len(gaps)} rows, "
          f"equal in {int(np.sum(gaps[:, 0] == 0))}, below in {int(np.sum(gaps[:, 0] < 0))}; "
          f"mean AA - CR {gaps[:, 0].mean():+.2f} points; mean oracle - CR {gaps[:, 1].mean():+.2f}, "
          f"oracle - AA {gaps[:, 2].mean():+.2f} points (AA at or above the oracle in {int(np.sum(gaps[:, 2] <= 0))} "
          f"rows); CR with ties to the latest epoch - CR {gaps[:, 3].mean():+.2f} points"
          + (f"; wall time {wall:.0f} s" if wall is not None else ""))


def _read_csv(path: str) -> list[dict]:
    numeric = {"split": int, "config": int, "epoch": int, "val_value": float, "test_accuracy": float, "seconds": float}
    with open(path, newline="") as f:
        return [{k: numeric.get(k, str)(v) for k, v in row.items()} for row in csv.DictReader(f)]


def main(argv=None) -> int:
    from plcore_deep.plugin import LEARNER_OPTIONS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-home", default=os.environ.get("PLCORE_DATA_HOME", "../shared/datasets"))
    ap.add_argument("--datasets", nargs="+", default=DATASETS)
    ap.add_argument("--learners", nargs="+", default=LEARNERS, choices=list(LEARNER_OPTIONS))
    ap.add_argument("--epochs", type=int, default=200, help="epochs per run (the learners' default n_epochs)")
    ap.add_argument("--splits", type=int, default=5, help="random 80/20 splits, seeds 0 .. splits-1")
    ap.add_argument("--r", type=int, default=3, help="false positives per row for data with exact labels only")
    ap.add_argument("--jobs", type=int, default=1, help="(data set, learner) pairs in parallel (processes)")
    ap.add_argument("--out", help="write the per-split selections to this CSV file")
    ap.add_argument("--table", metavar="CSV", help="instead: print the table of a CSV written by --out (no training)")
    ap.add_argument("--quick", action="store_true", help="smoke run: ecoli, proden and cc, 2 splits, 3 epochs")
    args = ap.parse_args(argv)
    if args.table:
        report(_read_csv(args.table))
        return 0
    if args.quick:
        args.datasets, args.learners, args.splits, args.epochs = ["ecoli"], ["proden", "cc"], 2, 3
    _require_on_epoch()
    t0 = time.perf_counter()
    pairs = [(ds, lrn) for ds in args.datasets for lrn in args.learners]
    if args.jobs == 1:
        results = [run_one(ds, lrn, args) for ds, lrn in pairs]
    else:
        from joblib import Parallel, delayed

        results = Parallel(n_jobs=args.jobs)(delayed(run_one)(ds, lrn, args) for ds, lrn in pairs)
    wall = time.perf_counter() - t0
    rows = [r for res in results for r in res]
    if args.out:
        with open(args.out, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)

    import torch

    print(f"torch {torch.__version__}, CPU, {torch.get_num_threads()} thread(s); {args.splits} random 80/20 splits, "
          f"10% of the training part for validation; {args.epochs} epochs; bags r={args.r} on data without "
          f"candidate sets")
    print("test accuracy (%) of the model each criterion selects, mean ± standard error over the splits "
          "(PLENCH's format_mean)\n")
    report(rows, wall)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
