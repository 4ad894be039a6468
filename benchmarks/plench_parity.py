"""Parity with PLENCH: each PLENCH algorithm run by PLENCH's own code and by plcore, side by side.

    .venv/bin/python benchmarks/plench_parity.py --plench PATH [--datasets lost msrc-v2]
        [--algorithms PRODEN CC ...] [--seeds 0 1 2] [--steps 1000]
        [--plcore-set PARAM=VALUE ...] [--data-home DIR] [--quick]
        [--before PLCORE_CHECKOUT] [--extra] [--markdown FILE]

``PATH`` is a checkout of PLENCH (Wang et al., ICLR 2025; github.com/wwangwitsel/PLENCH), read
from there and never copied into plcore: its ``plench.core.algorithms`` classes, their default
hyperparameters (``plench.core.hparams_registry.default_hparams``) and its validation split
(``plench.lib.misc.split_dataset``) are imported from the checkout. Only PyTorch is needed
(PLENCH's data module, which needs torchvision, is not imported: its tabular split, ten lines,
is restated below).

For every data set, algorithm and seed both sides get the same data, split and settings:

* PLENCH's tabular preparation (``tabular_train_test_dataset_gen``): features z-scored over
  all rows (``(x - mean) / (std + 1e-6)``), rows shuffled with the seed
  ``seed_hash(trial_seed)``, the first 90% for training, the rest for test; then 10% of the
  training rows held out for validation (``split_dataset``, same seed). Neither side uses
  the validation rows: the figure is the test accuracy after the last step.
* PLENCH's defaults: MLP with one hidden layer of 500 ReLU units, Adam, its learning rate,
  weight decay and batch size, and each algorithm's own defaults (translated to plcore's
  parameter names below).
* The same number of optimiser steps: PLENCH draws ``--steps`` mini-batches (shuffled, the
  last incomplete batch of an epoch dropped); plcore trains ``ceil(steps / batches per
  epoch)`` epochs (its loop keeps the last incomplete batch), the nearest it has.

The table prints, per data set and algorithm, both mean test accuracies with their standard
deviations over the seeds and the difference in pooled standard deviations
``(plcore - PLENCH) / sqrt((sd_plcore^2 + sd_plench^2) / 2)``. Algorithms plcore does not have
yet are listed as such. docs/results/plench.md holds the table and explains every difference
above 2.

Speed (issue 65): each side's seconds for the seeds (a fit and its test predictions, one thread),
their ratio, and the ratio per optimiser step (plcore's loop runs more steps than PLENCH's, see
above). ``--before PLCORE_CHECKOUT`` times a second plcore, e.g. a ``git worktree`` of an earlier
commit, in the same run: its plcore-deep fits each seed in a worker process, interleaved with the
other two sides, and the table adds its seconds and whether its test accuracy is the same; this
checkout's plcore then fits in a worker process of its own too, so that the two plcores run alike
(in the benchmark's process, after PLENCH's fits there, the same code measured up to 13% slower).
``--extra`` adds plcore's own deep learners (CroSel, the conformal variants) at the settings of the
PLENCH algorithm they build on, without a PLENCH side. ``--markdown FILE`` writes the table and
its summary as markdown.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import math
import multiprocessing
import os
import random
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

#: PLENCH class name -> plcore option (``+learner=``); None: not in plcore yet
OPTIONS = {
    "PRODEN": "proden", "CC": "cc", "LWS": "lws", "CAVL": "cavl", "POP": "pop", "PiCO": "pico", "VALEN": "valen",
    "EXP": "exp", "MCL_GCE": "mcl_gce", "MCL_MSE": "mcl_mse", "ABS_MAE": "abs_mae", "ABS_GCE": "abs_gce",
    "PC": "pc", "Forward": "forward", "NN": "nn", "GA": "ga", "SCL_EXP": "scl_exp", "SCL_NL": "scl_nl",
    "L_W": "l_w", "OP_W": "op_w",
    "IDGP": "idgp", "ABLE": "able", "CRDPLL": "crdpll", "DIRK": "dirk", "FREDIS": "fredis", "ALIM": "alim",
    "PiCO_plus": "pico_plus",
}
#: plcore's own deep learners (``--extra``) -> (their option, the PLENCH algorithm whose settings they take)
EXTRA = {"CroSel": ("crosel", "PRODEN"), "Conf+PRODEN": ("conf_proden", "PRODEN"), "Conf+CC": ("conf_cc", "CC"),
         "Conf+CAVL": ("conf_cavl", "CAVL"), "Conf+POP": ("conf_pop", "POP"), "Conf+VALEN": ("conf_valen", "VALEN"),
         "Conf+PiCO": ("conf_pico", "PiCO"), "Conf+CroSel": ("conf_crosel", "PRODEN")}
#: plcore's data set name -> PLENCH's (its hyperparameter registry keys on it)
PLENCH_DATASETS = {"lost": "Lost", "msrc-v2": "MSRCv2"}


def _plcore_params(algorithm: str, hp: dict, steps_per_epoch: int) -> dict:
    """PLENCH's hyperparameters ``hp`` in plcore's names. Schedules PLENCH counts in steps
    (VALEN's warm-up, PiCO's, ALIM's, PiCO+'s and DIRK's ``prot_start``, PiCO+'s ``knn_start``) become epochs; IDGP's
    ``warm_up_epoch``, FREDIS's ``update_interval`` and ALIM's ``start_epoch`` are epochs on both
    sides. Every view of PiCO, ALIM, ABLE, DIRK and CRDPLL is the row itself, as PLENCH's tabular
    data hand over, and CRDPLL contrasts PLENCH's two views."""
    out = {"learning_rate": hp["lr"], "weight_decay": hp["weight_decay"], "batch_size": int(hp["batch_size"]),
           "hidden_layer_sizes": (500,), "optimizer": "adam"}
    if algorithm == "LWS":
        out["beta"] = float(hp["lw_weight"])
    elif algorithm == "POP":
        out.update(window=int(hp["rollWindow"]), warm_up=int(hp["warm_up"]), theta=float(hp["theta"]),
                   inc=float(hp["inc"]))
    elif algorithm == "VALEN":
        out.update(warm_up=max(1, round(hp["warm_up"] / steps_per_epoch)), n_neighbors=int(hp["knn"]))
    elif algorithm == "PiCO":
        start, end = (float(v) for v in str(hp["conf_ema_range"]).split(","))
        out.update(feat_dim=int(hp["feat_dim"]), queue_size=int(hp["moco_queue"]), moco_m=float(hp["moco_m"]),
                   proto_m=float(hp["proto_m"]), loss_weight=float(hp["loss_weight"]), conf_ema=(start, end),
                   prot_start=max(1, round(hp["prot_start"] / steps_per_epoch)), augmentation="identity")
    elif algorithm == "IDGP":
        out["warm_up"] = int(hp["warm_up_epoch"])
    elif algorithm == "CRDPLL":
        out.update(n_views=2, augmentation="identity")
    elif algorithm == "ABLE":
        out.update(feat_dim=int(hp["feat_dim"]), loss_weight=float(hp["loss_weight"]),
                   temperature=float(hp["temperature"]), augmentation="identity")
    elif algorithm == "DIRK":
        out.update(moco_m=float(hp["momentum"]), queue_size=int(hp["moco_queue"]), feat_dim=int(hp["feat_dim"]),
                   loss_weight=float(hp["weight"]), dist_temperature=float(hp["dist_temperature"]),
                   temperature=float(hp["feat_temperature"]),
                   prot_start=max(1, round(hp["prot_start"] / steps_per_epoch)), augmentation="identity")
    elif algorithm == "FREDIS":
        out.update({name: type_(hp[name]) for name, type_ in (
            ("theta", float), ("inc", float), ("delta", float), ("dec", float), ("times", int), ("change_size", int),
            ("update_interval", int), ("lam", float), ("alpha", float))})
    elif algorithm == "ALIM":
        out.update(_plcore_params("PiCO", hp, steps_per_epoch))
        out.update(start_epoch=int(hp["start_epoch"]), noise_rate=float(hp["noise_rate"]),
                   mixup_weight=float(hp["loss_weight_mixup"]), mixup_alpha=float(hp["mixup_alpha"]))
    elif algorithm == "PiCO_plus":
        out.update(_plcore_params("PiCO", hp, steps_per_epoch))
        out.update(pure_ratio=float(hp["pure_ratio"]), knn_start=max(1, round(hp["knn_start"] / steps_per_epoch)),
                   n_neighbors=int(hp["chosen_neighbors"]), temperature_guess=float(hp["temperature_guess"]),
                   ur_weight=float(hp["ur_weight"]), cls_weight=float(hp["cls_weight"]))
    return out


def _split(path: Path, seed_hash, split_dataset, trial_seed: int):
    """PLENCH's tabular split of the ``.mat`` at ``path``: (X_train, S_train, y_train, X_test, y_test)."""
    from scipy.io import loadmat

    m = loadmat(str(path))
    data = np.asarray(m["data"], dtype=float)
    target, partial = m["target"].T, m["partial_target"].T
    target = target.toarray() if hasattr(target, "toarray") else np.asarray(target)
    partial = partial.toarray() if hasattr(partial, "toarray") else np.asarray(partial)
    y = np.where(target == 1)[1]
    data = (data - data.mean(axis=0, keepdims=True)) / (data.std(axis=0, keepdims=True) + 1e-6)
    keys = list(range(len(data)))
    np.random.RandomState(seed_hash(trial_seed)).shuffle(keys)
    n_train = int(len(data) * (1 - 0.1))
    train, test = np.array(keys[:n_train]), np.array(keys[n_train:])

    class _Rows:   # the interface PLENCH's split_dataset reads
        def __init__(self, rows):
            self.rows, self.data, self.partial_targets = rows, data[rows], partial[rows]

        def __len__(self):
            return len(self.rows)

        def __getitem__(self, i):
            x = data[self.rows[i]]
            return x, x, x, x, partial[self.rows[i]], y[self.rows[i]]

    rows = _Rows(train)
    _, fit = split_dataset(rows, int(len(rows) * 0.1), seed_hash(trial_seed))
    fit_rows = train[np.asarray(fit.keys)]
    return data[fit_rows], partial[fit_rows].astype(np.float64), y[fit_rows], data[test], y[test]


def run_plench(algorithms, hparams_for, algorithm: str, dataset: str, data, steps: int, seed: int) -> float:
    """PLENCH's algorithm trained by PLENCH's own ``update`` for ``steps`` mini-batches (its
    ``train.py`` loop); the test accuracy after the last step."""
    import torch

    with _cpu_for_cuda_calls(torch):
        return _run_plench(torch, algorithms, hparams_for, algorithm, dataset, data, steps, seed)


@contextlib.contextmanager
def _cpu_for_cuda_calls(torch):
    """Where CUDA is missing, PLENCH's ``.cuda()`` calls (its DIRK, PiCO, ALIM and PiCO+ create
    tensors with ``.cuda()``; the other algorithms follow their inputs' device) return the CPU
    tensor, so that its code runs unchanged on a CPU-only machine; with CUDA, nothing changes."""
    if torch.cuda.is_available():
        yield
        return
    from unittest import mock

    with mock.patch.object(torch.Tensor, "cuda", lambda self, *args, **kwargs: self):
        yield


def _run_plench(torch, algorithms, hparams_for, algorithm, dataset, data, steps, seed):
    X, S, y, X_test, y_test = data
    random.seed(seed)                                   # PLENCH's train.py seeds all three (FREDIS uses random)
    torch.manual_seed(seed)
    np.random.seed(seed)
    hp = dict(hparams_for(algorithm, PLENCH_DATASETS[dataset]), max_steps=steps, output_dir=".")
    model = algorithms.get_algorithm_class(algorithm)(X.shape, S, hp)
    # as its DataLoader hands them over: features float32, candidate rows float64 (from the .mat)
    Xt, St = torch.tensor(X, dtype=torch.float32), torch.tensor(S, dtype=torch.float64)
    yt = torch.as_tensor(y)
    gen = torch.Generator().manual_seed(seed)
    batch, order, pos = int(hp["batch_size"]), None, len(X)

    def minibatch():
        nonlocal order, pos
        if pos + batch > len(X):                        # DataLoader(shuffle=True, drop_last=True)
            order, pos = torch.randperm(len(X), generator=gen), 0
        idx = order[pos:pos + batch]
        pos += batch
        x = Xt[idx]
        return [x, x, x, x, St[idx], yt[idx], idx]

    for _ in range(steps):
        model.train()
        if algorithm == "ALIM":                         # its train.py: two mini-batches per step (mixup's)
            model.update(minibatch(), minibatch())
        else:
            model.update(minibatch())
    model.eval()
    with torch.no_grad():
        pred = model.predict(torch.tensor(X_test, dtype=torch.float32)).argmax(dim=1).numpy()
    return float(np.mean(pred == y_test))


def run_plcore(algorithm: str, hp: dict, data, steps: int, seed: int, extra: dict | None = None,
               option: str | None = None) -> float:
    """plcore's learner (``option``, by default the one of PLENCH's ``algorithm``) at ``algorithm``'s
    PLENCH settings ``hp``; the test accuracy."""
    import plcore_deep
    from plcore_deep.plugin import LEARNER_OPTIONS

    X, S, y, X_test, y_test = data
    per_epoch = max(1, len(X) // int(hp["batch_size"]))
    cls = getattr(plcore_deep, LEARNER_OPTIONS[option or OPTIONS[algorithm]].split(":")[1])
    params = {**_plcore_params(algorithm, hp, per_epoch), **(extra or {})}
    est = cls(**params, n_epochs=plcore_epochs(len(X), hp, steps), device="cpu", random_state=seed)
    est.fit(X, S.astype(bool))
    return float(np.mean(est.predict(X_test) == y_test))


def plcore_epochs(n_rows: int, hp: dict, steps: int) -> int:
    """The epochs plcore trains for PLENCH's ``steps`` (the nearest it has, see the module docstring)."""
    return math.ceil(steps / max(1, n_rows // int(hp["batch_size"])))


def plcore_steps(n_rows: int, hp: dict, steps: int) -> int:
    """The optimiser steps those epochs take (every batch of an epoch, the last incomplete one too)."""
    return plcore_epochs(n_rows, hp, steps) * math.ceil(n_rows / int(hp["batch_size"]))


def timed_plcore(*args, **kwargs) -> tuple:
    """:func:`run_plcore`'s test accuracy and its seconds."""
    t = time.perf_counter()
    accuracy = run_plcore(*args, **kwargs)
    return accuracy, time.perf_counter() - t


def _use_checkout(path: str) -> None:
    """The ``--before`` worker's start: that checkout's plcore and plcore-deep first on the path."""
    root = Path(path).resolve()
    sys.path[:0] = [str(root / "plugins" / "plcore-deep"), str(root)]
    import plcore_deep  # noqa: F401  (imported here, before any fit, from the checkout)


def _where_plcore_deep() -> str:
    import plcore_deep

    return str(Path(plcore_deep.__file__).resolve().parent)


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b > 0 else "–"


def _literal(text: str):
    """``3``, ``1e-3``, ``(64,)``, ``True`` as Python values; anything else (``sgd``) as the string."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def _pooled(a, b) -> float:
    sd = math.sqrt((np.std(a, ddof=1) ** 2 + np.std(b, ddof=1) ** 2) / 2) if len(a) > 1 else float("nan")
    return (np.mean(a) - np.mean(b)) / sd if sd > 0 else float("nan")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--plench", required=True, type=Path, help="a checkout of github.com/wwangwitsel/PLENCH")
    ap.add_argument("--datasets", nargs="+", default=list(PLENCH_DATASETS), choices=list(PLENCH_DATASETS))
    ap.add_argument("--algorithms", nargs="+", default=list(OPTIONS), choices=list(OPTIONS))
    ap.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    ap.add_argument("--steps", type=int, default=1000, help="optimiser steps, the same on both sides")
    ap.add_argument("--plcore-set", nargs="+", default=[], metavar="PARAM=VALUE",
                    help="plcore's learner parameters set on top of PLENCH's (an ablation that tests the cause of a "
                         "difference, e.g. --algorithms VALEN --plcore-set optimizer=sgd)")
    ap.add_argument("--data-home", default=os.environ.get("PLCORE_DATA_HOME"))
    ap.add_argument("--quick", action="store_true", help="lost, PRODEN and CC, seeds 0 and 1, 50 steps")
    ap.add_argument("--before", type=Path, help="a second plcore checkout (an earlier commit) timed in the same run")
    ap.add_argument("--extra", action="store_true",
                    help="add plcore's own deep learners (CroSel, the conformal variants), without a PLENCH side")
    ap.add_argument("--markdown", type=Path, help="write the table and its summary as markdown to this file")
    args = ap.parse_args(argv)
    os.environ.setdefault("OMP_NUM_THREADS", "1")     # one thread a side (spawned workers inherit it)
    if any("=" not in item for item in args.plcore_set):
        raise SystemExit(f"--plcore-set takes PARAM=VALUE pairs, got {args.plcore_set}")
    extra = {k: _literal(v) for k, v in (item.split("=", 1) for item in args.plcore_set)}
    if args.quick:
        args.datasets, args.algorithms, args.seeds, args.steps = ["lost"], ["PRODEN", "CC"], [0, 1], 50
    if not (args.plench / "plench" / "core" / "algorithms.py").is_file():
        raise SystemExit(f"{args.plench} is not a PLENCH checkout (no plench/core/algorithms.py)")
    if not args.data_home:
        raise SystemExit("give --data-home or set PLCORE_DATA_HOME (the folder holding palm/lost.mat)")
    sys.path.insert(0, str(args.plench.resolve()))
    from plench.core import algorithms, hparams_registry
    from plench.lib import misc

    from plcore.datasets.loaders import find_dataset_file
    from plcore_deep.plugin import LEARNER_OPTIONS

    before = now = None
    if args.before is not None:
        if not (args.before / "plugins" / "plcore-deep" / "plcore_deep").is_dir():
            raise SystemExit(f"--before {args.before} is not a plcore checkout (no plugins/plcore-deep/plcore_deep)")
        before, now = (ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                                           initializer=_use_checkout, initargs=(str(root),))
                       for root in (args.before, Path(__file__).resolve().parents[1]))
        print(f"before: plcore-deep of {before.submit(_where_plcore_deep).result()}, one worker process; "
              f"now: {now.submit(_where_plcore_deep).result()}, another")
    rows = [(a, OPTIONS[a], a) for a in args.algorithms] + ([(name, option, base) for name, (option, base)
                                                             in EXTRA.items()] if args.extra else [])
    print(f"PLENCH parity: {args.steps} steps, seeds {args.seeds}; test accuracy after the last step"
          + (f"; plcore's learner with {extra}" if extra else ""))
    print(f"{'data':<9} {'algorithm':<11} {'PLENCH':>15} {'plcore':>15} {'diff/sd':>8} {'s PLENCH':>9} {'s plcore':>9}"
          + (f" {'s before':>9} {'same':>5}" if before else "") + f" {'ratio':>6} {'a step':>6}")
    table = []
    try:
        _warm_up(args, before, now, algorithms, hparams_registry, misc, find_dataset_file)
        for dataset in args.datasets:
            path = find_dataset_file(dataset, args.data_home)
            for name, option, base in rows:
                if option not in LEARNER_OPTIONS:
                    print(f"{dataset:<9} {name:<11} {'not in plcore yet':>31}")
                    continue
                row = _measure(args, dataset, path, name, option, base, extra, before, now, algorithms,
                               hparams_registry, misc)
                if row is not None:
                    table.append(row)
    finally:
        for worker in (before, now):
            if worker is not None:
                worker.shutdown()
    summary = _summary(table, before is not None)
    print("\n".join(summary))
    if args.markdown:
        args.markdown.write_text(_markdown(table, before is not None, args) + "\n" + "\n".join(summary) + "\n")
        print(f"wrote {args.markdown}")
    return 0


def _warm_up(args, before, now, algorithms, hparams_registry, misc, find_dataset_file) -> None:
    """A short untimed fit on every side first: the first fit of a process pays its imports and
    PyTorch's first calls, which would otherwise be charged to the first row."""
    dataset = args.datasets[0]
    data = _split(find_dataset_file(dataset, args.data_home), misc.seed_hash, misc.split_dataset, 0)
    hp = hparams_registry.default_hparams("PRODEN", PLENCH_DATASETS[dataset])
    run_plench(algorithms, hparams_registry.default_hparams, "PRODEN", dataset, data, 20, 0)
    run_plcore("PRODEN", hp, data, 20, 0)
    for worker in (before, now):
        if worker is not None:
            worker.submit(run_plcore, "PRODEN", hp, data, 20, 0).result()


def _measure(args, dataset, path, name, option, base, extra, before, now, algorithms, hparams_registry, misc):
    """One row: every seed on each side, interleaved (PLENCH, the ``--before`` plcore, plcore; the
    plcores in their workers with ``--before``)."""
    hp = hparams_registry.default_hparams(base, PLENCH_DATASETS[dataset])
    theirs, ours, old, t_theirs, t_ours, t_old, steps = [], [], [], 0.0, 0.0, 0.0, 0
    plench_side = name in OPTIONS
    side = "PLENCH"
    try:
        for seed in args.seeds:
            data = _split(path, misc.seed_hash, misc.split_dataset, seed)
            steps += plcore_steps(len(data[0]), hp, args.steps)
            if plench_side:
                side = "PLENCH"
                t0 = time.perf_counter()
                theirs.append(run_plench(algorithms, hparams_registry.default_hparams, base, dataset, data,
                                         args.steps, seed))
                t_theirs += time.perf_counter() - t0
            if before is not None:
                side = "the --before plcore"
                accuracy, seconds = before.submit(timed_plcore, base, hp, data, args.steps, seed, extra,
                                                  option).result()
                old.append(accuracy)
                t_old += seconds
            side = "plcore"
            accuracy, seconds = (timed_plcore(base, hp, data, args.steps, seed, extra, option) if now is None else
                                 now.submit(timed_plcore, base, hp, data, args.steps, seed, extra, option).result())
            ours.append(accuracy)
            t_ours += seconds
    except Exception as exc:   # one algorithm's failure does not cost the table its other rows
        print(f"{dataset:<9} {name:<11} failed in {side}'s code: {type(exc).__name__}: {exc}", flush=True)
        return None
    row = {"data": dataset, "algorithm": name, "theirs": theirs, "ours": ours, "old": old, "s_theirs": t_theirs,
           "s_ours": t_ours, "s_old": t_old, "steps_theirs": args.steps * len(args.seeds), "steps_ours": steps}
    acc = (lambda v: f"{np.mean(v):>8.4f} ± {np.std(v, ddof=1):.3f}") if len(args.seeds) > 1 else \
        (lambda v: f"{np.mean(v):>8.4f}        ")
    ratio, per_step = _ratios(row)
    print(f"{dataset:<9} {name:<11} {acc(theirs) if theirs else '–':>15} {acc(ours)} "
          f"{_pooled(ours, theirs) if theirs else float('nan'):>8.2f} {t_theirs if theirs else float('nan'):>9.1f} "
          f"{t_ours:>9.1f}" + (f" {t_old:>9.1f} {'yes' if old == ours else 'NO':>5}" if before else "")
          + f" {ratio:>6} {per_step:>6}", flush=True)
    return row


def _ratios(row) -> tuple:
    """plcore's seconds over PLENCH's, for the fits and per optimiser step ('–' without PLENCH)."""
    if not row["theirs"]:
        return "–", "–"
    return (_ratio(row["s_ours"], row["s_theirs"]),
            _ratio(row["s_ours"] / row["steps_ours"], row["s_theirs"] / row["steps_theirs"]))


def _summary(table, with_before: bool) -> list:
    """The issue's figures: plcore/PLENCH per algorithm (median, the share at or below 0.5x, the
    total) and, with ``--before``, plcore's seconds over the earlier checkout's."""
    out = []
    for data in sorted({r["data"] for r in table}):
        rows = [r for r in table if r["data"] == data and r["theirs"]]
        if rows:
            ratios = [r["s_ours"] / r["s_theirs"] for r in rows]
            steps = [(r["s_ours"] / r["steps_ours"]) / (r["s_theirs"] / r["steps_theirs"]) for r in rows]
            total = sum(r["s_ours"] for r in rows) / sum(r["s_theirs"] for r in rows)
            out.append(f"{data}: plcore/PLENCH over {len(rows)} algorithms: median {statistics.median(ratios):.2f}x "
                       f"(per step {statistics.median(steps):.2f}x), {sum(v <= 0.5 for v in ratios)} at or below "
                       f"0.5x, worst {max(ratios):.2f}x, total {total:.2f}x")
        if with_before:
            mine = [r for r in table if r["data"] == data]
            speedup = [r["s_ours"] / r["s_old"] for r in mine if r["s_old"] > 0]
            if not speedup:
                continue
            same = sum(r["old"] == r["ours"] for r in mine)
            total = sum(r["s_ours"] for r in mine if r["s_old"] > 0) / sum(r["s_old"] for r in mine)
            out.append(f"{data}: plcore/before over {len(mine)} learners: median {statistics.median(speedup):.2f}x, "
                       f"best {min(speedup):.2f}x, total {total:.2f}x; test accuracy the same for {same} of {len(mine)}")
    return out


def _markdown(table, with_before: bool, args) -> str:
    head = ["data", "algorithm", "PLENCH acc", "plcore acc", "diff/sd", "s PLENCH", "s plcore"]
    head += ["s before", "plcore/before", "same"] if with_before else []
    head += ["plcore/PLENCH", "per step"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in table:
        acc = (lambda v: f"{100 * np.mean(v):.1f} ± {100 * np.std(v, ddof=1):.1f}" if len(v) > 1 else
               f"{100 * np.mean(v):.1f}")
        cells = [r["data"], r["algorithm"], acc(r["theirs"]) if r["theirs"] else "–", acc(r["ours"]),
                 f"{_pooled(r['ours'], r['theirs']):.2f}" if r["theirs"] else "–",
                 f"{r['s_theirs']:.1f}" if r["theirs"] else "–", f"{r['s_ours']:.1f}"]
        if with_before:
            cells += [f"{r['s_old']:.1f}", _ratio(r["s_ours"], r["s_old"]), "yes" if r["old"] == r["ours"] else "NO"]
        cells += list(_ratios(r))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
