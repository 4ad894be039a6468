"""``leaderboard run``: the missing folds of the chosen rows, each written as its run file
(issue 56, item 4; design note 2.4 and 2.5).

A fold runs as the k-fold protocol runs one (:func:`plcore.run.protocols._splits._evaluate_split`):
the pipeline (the protocol's preprocessing, the reducer, the learner) fitted on the training rows
with the protocol's nested label-free selection, then the test rows predicted. The data are first
checked against the protocol (fingerprint, candidate sets, fold digests: one line where they
differ). A fold whose file exists is not run again, whatever its status: a killed run resumes
with only the missing folds. A fold that raises is written with ``status: failed`` and its error
in one line, so that a crash is seen, not retried blindly. The clustering track is not run yet.
"""

from __future__ import annotations

import platform
import re
import time
import warnings
from pathlib import Path

import numpy as np

from plcore.exceptions import ConfigError
from plcore.leaderboard.jobs import Entry
from plcore.leaderboard.protocol import Protocol, _load, check_dataset
from plcore.leaderboard.runfile import SCHEMA, pack_predictions, run_path, write_run

__all__ = ["run_missing", "fold_record"]

_PATH = re.compile(r"(?:[A-Za-z]:\\|/)(?:[^\s'\"/\\:]+[/\\])+")


def _one_line(err: BaseException) -> str:
    """``Type: message`` on one line, with directories of this machine left out of any path."""
    text = " ".join(f"{type(err).__name__}: {err}".split())
    return _PATH.sub("", text)[:500]


def _setup(protocol: Protocol, entry: Entry, registry):
    """The run's components: the entry's estimator (a reducer with the reference learner), a deep
    learner with the protocol's epochs; and the selection settings for them."""
    from plcore.run.protocols import Setup
    from plcore.run.selection import check_select

    spec = protocol.track(entry.track)
    deep = spec.get("deep", {})
    if entry.kind == "reducer":
        setup = Setup(reducer=registry.create("reducer", entry.name),
                      learner=registry.create("learner", entry.pipeline[1]))
    else:
        setup = Setup(learner=registry.create(entry.kind, entry.name))
    select = dict(spec["select"])
    if "n_epochs" in setup.learner.get_params() and deep:
        setup.learner.set_params(n_epochs=deep["n_epochs"])
        if deep.get("space"):
            select["space"] = {f"learner.{k}": list(v) for k, v in deep["space"].items()}
    return setup, check_select(select, setup, registry)


def _versions() -> dict:
    from importlib import metadata

    out = {"python": platform.python_version()}
    for dist in ("plcore", "numpy", "scikit-learn"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def fold_record(protocol: Protocol, entry: Entry, dataset: str, fold: int, *, registry, data, splits) -> dict:
    """Run one fold and return its run file's record (``status: failed`` with its error where it
    raised; the warnings it gave, on one line each, in ``warnings``)."""
    spec = protocol.track(entry.track)
    ds, drawn = data
    train, test = splits[fold]
    entry_data = protocol.datasets[dataset]
    record = {"schema": SCHEMA, "protocol": {"id": protocol.data["id"], "version": protocol.data["version"],
                                             "hash": protocol.hash},
              "track": entry.track,
              "component": {"kind": entry.kind, "name": entry.name, "display_name": entry.display_name,
                            "revision": entry.revision, "spec_hash": entry.spec_hash,
                            "distribution": entry.distribution, "version": entry.version,
                            "pipeline": list(entry.pipeline)},
              "dataset": {"name": dataset, "fingerprint": entry_data["fingerprint"],
                          "candidates_digest": entry_data["candidates_digest"]},
              "fold": {"index": fold, "n_splits": spec["n_splits"],
                       "test_digest": entry_data["splits"][entry.track][fold], "seed": spec["seed"]},
              "software": _versions(), "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:  # kept in the file, not printed per fold
        warnings.simplefilter("always")
        _run_into(record, protocol, entry, registry, ds, drawn, train, test, fold)
    said = sorted({_PATH.sub("", " ".join(str(w.message).split()))[:300] for w in caught})
    if said:
        record["warnings"] = said[:5]
    record["timing"] = {**record.get("timing", {}), "wall_s": time.perf_counter() - t0}
    record["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return record


def _run_into(record, protocol, entry, registry, ds, drawn, train, test, fold) -> None:
    """Fit and predict one fold (:func:`fold_record`), its outcome put into ``record``."""
    from plcore.metrics import accuracy
    from plcore.run.protocols._shared import _feeds_truth, _singletons
    from plcore.run.protocols._splits import _evaluate_split

    spec = protocol.track(entry.track)
    try:
        setup, select = _setup(protocol, entry, registry)
        feed = _feeds_truth(setup.learner, "auto", drawn)
        predictions: list = []
        step = _evaluate_split(setup, drawn.X, drawn.S, drawn.y_true, train, test, spec["preprocessing"], fold,
                               predictions, classes=drawn.classes,
                               S_learner=_singletons(drawn.y_true, drawn.n_classes) if feed else None,
                               select=select, random_state=spec["seed"])
        pred = np.asarray([row["y_pred"] for row in predictions])
        record.update(status="ok", error=None, predictions=pack_predictions(pred, drawn.n_classes),
                      scores={"accuracy": accuracy(drawn.y_true[test], pred)},
                      selection={"method": select["method"],
                                 "chosen": {k[len("selected."):]: (v if isinstance(v, (int, float, str)) else repr(v))
                                            for k, v in step.items() if k.startswith("selected.")}},
                      timing={"fit_s": step["fit_time"], "predict_s": step["predict_time"]})
    except (KeyboardInterrupt, SystemExit):
        raise
    except Exception as err:  # noqa: BLE001 - a method that fails is a result of the leaderboard
        record.update(status="failed", error=_one_line(err))


def run_missing(protocol: Protocol, rows: list[Entry], results, *, registry, datasets=None, data_home=None,
                echo=print) -> list[Path]:
    """Run every fold of ``rows`` x ``datasets`` (default: the protocol's) that has no run file
    under ``results`` yet, writing each as it ends; returns the files written."""
    from sklearn.model_selection import KFold

    names = list(datasets or protocol.datasets)
    unknown = [d for d in names if d not in protocol.datasets]
    if unknown:
        raise ConfigError(f"protocol {protocol.key} has no data set(s) {', '.join(unknown)}; its data sets: "
                          f"{', '.join(protocol.datasets)}")
    written = []
    for dataset in names:
        todo = [e for e in rows if e.track == "classification" and dataset not in e.na]
        spec = protocol.track("classification")
        folds = range(spec["n_splits"])
        missing = {(e.key, k): e for e in todo for k in folds
                   if not run_path(results, _key_record(protocol, e, dataset, k)).exists()}
        if not missing:
            continue
        entry = check_dataset(protocol, dataset, data_home=data_home)
        data = _load(dataset, entry, data_home)
        splits = list(KFold(n_splits=spec["n_splits"], shuffle=True, random_state=spec["seed"]).split(data[1].X))
        for (key, fold), e in missing.items():
            record = fold_record(protocol, e, dataset, fold, registry=registry, data=data, splits=splits)
            written.append(write_run(results, record))
            shown = (f"accuracy={record['scores']['accuracy']:.4f}" if record["status"] == "ok"
                     else f"{record['status']}: {record['error']}")
            echo(f"{e.kind}:{e.name} on {dataset} fold {fold}: {shown} ({record['timing']['wall_s']:.1f} s)")
    for e in rows:
        if e.track != "classification":
            echo(f"{e.kind}:{e.name}: the {e.track} track is not run by `leaderboard run` yet")
    return written


def _key_record(protocol: Protocol, entry: Entry, dataset: str, fold: int) -> dict:
    """The fields of a run file that place it (:func:`~plcore.leaderboard.runfile.run_path`)."""
    return {"protocol": {"id": protocol.data["id"], "version": protocol.data["version"]}, "track": entry.track,
            "component": {"kind": entry.kind, "name": entry.name, "revision": entry.revision,
                          "spec_hash": entry.spec_hash},
            "dataset": {"name": dataset}, "fold": {"index": fold}}
