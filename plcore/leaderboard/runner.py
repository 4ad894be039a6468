"""``leaderboard run``: the missing folds of the chosen rows, each written as its run file
(issue 56, item 4; design note 2.4 and 2.5).

A fold runs as the k-fold protocol runs one (:func:`plcore.run.protocols.evaluate_split`):
the pipeline (the protocol's preprocessing, the reducer, the learner) fitted on the training rows
with the protocol's nested label-free selection, then the test rows predicted. The data are first
checked against the protocol (fingerprint, candidate sets, fold digests: one line where they
differ). A fold whose file exists and is valid (:mod:`plcore.leaderboard.checks`) is not run
again, whatever its status: a killed run resumes with only the missing folds; an invalid or
truncated file is replaced. Each fold is locked while it runs, so that two runs into one folder
split the work. A fold that raises is written with ``status: failed`` and its error
in one line, so that a crash is seen, not retried blindly. A clusterer's fold is a partition of the
clustering track, run as the clustering protocol runs one
(:func:`plcore.run.protocols.cluster_partition`): every row clustered, the labelled
rows keeping their candidate sets. The scores are computed from the predictions by
:func:`~plcore.leaderboard.protocol.fold_scores`, as ``page`` recomputes them.
"""

from __future__ import annotations

import os
import platform
import re
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from plcore.exceptions import ConfigError, PlcoreError, one_line
from plcore.leaderboard.jobs import Entry, component_setup
from plcore.leaderboard.protocol import Protocol, checked_data, fold_scores
from plcore.leaderboard.runfile import (
    SCHEMA,
    ComponentRef,
    DatasetRef,
    FoldRef,
    ProtocolRef,
    RunFile,
    fold_path,
    pack_predictions,
    stored_value,
    write_run,
)

__all__ = ["run_missing", "fold_record", "numerics", "probe_rate"]

_PATH = re.compile(r"(?:[A-Za-z]:\\|/)(?:[^\s'\"/\\:]+[/\\])+")


def _without_paths(err: BaseException) -> str:
    """``Type: message`` on one line (:func:`~plcore.exceptions.one_line`), with directories of this
    machine left out of any path."""
    return _PATH.sub("", one_line(err))[:500]


def _versions() -> dict:
    from importlib import metadata

    out = {"python": platform.python_version()}
    for dist in ("plcore", "numpy", "scikit-learn"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def _machine() -> dict:
    """What the timings were measured on (no name or path of the machine): CPU count, architecture,
    system, and the GPU where PyTorch is loaded and sees one."""
    out = {"cpus": os.cpu_count(), "arch": platform.machine(), "system": platform.system(), "gpu": None}
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        out["gpu"] = torch.cuda.get_device_name(0)
    return out


def numerics() -> dict:
    """What a fold's numbers depend on beyond the code (issue 62, item 5): the BLAS and OpenMP
    libraries numpy and scikit-learn loaded (threadpoolctl: API, version, threads), the thread
    variables of the environment, the CPU's model and, where PyTorch is loaded, its version, threads,
    the CPU capability its kernels use and CUDA.
    ``verify`` re-runs a fold under these thread counts."""
    from threadpoolctl import threadpool_info

    libs = sorted(({"api": i.get("internal_api"), "version": i.get("version"), "threads": i.get("num_threads"),
                    **({"architecture": i["architecture"]} if i.get("architecture") else {})}
                   for i in threadpool_info()), key=lambda d: (str(d["api"]), str(d["version"])))
    env = {k: os.environ[k] for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                      "OPENBLAS_CORETYPE") if k in os.environ}
    out = {"libraries": libs, "environment": env, "cpu": cpu_model()}
    torch = sys.modules.get("torch")
    if torch is not None:
        out["torch"] = {"version": torch.__version__, "threads": torch.get_num_threads(),
                        "capability": torch.backends.cpu.get_cpu_capability(),
                        "cuda": torch.version.cuda if torch.cuda.is_available() else None}
    return out


def cpu_model() -> str | None:
    """The CPU's model name (``/proc/cpuinfo`` on Linux, else :func:`platform.processor`): the
    kernels BLAS and PyTorch pick depend on it, and with them a fit's last bits."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip() or None
    except OSError:
        pass
    return platform.processor() or None


def _header(protocol: Protocol, entry: Entry, dataset: str, fold: int) -> dict:
    """The fields every run file of this fold has, before it runs (:class:`RunFile`'s)."""
    entry_data = protocol.datasets[dataset]
    return {"schema": SCHEMA, "protocol": ProtocolRef(protocol.data["id"], protocol.data["version"], protocol.hash),
            "track": entry.track,
            "component": ComponentRef(entry.kind, entry.name, entry.revision, entry.spec_hash,
                                      display_name=entry.display_name, distribution=entry.distribution,
                                      version=entry.version, pipeline=tuple(entry.pipeline), section=entry.section,
                                      group=entry.group),
            "dataset": DatasetRef(dataset, entry_data["fingerprint"], entry_data["candidates_digest"]),
            "fold": FoldRef(fold, len(entry_data["splits"][entry.track]), entry_data["splits"][entry.track][fold],
                            protocol.track(entry.track).seed),
            "software": _versions()}


def _na_record(protocol: Protocol, entry: Entry, dataset: str, fold: int) -> RunFile:
    """The run file of a fold on a data set the component declares it cannot run (its reason as the error)."""
    return RunFile(**_header(protocol, entry, dataset, fold), status="na",
                   error=one_line(entry.na[dataset] or "declared not applicable"))


def fold_record(protocol: Protocol, entry: Entry, dataset: str, fold: int, *, registry, data, splits) -> RunFile:
    """Run one fold and return its run file (``status: failed`` with its error where it raised;
    the warnings it gave, on one line each, in ``warnings``)."""
    _, drawn = data
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:  # kept in the file, not printed per fold
        warnings.simplefilter("always")
        outcome = _run_into(protocol, entry, registry, drawn, splits[fold], fold)
    said = sorted({_PATH.sub("", one_line(str(w.message)))[:300] for w in caught})
    timing = {**outcome.pop("timing", {}), "wall_s": time.perf_counter() - t0}
    rec = RunFile(**_header(protocol, entry, dataset, fold), started_at=started, **outcome,
                  warnings=tuple(said[:5]) if said else None, timing=timing,
                  machine=_machine(),  # after the fold: a deep learner has loaded PyTorch by then
                  numerics=numerics(), finished_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    try:
        RunFile.from_dict(rec.to_dict())
    except PlcoreError as err:  # what the fold produced is no run file: a failed fold, said why
        rec = rec.replace(status="failed", error=_without_paths(err), predictions=None, scores=None,
                          selection=None, tuning=None)
    return rec


def _run_into(protocol, entry, registry, drawn, split, fold) -> dict:
    """Fit and predict one fold (:func:`fold_record`): its outcome, the run file's fields."""
    spec = protocol.track(entry.track)
    try:
        setup, select = component_setup(protocol, entry, registry)
        tuning = None
        if entry.track == "clustering":
            pred, chosen, timing = _cluster_fold(setup, select, spec, drawn, split)
        elif spec.budget is not None:
            pred, chosen, timing, tuning = _budget_fold(setup, select, spec, drawn, split, fold)
        else:
            pred, chosen, timing = _classify_fold(setup, select, spec, drawn, split, fold)
        width = max(drawn.n_classes, int(pred.max()) + 1 if pred.size else 0)  # clusters may outnumber classes
        return dict(status="ok", error=None, predictions=pack_predictions(pred, width),
                    scores=fold_scores(spec, entry.track, drawn, split, pred, fold=fold, tuning=tuning),
                    selection={"method": select["method"], "chosen": {k: stored_value(v) for k, v in chosen.items()}},
                    timing=timing, **({"tuning": tuning} if tuning is not None else {}))
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as err:  # noqa: BLE001 - a method that fails is a result of the leaderboard
        return dict(status="failed", error=_without_paths(err))


def _classify_fold(setup, select, spec, drawn, split, fold):
    """The test rows' predicted class indices of one outer fold, the chosen parameters and the timings."""
    from plcore.run.protocols import evaluate_split, feeds_truth, singleton_candidates

    train, test = split
    feed = feeds_truth(setup.learner, "auto", drawn)
    predictions: list = []
    step = evaluate_split(setup, drawn.X, drawn.S, drawn.y_true, train, test, spec.preprocessing, fold,
                          predictions, classes=drawn.classes,
                          S_learner=singleton_candidates(drawn.y_true, drawn.n_classes) if feed else None,
                          select=select, random_state=spec.seed)
    chosen = {k[len("selected."):]: v for k, v in step.items() if k.startswith("selected.")}
    return (np.asarray([row["y_pred"] for row in predictions], dtype=np.int64), chosen,
            {"fit_s": step["fit_time"], "predict_s": step["predict_time"]})


def _budget_fold(setup, select, spec, drawn, split, fold):
    """One outer fold under the track's budget (:func:`plcore.run.protocols.budget_fold`): the tuned
    choice's test predictions, its drawn parameters, the timings and the ``tuning`` block (every
    configuration's checkpoints, the choice, the default's predictions, both disambiguations)."""
    from plcore.leaderboard.runfile import TUNING_COLUMNS
    from plcore.run.protocols import budget_fold, feeds_truth, singleton_candidates

    train, test = split
    feed = feeds_truth(setup.learner, "auto", drawn)
    res = budget_fold(setup, drawn.X, drawn.S, drawn.y_true, train, test, budget=spec.budget,
                      space=select.get("space") or {}, preprocessing=spec.preprocessing, seed=spec.seed, fold=fold,
                      S_learner=singleton_candidates(drawn.y_true, drawn.n_classes) if feed else None)
    q = drawn.n_classes
    configurations = [{"params": {k: stored_value(v) for k, v in params.items()}, "steps": [int(s) for s in steps],
                       **{col: [float(v) for v in curve[:, i]] for i, col in enumerate(TUNING_COLUMNS)}}
                      for params, steps, curve in zip(res.params, res.steps, res.curves)]
    j, c = res.chosen
    tuning = {"configurations": configurations, "chosen": {"configuration": int(j), "checkpoint": int(c)},
              "default": {"predictions": pack_predictions(res.predictions["default"], q)},
              "disambiguation": {k: pack_predictions(res.disambiguation[k], q) for k in ("default", "tuned")}}
    timing = {"fit_s": float(sum(res.fit_seconds)), "configurations_s": [float(t) for t in res.fit_seconds]}
    return np.asarray(res.predictions["tuned"], dtype=np.int64), res.params[j], timing, tuning


def _cluster_fold(setup, select, spec, drawn, split):
    """Every row's cluster of one partition, the chosen parameters and the timings."""
    from plcore.run.pipeline import make_preprocessor
    from plcore.run.protocols import cluster_partition, present_classes

    labelled, _ = split
    keep = present_classes(drawn, "present")
    scaler = make_preprocessor(spec.preprocessing)
    X_all = drawn.X if scaler is None else scaler.fit_transform(drawn.X)
    clusterer, chosen, _, fit_time = cluster_partition(
        setup.clusterer, drawn, X_all, keep, labelled, select=select, select_seed=int(spec.seed),
        by_part=scaler if spec.preprocessing_by_part else None)
    chosen = {k[len("selected."):] if k.startswith("selected.") else k: v for k, v in chosen.items()}
    return np.asarray(clusterer.labels_, dtype=np.int64), chosen, {"fit_s": fit_time}


def probe_rate(protocol: Protocol, entry: Entry, registry, *, data_home=None) -> float | None:
    """A row that has never run, priced by a probe: its first fold on the protocol's smallest task
    it runs (under a budget, one configuration for one checkpoint's steps), timed as a fold is;
    seconds per unit of work (:func:`plcore.leaderboard.jobs.fold_work`), or None where the probe
    failed or the row runs no task."""
    import copy
    from dataclasses import replace

    from plcore.leaderboard.jobs import fold_work

    spec = protocol.track(entry.track)
    tasks = [d for d in protocol.track_datasets(entry.track) if d not in entry.na]
    if not tasks:
        return None
    task = min(tasks, key=lambda d: protocol.datasets[d]["n_samples"])
    probe = protocol
    if spec.budget is not None:  # the same protocol (data, folds, hash), a smaller budget
        data = copy.deepcopy(protocol.data)
        data["tracks"][entry.track]["budget"] = {**spec.budget.to_dict(), "configurations": 1,
                                                 "steps": spec.budget.every}
        probe = replace(protocol, data=data, _tracks={})
    try:
        loaded, splits = checked_data(probe, task, data_home)
    except PlcoreError:  # its data are not here: no probe
        return None
    rec = fold_record(probe, entry, task, 0, registry=registry, data=loaded, splits=splits[entry.track])
    if not rec.ok or not rec.seconds("wall_s"):
        return None
    return rec.seconds("wall_s") / fold_work(probe, entry, task, registry)


def run_missing(protocol: Protocol, rows: list[Entry], results, *, registry, datasets=None, data_home=None,
                echo=print, tracking_uri: str | None = None) -> list[Path]:
    """Run every fold of ``rows`` x ``datasets`` (default: the protocol's) that has no valid run
    file under ``results`` yet, writing each as it ends; returns the files written.

    The files already there are checked first (:func:`plcore.leaderboard.checks.scan`): a valid
    one is kept, an invalid or truncated one is replaced by running its fold again, and said so.
    Each fold is claimed while it runs (:func:`~plcore.leaderboard.runfile.claimed`): a fold
    another run holds is left to it, and one it wrote meanwhile is not run again. With
    ``tracking_uri`` each cell that ran is also an MLflow run, for browsing (:func:`_browse`)."""
    from plcore.leaderboard.checks import refuse_links, scan
    from plcore.leaderboard.runfile import claimed

    names = list(datasets or protocol.datasets)
    unknown = [d for d in names if d not in protocol.datasets]
    if unknown:
        raise ConfigError(f"protocol {protocol.key} has no data set(s) {', '.join(unknown)}; its data sets: "
                          f"{', '.join(protocol.datasets)}")
    results = Path(results)
    refuse_links(results, f"results {results}")  # no fold written through a link out of the tree
    places = {(e.key, d, k): _fold_path(results, protocol, e, d, k) for d in names for e in rows
              if d in protocol.track_datasets(e.track) for k in range(len(protocol.datasets[d]["splits"][e.track]))}
    there = [p for p in places.values() if p.exists()]
    found = scan(protocol, results, registry=registry, paths=there, data_home=data_home)
    invalid = {bad.path: bad.reason for bad in found.invalid}
    seen = {p: p.stat().st_mtime_ns for p in invalid}

    def written_meanwhile(path: Path) -> bool:  # by another run, since the check above
        return path.exists() and (path not in seen or path.stat().st_mtime_ns != seen[path])

    written, held = [], 0
    for dataset in names:
        missing = {}
        for e in rows:
            if dataset not in protocol.track_datasets(e.track):
                continue
            for k in range(len(protocol.datasets[dataset]["splits"][e.track])):
                path = places[(e.key, dataset, k)]
                if path.exists() and path not in invalid:
                    continue
                if path in invalid:
                    echo(f"{path}: invalid ({invalid[path]}); its fold runs again")
                if dataset in e.na:  # declared: written as such, imputed as a failure on the page
                    with claimed(path) as mine:
                        if mine and not written_meanwhile(path):
                            written.append(write_run(results, _na_record(protocol, e, dataset, k)))
                else:
                    missing[(e.key, k)] = e
        if not missing:
            continue
        data, splits = checked_data(protocol, dataset, data_home)
        done: dict = {}
        for (key, fold), e in missing.items():
            path = places[(key, dataset, fold)]
            with claimed(path) as mine:
                if not mine:
                    held += 1
                    echo(f"{e.kind}:{e.name} on {dataset} fold {fold}: held by another run, left to it")
                    continue
                if written_meanwhile(path):
                    continue
                record = fold_record(protocol, e, dataset, fold, registry=registry, data=data,
                                     splits=splits[e.track])
                written.append(write_run(results, record))
            done.setdefault(key, (e, []))[1].append(record)
            shown = (" ".join(f"{m}={v:.4f}" for m, v in record.scores.items()) if record.ok
                     else f"{record.status}: {record.error}")
            echo(f"{e.kind}:{e.name} on {dataset} fold {fold}: {shown} ({record.seconds('wall_s'):.1f} s)")
        if tracking_uri:
            for e, records in done.values():
                _browse(tracking_uri, protocol, e, dataset, records)
    if held:
        echo(f"{held} fold(s) held by another run into {results} were left to it")
    return written


def _browse(tracking_uri: str, protocol: Protocol, entry: Entry, dataset: str, records: list) -> None:
    """The folds of a cell that just ran as one MLflow run of the experiment
    ``leaderboard-<id>-<version>`` (params: the component, its key, the data set and the
    protocol's hash; per fold its scores and fit time; the run files as artifacts). The files stay
    the source of truth: the page never reads MLflow."""
    import json

    from plcore.tracking.mlflow_run import start_run

    tcfg = {"enabled": True, "tracking_uri": tracking_uri,
            "experiment_name": f"leaderboard-{protocol.data['id']}-{protocol.data['version']}"}
    params = {"component": f"{entry.kind}:{entry.name}", "key": entry.key, "dataset": dataset,
              "protocol": protocol.key, "protocol_hash": protocol.hash, "pipeline": " + ".join(entry.pipeline)}
    tags = {"plcore.leaderboard": protocol.key, "plcore.leaderboard.group": entry.group}
    with start_run(tcfg, params=params, tags=tags, config_yaml=json.dumps(params, indent=1),
                   run_name=f"{entry.display_name} · {dataset} · {protocol.key}", step_name="fold") as run:
        for rec in sorted(records, key=lambda r: r.fold.index):
            fit = rec.seconds("fit_s")
            run.log_step({"step": rec.fold.index, **(rec.scores or {}),
                          "fit_time": float("nan") if fit is None else fit, "ok": float(rec.ok)})
            run.log_text(json.dumps(rec.to_dict(), indent=1, sort_keys=True), f"leaderboard/fold-{rec.fold.index}.json")


def _fold_path(results, protocol: Protocol, entry: Entry, dataset: str, fold: int) -> Path:
    """Where the run file of ``entry``'s fold goes (:func:`~plcore.leaderboard.runfile.fold_path`)."""
    return fold_path(results, protocol.data["id"], protocol.data["version"], entry.track, entry.kind, entry.key,
                     dataset, fold)
