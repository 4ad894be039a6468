"""``leaderboard verify``: are the stored results what they claim (issue 56, item 4; issue 62,
item 5; design note 2.10)?

Two checks. Every stored score is recomputed from its file's predictions (:func:`collect`, which
refuses a file whose score disagrees). Then one fold per data set of each chosen row, the first
that ran ok, is run again here with the installed component, under the thread counts its file
records (BLAS and OpenMP through threadpoolctl, PyTorch's), and its predictions compared with the
stored ones. Three verdicts (:func:`verdict`):

- **the same predictions**: the same digest;
- **numerically equivalent**: at least :data:`ALIKE` (97%) of the test rows predicted alike and the
  score within one binomial standard error ``sqrt(p (1 - p) / n)`` of the stored one (``p`` the
  stored score, ``n`` the test rows; at least ``1 / n``): what another BLAS build, CPU or thread
  count does to a fit that breaks near-ties the other way;
- **differs**: anything else, or a fold that fails here. Only this fails ``verify`` (exit 1).

A row whose installed revision or spec differs from the files' cannot be re-run (it is reported as
stale), nor one that is not installed.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field

import numpy as np

from plcore.leaderboard.jobs import entries
from plcore.leaderboard.page import collect
from plcore.leaderboard.protocol import Protocol, checked_data
from plcore.leaderboard.runfile import unpack_predictions
from plcore.leaderboard.runner import fold_record, numerics

__all__ = ["ALIKE", "Verification", "verdict", "verify", "recorded_threads"]

#: the share of test rows that must be predicted alike for "numerically equivalent"
ALIKE = 0.97


@dataclass
class Verification:
    """What :func:`verify` found: the files whose scores were recomputed, and per re-run fold
    ``(row, data set, fold)`` whether its predictions are the stored ones, numerically equivalent
    to them, or differ; rows it could not re-run."""

    n_files: int = 0
    same: list = field(default_factory=list)
    equivalent: list = field(default_factory=list)
    differ: list = field(default_factory=list)
    skipped: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.differ


def verdict(stored_pred, here_pred, stored_score: float, here_score: float) -> str:
    """``"same"``, ``"equivalent"`` or ``"differs"`` for two predictions of one fold's test rows
    and their scores (the rule in the module's docstring)."""
    stored_pred, here_pred = np.asarray(stored_pred), np.asarray(here_pred)
    if stored_pred.shape == here_pred.shape and np.array_equal(stored_pred, here_pred):
        return "same"
    n = stored_pred.size
    if n == 0 or stored_pred.shape != here_pred.shape:
        return "differs"
    alike = float(np.mean(stored_pred == here_pred))
    se = max(math.sqrt(max(stored_score * (1.0 - stored_score), 0.0) / n), 1.0 / n)
    return "equivalent" if alike >= ALIKE and abs(here_score - stored_score) <= se + 1e-12 else "differs"


def recorded_threads(record: dict) -> dict:
    """``{"blas": n, "openmp": n, "torch": n}``: the thread counts a run file records (those it has)."""
    out = {}
    for lib in record.get("numerics", {}).get("libraries", []):
        if lib.get("api") in ("blas", "openmp") and lib.get("threads"):
            out.setdefault(lib["api"], int(lib["threads"]))
        elif lib.get("threads") and lib.get("api") in ("openblas", "mkl", "blis", "flexiblas"):
            out.setdefault("blas", int(lib["threads"]))
    torch = record.get("numerics", {}).get("torch")
    if torch and torch.get("threads"):
        out["torch"] = int(torch["threads"])
    return out


@contextlib.contextmanager
def _threads(counts: dict):
    """Run under the recorded thread counts (threadpoolctl for BLAS and OpenMP, PyTorch's own)."""
    import sys

    from threadpoolctl import threadpool_limits

    torch = sys.modules.get("torch") if "torch" in counts else None
    if "torch" in counts and torch is None:
        import torch
    saved = torch.get_num_threads() if torch is not None else None
    with contextlib.ExitStack() as stack:
        for api in ("blas", "openmp"):
            if api in counts:
                stack.enter_context(threadpool_limits(limits=counts[api], user_api=api))
        if torch is not None:
            torch.set_num_threads(counts["torch"])
        try:
            yield
        finally:
            if torch is not None:
                torch.set_num_threads(saved)


def _libraries_changed(stored: dict, here: dict) -> str:
    """The libraries whose build differs between a file and this machine, said in a few words."""
    def builds(rec):
        out = {f"{lib.get('api')}": str(lib.get("version")) for lib in rec.get("numerics", {}).get("libraries", [])}
        if rec.get("numerics", {}).get("torch"):
            out["torch"] = rec["numerics"]["torch"]["version"]
        return out
    a, b = builds(stored), builds(here)
    changed = [f"{k} {a[k]} stored, {b[k]} here" for k in sorted(a) if k in b and a[k] != b[k]]
    return f"; {', '.join(changed)}" if changed else ""


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
            with _threads(recorded_threads(stored)):
                again = fold_record(protocol, entry, dataset, folds[0], registry=registry, data=loaded,
                                    splits=splits[row.track])
            where = (name, dataset, folds[0])
            said = f"{name} on {dataset} fold {folds[0]}"
            if again["status"] != "ok":
                out.differ.append(where)
                echo(f"{said}: DIFFERS, {again['status']} here: {again['error']}")
                continue
            a, b = unpack_predictions(stored["predictions"]), unpack_predictions(again["predictions"])
            metric = next(iter(again["scores"]))
            found = verdict(a, b, stored["scores"][metric], again["scores"][metric])
            if found == "same":
                out.same.append(where)
                echo(f"{said}: the same predictions")
                continue
            alike = 100 * float(np.mean(a == b)) if a.shape == b.shape else 0.0
            scores = ", ".join(f"{m} {stored['scores'][m]:.4f} stored, {v:.4f} here" for m, v in again["scores"].items())
            changed = _libraries_changed(stored, {"numerics": numerics()})
            if found == "equivalent":
                out.equivalent.append(where)
                echo(f"{said}: numerically equivalent, {alike:.1f}% of the rows alike ({scores}{changed})")
            else:
                out.differ.append(where)
                echo(f"{said}: DIFFERS, {alike:.1f}% of the rows alike ({scores}{changed})")
    echo(f"verified: {len(out.same)} fold(s) the same, {len(out.equivalent)} numerically equivalent, "
         f"{len(out.differ)} differ, {len(out.skipped)} row(s) not re-run")
    return out
