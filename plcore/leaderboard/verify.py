"""``leaderboard verify``: are the stored results what they claim (issue 56, item 4; design note 2.10)?

Two checks. Every stored score is recomputed from its file's predictions (:func:`collect`, which
refuses a file whose score disagrees). Then one fold per data set of each chosen row, the first
that ran ok, is run again here with the installed component, and its predictions compared with the
stored ones: the same digest, or the share of test rows predicted alike and the two scores. A row
whose installed revision or spec differs from the files' cannot be re-run (it is reported as
stale), nor one that is not installed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from plcore.leaderboard.jobs import entries
from plcore.leaderboard.page import collect
from plcore.leaderboard.protocol import Protocol, checked_data
from plcore.leaderboard.runfile import unpack_predictions
from plcore.leaderboard.runner import fold_record

__all__ = ["Verification", "verify"]


@dataclass
class Verification:
    """What :func:`verify` found: the files whose scores were recomputed, and per re-run fold
    ``(row, data set, fold)`` whether its predictions are the stored ones; rows it could not re-run."""

    n_files: int = 0
    same: list = field(default_factory=list)
    differ: list = field(default_factory=list)
    skipped: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.differ


def verify(protocol: Protocol, results, *, registry, only=None, data_home=None, echo=print) -> Verification:
    """Recompute every stored score of ``protocol`` under ``results``; re-run one fold per data set
    of the rows named by ``only`` (``KIND:NAME``; default every row) and compare predictions."""
    board = collect(protocol, results, data_home=data_home)
    out = Verification(n_files=board.n_files)
    echo(f"{board.n_files} run file(s): every stored score agrees with its predictions")
    installed = {f"{e.kind}:{e.name}": e for e in entries(protocol, registry)}
    rows = [r for r in board.rows if not only or f"{r.kind}:{r.name}" in only]
    data = {}
    for row in rows:
        name = f"{row.kind}:{row.name}"
        entry = installed.get(name)
        if entry is None or entry.key != row.key:
            why = "not installed here" if entry is None else f"installed as {entry.key}, the files are {row.key}"
            out.skipped.append((name, why))
            echo(f"{name}: not re-run ({why})")
            continue
        for dataset in protocol.track_datasets(row.track):
            folds = sorted(k for k, rec in row.folds.get(dataset, {}).items() if rec["status"] == "ok")
            if not folds:
                continue
            if dataset not in data:
                data[dataset] = checked_data(protocol, dataset, data_home)
            loaded, splits = data[dataset]
            stored = row.folds[dataset][folds[0]]
            again = fold_record(protocol, entry, dataset, folds[0], registry=registry, data=loaded,
                                splits=splits[row.track])
            where = (name, dataset, folds[0])
            if again["status"] == "ok" and again["predictions"]["sha256"] == stored["predictions"]["sha256"]:
                out.same.append(where)
                echo(f"{name} on {dataset} fold {folds[0]}: the same predictions")
                continue
            out.differ.append(where)
            if again["status"] != "ok":
                echo(f"{name} on {dataset} fold {folds[0]}: DIFFERS, {again['status']} here: {again['error']}")
                continue
            alike = np.mean(unpack_predictions(again["predictions"]) == unpack_predictions(stored["predictions"]))
            scores = ", ".join(f"{m} {stored['scores'][m]:.4f} stored, {v:.4f} here"
                               for m, v in again["scores"].items())
            echo(f"{name} on {dataset} fold {folds[0]}: DIFFERS, {100 * alike:.1f}% of the rows alike ({scores})")
    echo(f"verified: {len(out.same)} fold(s) the same, {len(out.differ)} differ, {len(out.skipped)} row(s) not re-run")
    return out
