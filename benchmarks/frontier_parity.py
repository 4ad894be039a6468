"""Parity with Fuchs & Kalinke's conformal candidate cleaning (UAI 2025): plcore against their stored runs.

    .venv/bin/python benchmarks/frontier_parity.py --snapshot PATH [--datasets lost msrc-v2]
        [--methods proden conformal-proden ...] [--seeds 0 1 2 3 4] [--epochs 200]
        [--out DIR] [--jobs N] [--markdown FILE] [--theirs-only] [--cached-only]

``PATH`` is a snapshot of github.com/mathefuchs/pll-with-conformal-candidate-cleaning: a checked-out
work tree or a bare git directory (files read by ``git show HEAD:<path>``). Its data files and
stored per-instance results are read from there, never copied into plcore:

* ``data/realworld-datasets/<name>.mat`` (fields ``data``, ``partial_target`` k x n, ``target``
  k x n), prepared as the repository's ``get_rl_dataset`` and ``Dataset.create_data_split`` do
  (restated in :func:`prepare` and :func:`split_rows`): keep the classes most frequent among the
  candidates, as many as the true labels need to cover more than 99% of the rows (plus one),
  drop the rows whose true label is not kept, min-max scale every column over all rows (a
  constant column divided by 1), drop the columns whose standard deviation is <= 1e-10; then
  per seed an 80/20 split drawn by ``np.random.Generator(np.random.PCG64(seed))`` (nothing else
  draws from it first, ``script_create_data.py``), the training rows rounded down to a
  multiple of 16, both parts shuffled by the same generator.
* ``results/<prefix>_<dataset>_<seed>.parquet.gz``: one row per instance (``split`` 0 train,
  1 test; ``truelabel``, ``predlabel``), a parquet file whose columns are gzip-compressed (not
  a gzip stream, despite the name). Their test accuracy is the mean of ``truelabel ==
  predlabel`` on split 1, their transductive accuracy the same on split 0 (the training-set
  predictions their ``fit`` returns), aggregated as ``script_analyze_res.py`` does (mean and
  sample standard deviation over the seeds).

The script checks the preparation against every stored file it reads: the true labels of our
test rows (and of our training rows) must equal the file's ``truelabel`` column, row by row, in
order; a mismatch stops it (exit 1). plcore's learner then trains on the same rows with the
authors' settings (the 3 x 300 ReLU + batch-norm MLP, Adam with OneCycle up to 0.01, weight
decay 1e-4, batch 16 below 5,000 training rows, ``--epochs``), plus each method's own
constants as their code sets them (:data:`METHOD_PARAMS`). Test accuracy: ``predict`` on the
test rows; transductive accuracy: the argmax of ``confidences_`` on the training rows.

The table prints, per data set and method, both sides' accuracy per seed, their means with
sample standard deviations, and the difference in pooled standard deviations
``d = (mean_plcore - mean_theirs) / sqrt((sd_plcore^2 + sd_theirs^2) / 2)``; a count of methods
with ``|d| <= 2`` closes each data set; the transductive accuracies follow. ``--markdown FILE``
writes the same tables (for docs/results/frontier.md). Each plcore run is cached as one row of
``<out>/plcore_<epochs>epochs.csv`` (method, data set, seed, accuracies, fit seconds); runs
already there are not repeated, so an interrupted run resumes. ``--theirs-only`` prints the
authors' figures (after the data checks) without training anything.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import math
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

#: the authors' result-file prefix -> (plcore learner name, parameters beyond the shared ones)
OPTIONS = {
    "proden-2020": ("proden", {}),
    "conformal-proden": ("conf_proden", {}),
    "conformal-proden-abl": ("conf_proden", {"correction": False}),
    "cc-2020": ("cc", {}),
    "conformal-cc": ("conf_cc", {"as_authors_code": True}),
    "valen-2021": ("valen", {}),
    "conformal-valen": ("conf_valen", {}),
    "cavl-2021": ("cavl", {}),
    "conformal-cavl": ("conf_cavl", {"as_authors_code": True}),
    "pico-2022": ("pico", {}),
    "conformal-pico": ("conf_pico", {}),
    "pop-2023": ("pop", {}),
    "conformal-pop": ("conf_pop", {}),
    "crosel-2024": ("crosel", {"variant": "fuchs"}),
    "conformal-crosel": ("conf_crosel", {"variant": "fuchs"}),
}
#: short names accepted by --methods (the base method's name, ``conformal-x``, ``conformal-proden-abl``)
ALIASES = {prefix.rsplit("-", 1)[0] if prefix[-4:].isdigit() else prefix: prefix for prefix in OPTIONS}
#: the authors' data set name -> its index in their result files (``config.SELECTED_DATASETS``)
DATASETS = {"lost": 1, "msrc-v2": 3}
#: sizes after their preparation (classes, training rows, test rows), from their result files
SIZES = {"lost": (14, 896, 226), "msrc-v2": (22, 1392, 363)}

#: the authors' shared settings (``pll_classifier_base.py``: 200 epochs, batch 16 if fewer than
#: 5,000 training rows else 256, max_lr 0.01, weight decay 1e-4; every method: Adam +
#: ``OneCycleLR``; ``models/mlp.py``: Linear-ReLU-BatchNorm x 3, 300 wide)
SHARED = dict(hidden_layer_sizes=(300, 300, 300), batch_norm=True, optimizer="adam", lr_schedule="one_cycle",
              learning_rate=0.01, weight_decay=1e-4, batch_size="auto", device="cpu")

#: each base method's constants in the authors' code (partial_label_learning/methods/<file>), in
#: plcore's names. Given explicitly even where plcore's defaults agree, so that a change of a
#: default cannot move the comparison. The conformal variant of a method gets the same.
METHOD_PARAMS = {
    # valen_2021.py: ``_warmup`` runs ``range(10)`` epochs (its own Adam at PyTorch's defaults, lr
    # 1e-3, no weight decay, before the 200 OneCycle epochs; plcore's warm-up epochs are PRODEN
    # epochs inside ``n_epochs`` under the main optimiser); ``NearestNeighbors(n_neighbors=3)`` on
    # the warmed-up features (theirs: the 128-wide linear layer of ``MLPFeature``; plcore's: the
    # last 300-wide hidden layer).
    "valen": dict(warm_up=10, n_neighbors=3),
    # cavl_2021.py (and conformal_cavl.py): one warm-up epoch of the uniform-weight loss, the only
    # epoch whose batches step ``OneCycleLR``; the 200 epochs that follow never step it, so they
    # run at OneCycle's starting rate max_lr / div_factor = 0.01 / 25 (4.07e-4 after the warm-up
    # epoch's few steps; Adam's beta1 stays near OneCycle's 0.95, plcore's constant schedule keeps
    # 0.9). plcore: a constant 4e-4 and one more epoch (its first epoch trains on the uniform
    # targets it starts from, as their warm-up does); the cleaner's warm-up counts that epoch too
    # (a no-op with ``as_authors_code``, set for the record).
    "cavl": dict(lr_schedule="constant", learning_rate=0.01 / 25, extra_epochs=1, cleaning_warm_up=11),
    # pico_2022.py: ``Args(low_dim=128, moco_queue=8192, moco_m=0.999, proto_m=0.99)``, ``SupConLoss``
    # temperature 0.07, ``loss_cls + 0.5 * loss_cont``, confidence updates from ``epoch >= 1``,
    # ``set_conf_ema_m``: start 0.95, end 0.8; the key encoder sees ``x + 0.1 * randn`` (theirs
    # drawn once per row before training, plcore's per batch); ``MLPFeature``'s 128-wide linear
    # layer is their embedding (plcore: a projection head of ``feat_dim`` on the last hidden layer).
    "pico": dict(feat_dim=128, queue_size=8192, moco_m=0.999, proto_m=0.99, temperature=0.07, loss_weight=0.5,
                 prot_start=1, conf_ema=(0.95, 0.8), augmentation="gaussian", noise_scale=0.1),
    # pop_2023.py: ``roll_window = 5``, ``theta = 0.001``, ``inc = 0.001``, purification when
    # ``epoch >= 20 and epoch % 5 == 0``, theta grows while ``theta < 0.4`` and fewer than
    # 0.0001 n k entries changed.
    "pop": dict(warm_up=20, window=5, theta=0.001, inc=0.001, theta_max=0.4),
    # crosel_2024.py: ``warm_up_epochs = 10`` (CC, its own Adam at PyTorch's defaults, before the
    # 200 epochs), ``thresh = 0.9``, ``lambda_cr = 2.0``.
    "crosel": dict(warm_up=10, threshold=0.9, lam_cr=2.0),
}
#: conformal_*.py: ``alpha = 0.05``, cleaning from ``epoch >= 10``
CLEANING = dict(cleaning_alpha=0.05, cleaning_warm_up=10)

CSV_FIELDS = ["method", "dataset", "seed", "test_accuracy", "transductive_accuracy", "fit_seconds"]


# --------------------------------------------------------------------------- the snapshot
class Snapshot:
    """Files of the authors' repository: a work tree, or a bare git directory read at HEAD."""

    def __init__(self, path: Path):
        path = Path(path)
        if not self._valid(path) and self._valid(path / "repo"):
            path = path / "repo"
        self.path = path
        self.bare = (path / "HEAD").is_file() and (path / "objects").is_dir() and not (path / ".git").exists()
        if not self._valid(path):
            raise SystemExit(f"{path} is not a snapshot of pll-with-conformal-candidate-cleaning "
                             "(no partial_label_learning/data.py, neither in a work tree nor at HEAD)")

    @staticmethod
    def _valid(path: Path) -> bool:
        if (path / "partial_label_learning" / "data.py").is_file():
            return True
        if (path / "HEAD").is_file() and (path / "objects").is_dir():
            done = subprocess.run(["git", "-C", str(path), "cat-file", "-e", "HEAD:partial_label_learning/data.py"],
                                  capture_output=True)
            return done.returncode == 0
        return False

    def read(self, rel: str) -> bytes:
        if not self.bare:
            return (self.path / rel).read_bytes()
        done = subprocess.run(["git", "-C", str(self.path), "show", f"HEAD:{rel}"], capture_output=True)
        if done.returncode != 0:
            raise FileNotFoundError(f"{rel} is not in the snapshot ({done.stderr.decode().strip()})")
        return done.stdout


# --------------------------------------------------------------------------- data preparation (pure)
def _dense(a) -> np.ndarray:
    return a.toarray() if hasattr(a, "toarray") else np.asarray(a)


def read_mat(raw: bytes):
    """``(data (n, d), partial (n, k), target (n, k))`` of a ``.mat`` file's bytes, dense, rows
    as instances (the file stores the label matrices k x n)."""
    from scipy.io import loadmat

    m = loadmat(io.BytesIO(raw))
    return _dense(m["data"]), _dense(m["partial_target"]).T, _dense(m["target"]).T


def kept_classes(partial: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The classes ``get_rl_dataset`` keeps, ascending. Their number: the first position at
    which the cumulative share of the true-label counts, sorted in decreasing order, exceeds
    0.99, plus one (at most k). Which ones: that many classes with the most candidate
    occurrences, taken from the end of ``np.argsort`` of the candidate counts (its default
    kind, as theirs). Raises ValueError where a tie in the candidate counts straddles the
    cut, since the choice then rests on the sort's order of equal counts."""
    n, k = target.shape
    true_counts = np.count_nonzero(target, axis=0)
    share = np.cumsum(np.sort(true_counts)[::-1]) / n
    n_kept = min(int(np.flatnonzero(share > 0.99).min()) + 1, k)
    cand_counts = np.count_nonzero(partial, axis=0)
    order = np.argsort(cand_counts)
    if n_kept < k and cand_counts[order[-n_kept]] == cand_counts[order[-n_kept - 1]]:
        raise ValueError(f"tied candidate counts ({cand_counts[order[-n_kept]]}) at the cut of {n_kept} classes")
    return np.sort(order[-n_kept:])


def prepare(data: np.ndarray, partial: np.ndarray, target: np.ndarray):
    """``(X, S, y)`` as ``get_rl_dataset`` leaves a data set: the classes of
    :func:`kept_classes` (renumbered in ascending order), the rows whose true label
    (``argmax`` of ``target``) is kept, every column min-max scaled over all those rows (a range
    below 1e-10 divided by 1), then the columns with standard deviation <= 1e-10 dropped."""
    kept = kept_classes(partial, target)
    y_all = np.argmax(target, axis=1)
    rows = np.isin(y_all, kept)
    X = np.asarray(data, dtype=float)[rows]
    S = partial[rows][:, kept]
    y = np.searchsorted(kept, y_all[rows])
    lo, hi = X.min(axis=0, keepdims=True), X.max(axis=0, keepdims=True)
    span = np.where(hi - lo < 1e-10, 1.0, hi - lo)
    X = (X - lo) / span
    X = X[:, X.std(axis=0) > 1e-10]
    return X, S, y


def split_rows(n: int, seed: int, train_frac: float = 0.8):
    """``(train, test)`` row indices of ``Dataset.create_data_split`` with a fresh
    ``Generator(PCG64(seed))``: ``int(train_frac n)`` rounded down to a multiple of 16 rows drawn
    without replacement (``choice(shuffle=False)``), the rest for test, then the training rows
    shuffled and the test rows shuffled, in that order."""
    rng = np.random.Generator(np.random.PCG64(seed))
    n_train = int(train_frac * n)
    n_train -= n_train % 16
    train = rng.choice(n, size=n_train, replace=False, shuffle=False)
    test = np.setdiff1d(np.arange(n), train)
    rng.shuffle(train)
    rng.shuffle(test)
    return train, test


def read_result(raw: bytes):
    """A stored result file's rows (pandas): parquet, or parquet inside a gzip stream."""
    import pandas as pd

    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return pd.read_parquet(io.BytesIO(raw))


def result_accuracies(frame) -> tuple[float, float]:
    """``(test, transductive)`` accuracy of a stored run: mean ``truelabel == predlabel`` on
    split 1 and on split 0."""
    correct = (frame["truelabel"] == frame["predlabel"]).to_numpy()
    split = frame["split"].to_numpy()
    return float(correct[split == 1].mean()), float(correct[split == 0].mean())


def check_labels(frame, y_train: np.ndarray, y_test: np.ndarray) -> str | None:
    """None if the stored run's true labels equal ours, split by split, row by row; else what differs."""
    for split, ours in ((1, y_test), (0, y_train)):
        theirs = frame.loc[frame["split"] == split, "truelabel"].to_numpy()
        if len(theirs) != len(ours):
            return f"split {split}: {len(theirs)} rows stored, {len(ours)} prepared"
        bad = np.flatnonzero(theirs != ours)
        if len(bad):
            return f"split {split}: {len(bad)} of {len(ours)} true labels differ (first at row {bad[0]})"
    return None


# --------------------------------------------------------------------------- plcore's side
def plcore_params(prefix: str, epochs: int, seed: int) -> tuple[str, dict]:
    """(plcore learner name, its parameters) for the authors' method ``prefix``."""
    name, own = OPTIONS[prefix]
    base = name.removeprefix("conf_")
    params = {**SHARED, "n_epochs": epochs, "random_state": seed}
    if name.startswith("conf_"):
        params.update(CLEANING)
    method = dict(METHOD_PARAMS.get(base, {}))
    params["n_epochs"] += method.pop("extra_epochs", 0)
    if not name.startswith("conf_"):
        method.pop("cleaning_warm_up", None)
    params.update(method)
    params.update(own)
    return name, params


def run_plcore(prefix: str, dataset: str, seed: int, epochs: int, data) -> dict:
    """One fit of plcore's learner for ``prefix`` on the prepared split ``data``; a CSV row."""
    from plcore.registry import get_registry

    X_train, S_train, y_train, X_test, y_test = data
    registry = get_registry()
    name, params = plcore_params(prefix, epochs, seed)
    est = registry.create("learner", name, **{**registry.get("learner", name).spec.config_overrides, **params})
    t0 = time.perf_counter()
    est.fit(X_train, S_train.astype(bool))
    seconds = time.perf_counter() - t0
    classes = np.asarray(getattr(est, "classes_", np.arange(S_train.shape[1])))
    test = float(np.mean(est.predict(X_test) == y_test))
    trans = float(np.mean(classes[np.argmax(np.asarray(est.confidences_), axis=1)] == y_train))
    return {"method": prefix, "dataset": dataset, "seed": seed, "test_accuracy": f"{test:.6f}",
            "transductive_accuracy": f"{trans:.6f}", "fit_seconds": f"{seconds:.1f}"}


def _registered(prefix: str) -> bool:
    from plcore.registry import get_registry

    return OPTIONS[prefix][0] in get_registry().names("learner")


# --------------------------------------------------------------------------- tables
def _sd(values) -> float:
    return float(np.std(values, ddof=1)) if len(values) > 1 else float("nan")


def pooled_d(ours, theirs) -> float:
    sd = math.sqrt((_sd(ours) ** 2 + _sd(theirs) ** 2) / 2) if len(ours) > 1 and len(theirs) > 1 else float("nan")
    return (np.mean(ours) - np.mean(theirs)) / sd if sd > 0 else float("nan")


def _ms(values) -> str:
    if not len(values):
        return "-"
    return f"{100 * np.mean(values):.2f} ± {100 * _sd(values):.2f}" if len(values) > 1 else f"{100 * values[0]:.2f}"


def _seeds(values) -> str:
    return " ".join(f"{100 * v:.2f}" for v in values) if len(values) else "-"


def tables(datasets, methods, seeds, theirs, ours, missing, epochs) -> tuple[list[str], list[str]]:
    """(printed lines, markdown lines) of the comparison. ``theirs``/``ours``: {(method, data set,
    seed): (test, transductive)}."""
    out = [f"plcore vs the stored runs of Fuchs & Kalinke (UAI 2025): seeds {seeds}, plcore {epochs} epochs; "
           "accuracy in %, mean ± sd (ddof 1); d = difference in pooled sd"]
    md = [f"plcore ({epochs} epochs) against the stored runs of Fuchs & Kalinke (UAI 2025), seeds "
          f"{', '.join(map(str, seeds))}; accuracy in %, mean ± sd (ddof 1) over the seeds; d = (plcore - theirs) / "
          "pooled sd.", ""]
    w = max(16, 6 * len(seeds))
    for kind, col in (("test", 0), ("transductive", 1)):
        for dataset in datasets:
            out += ["", f"{kind} accuracy, {dataset}",
                    f"{'method':<21} {'plcore per seed':<{w}} {'theirs per seed':<{w}} "
                    f"{'plcore':>14} {'theirs':>14} {'d':>6}"]
            md += [f"### {dataset}: {kind} accuracy", "",
                   "| method | plcore per seed | theirs per seed | plcore | theirs | d |", "|---|---|---|---|---|---|"]
            within, compared = 0, 0
            for m in methods:
                t = [theirs[(m, dataset, s)][col] for s in seeds if (m, dataset, s) in theirs]
                o = [ours[(m, dataset, s)][col] for s in seeds if (m, dataset, s) in ours]
                d = pooled_d(o, t) if len(o) == len(seeds) else float("nan")
                if np.isfinite(d):
                    compared += 1
                    within += abs(d) <= 2
                note = missing.get(m, "")
                d_text = f"{d:.2f}" if np.isfinite(d) else "-"
                out.append(f"{m:<21} {_seeds(o) if not note else note:<{w}} "
                           f"{_seeds(t):<{w}} {_ms(o):>14} {_ms(t):>14} {d_text:>6}")
                md.append(f"| {m} | {_seeds(o) if not note else note} | {_seeds(t)} | {_ms(o)} | {_ms(t)} | {d_text} |")
            if compared:
                out.append(f"{dataset}: {within} of {compared} methods within 2 pooled sd")
                md += ["", f"{dataset}: {within} of {compared} methods within 2 pooled sd ({kind})."]
            md.append("")
    return out, md


# --------------------------------------------------------------------------- main
def _load_cache(path: Path) -> dict:
    done = {}
    if path.is_file():
        with path.open(newline="") as f:
            for row in csv.DictReader(f):
                done[(row["method"], row["dataset"], int(row["seed"]))] = (
                    float(row["test_accuracy"]), float(row["transductive_accuracy"]))
    return done


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--snapshot", required=True, type=Path,
                    help="a snapshot of github.com/mathefuchs/pll-with-conformal-candidate-cleaning "
                         "(work tree or bare git directory)")
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS), choices=list(DATASETS))
    ap.add_argument("--methods", nargs="+", default=list(OPTIONS), choices=list(OPTIONS) + list(ALIASES),
                    help="the authors' result-file prefixes (proden-2020, conformal-proden, ...) or short names "
                         "(proden, conformal-proden, ...)")
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    ap.add_argument("--epochs", type=int, default=200, help="plcore's epochs (the authors': 200)")
    ap.add_argument("--out", type=Path, help="folder of the per-run CSV cache (resumes an interrupted run)")
    ap.add_argument("--jobs", type=int, default=1, help="plcore fits in parallel (joblib processes)")
    ap.add_argument("--cached-only", action="store_true",
                    help="train nothing: report the runs in --out's cache (a cell without all its seeds shows '-')")
    ap.add_argument("--markdown", type=Path, help="write the tables as markdown to this file")
    ap.add_argument("--theirs-only", action="store_true",
                    help="check the data, print the authors' figures, train nothing")
    args = ap.parse_args(argv)
    methods = list(dict.fromkeys(ALIASES.get(m, m) for m in args.methods))
    snap = Snapshot(args.snapshot)

    # the data, checked against every stored run read
    splits, theirs = {}, {}
    for dataset in args.datasets:
        X, S, y = prepare(*read_mat(snap.read(f"data/realworld-datasets/{dataset}.mat")))
        for seed in args.seeds:
            train, test = split_rows(len(X), seed)
            sizes = (S.shape[1], len(train), len(test))
            if sizes != SIZES[dataset]:
                print(f"error: {dataset} seed {seed}: prepared (classes, train, test) = {sizes}, "
                      f"expected {SIZES[dataset]}")
                return 1
            splits[(dataset, seed)] = (X[train], S[train], y[train], X[test], y[test])
            for m in methods:
                frame = read_result(snap.read(f"results/{m}_{dataset}_{seed}.parquet.gz"))
                problem = check_labels(frame, y[train], y[test])
                if problem:
                    print(f"error: {m}_{dataset}_{seed}: the prepared split does not match the stored run ({problem})")
                    return 1
                theirs[(m, dataset, seed)] = result_accuracies(frame)
    print(f"data: {', '.join(args.datasets)} prepared as the authors' code does; the true labels of the test and "
          f"training rows equal the stored runs' for {len(theirs)} files (seeds {args.seeds})")

    ours, missing = {}, {}
    if not args.theirs_only:
        for m in methods:
            if not _registered(m):
                missing[m] = f"no learner {OPTIONS[m][0]!r} in plcore"
                print(f"note: {m}: {missing[m]}, skipped")
        cache = None
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            cache = args.out / f"plcore_{args.epochs}epochs.csv"
            ours.update({k: v for k, v in _load_cache(cache).items() if k[0] in methods})
        todo = [] if args.cached_only else [(m, d, s) for d in args.datasets for m in methods for s in args.seeds
                                            if m not in missing and (m, d, s) not in ours]
        if todo:
            print(f"plcore: {len(todo)} fits to run ({len(ours)} cached), {args.jobs} job(s)", flush=True)
        from joblib import Parallel, delayed

        runs = Parallel(n_jobs=args.jobs, return_as="generator_unordered")(
            delayed(run_plcore)(m, d, s, args.epochs, splits[(d, s)]) for m, d, s in todo)
        for row in runs:
            ours[(row["method"], row["dataset"], row["seed"])] = (float(row["test_accuracy"]),
                                                                  float(row["transductive_accuracy"]))
            print(f"  {row['dataset']:<8} {row['method']:<21} seed {row['seed']}: test {row['test_accuracy']}, "
                  f"transductive {row['transductive_accuracy']} ({row['fit_seconds']} s)", flush=True)
            if cache is not None:
                new = not cache.is_file()
                with cache.open("a", newline="") as f:
                    writer = csv.DictWriter(f, fieldnames=CSV_FIELDS)
                    if new:
                        writer.writeheader()
                    writer.writerow(row)
    else:
        missing = {m: "(not run)" for m in methods}

    printed, md = tables(args.datasets, methods, args.seeds, theirs, ours, missing, args.epochs)
    print("\n".join(printed))
    if args.markdown:
        args.markdown.write_text("\n".join(md) + "\n")
        print(f"wrote {args.markdown.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
