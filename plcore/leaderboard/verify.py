"""``leaderboard verify``: are the stored results what they claim (issue 56, item 4; issue 62,
item 5; design note 2.10)?

Two checks. Every file is checked and every stored score recomputed from its file's predictions
(:func:`collect`, never from the scan cache; a file whose score disagrees is refused). Then the
chosen folds of each row (``--sample``, ``--all``; failed and timed-out folds too) are run again here with the installed component, under the thread counts its file
records (BLAS and OpenMP through threadpoolctl, PyTorch's), and its predictions compared with the
stored ones. Three verdicts (:func:`verdict`):

- **the same predictions**: the same digest;
- **numerically equivalent**: at least :data:`ALIKE` (97%) of the test rows predicted alike and the
  score within one binomial standard error ``sqrt(p (1 - p) / n)`` of the stored one (``p`` the
  stored score, ``n`` the test rows; at least ``1 / n``): what another BLAS build, CPU or thread
  count does to a fit that breaks near-ties the other way;
- **differs**: anything else, or a fold that fails here. Only this fails ``verify`` (exit 1).

A claim of failure is re-run too (issue 71, item 2): a fold a file records as ``failed`` or
``timeout`` is the same where it fails here with the same status and error, and differs where it
runs ok here (a forged failure would drop a row down the ranking) or fails otherwise. The runner
sets no time limit (no protocol declares one), so a claimed timeout is re-run to its end. A fold
whose predictions agree but whose selection does not (``selection.method``, or a
``selection.chosen`` value other than the re-run's own choice) differs, naming each parameter with
both values. A fold whose re-run raises (whatever its file holds) differs, in one line naming the
file, and the next fold is checked.

A fold that differs where its file records other arithmetic than this machine's (another OpenBLAS
kernel, another CPU model or PyTorch CPU capability, or a file that records none of them) is
reported apart, as differing *on this machine's arithmetic*: a training run that is chaotic in its
last bits (a deep learner on a hard fold) is not reproducible across CPUs (PyTorch's notes on
reproducibility say so), and nothing here can tell such a fold from a forged one. It fails
``verify`` too, unless ``allow_other_cpu``; the line names what differs. OpenBLAS's kernel is
chosen when it loads: where the files record ``OPENBLAS_CORETYPE`` and this process runs another,
``verify`` says so once, so that a user sets it and compares to the bit.

Which folds are re-run (issue 63, item 3; issue 71, item 2), among those that claim ``ok``,
``failed`` or ``timeout``: by default the first ok fold and the first failed or timed-out fold of
each data set of each chosen row; ``all_folds`` every one; ``sample=N`` N folds a row drawn at
random (``seed``, 0 or more) from them. A row whose installed revision or spec differs from the
files' cannot be re-run (it is named as stale), nor one that is not installed: each is a failure
unless ``allow_missing``, and so is a check that re-ran nothing.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from plcore.leaderboard.jobs import entries
from plcore.leaderboard.page import collect
from plcore.leaderboard.protocol import Protocol, checked_data
from plcore.exceptions import ConfigError, one_line
from plcore.leaderboard.runfile import RunFile, run_path
from plcore.leaderboard.runner import fold_record, numerics

__all__ = ["ALIKE", "Verification", "verdict", "verify", "recorded_threads", "other_arithmetic"]

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
    #: folds that differ where their file records another CPU's or BLAS kernel's arithmetic
    elsewhere: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    allow_missing: bool = False
    allow_other_cpu: bool = False
    #: the files that failed their checks (:mod:`plcore.leaderboard.checks`), one line each
    invalid: list = field(default_factory=list)

    @property
    def checked(self) -> int:
        return len(self.same) + len(self.equivalent) + len(self.differ) + len(self.elsewhere)

    @property
    def ok(self) -> bool:
        """No file is invalid, no fold differs, something was re-run, and no row was left out and no
        fold differs on other arithmetic (unless allowed)."""
        return (not self.invalid and not self.differ and self.checked > 0
                and (self.allow_missing or not self.skipped) and (self.allow_other_cpu or not self.elsewhere))


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


def recorded_threads(record) -> dict:
    """``{"blas": n, "openmp": n, "torch": n}``: the thread counts a run file records (those it has):
    ``record`` a :class:`~plcore.leaderboard.runfile.RunFile` or its ``numerics`` as a mapping."""
    found = (record.numerics if isinstance(record, RunFile) else record.get("numerics")) or {}
    out = {}
    for lib in found.get("libraries", []):  # threadpoolctl's internal API names
        if lib.get("threads"):
            out.setdefault("openmp" if lib.get("api") == "openmp" else "blas", int(lib["threads"]))
    torch = found.get("torch")
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
    """The libraries whose build differs between a file's ``numerics`` and this machine's, said in a few words."""
    def builds(found):
        out = {f"{lib.get('api')}": str(lib.get("version")) for lib in found.get("libraries", [])}
        if found.get("torch"):
            out["torch"] = found["torch"]["version"]
        return out
    a, b = builds(stored or {}), builds(here)
    changed = [f"{k} {a[k]} stored, {b[k]} here" for k in sorted(a) if k in b and a[k] != b[k]]
    return f"; {', '.join(changed)}" if changed else ""


def other_arithmetic(stored: dict | None, here: dict) -> str:
    """What a file's ``numerics`` records of the arithmetic (OpenBLAS's kernels, the CPU's model,
    PyTorch's CPU capability) that differs from ``here``'s, in a few words; ``""`` where it is the
    same. Not recorded counts as different (files before the CPU was recorded)."""
    stored = stored if isinstance(stored, dict) else {}

    def kernels(found):
        return sorted({str(lib.get("architecture")) for lib in found.get("libraries") or []
                       if isinstance(lib, dict) and lib.get("api") == "openblas"})
    said = []
    if kernels(stored) != kernels(here):
        said.append(f"OpenBLAS {'/'.join(kernels(stored)) or 'none'} stored, {'/'.join(kernels(here)) or 'none'} here")
    if stored.get("cpu") != here.get("cpu"):
        said.append(f"CPU {stored.get('cpu') or 'not recorded'} stored, {here.get('cpu') or 'unknown'} here")
    torch_stored, torch_here = stored.get("torch"), here.get("torch")
    if isinstance(torch_stored, dict) and torch_here and torch_stored.get("capability") != torch_here.get("capability"):
        said.append(f"PyTorch's CPU capability {torch_stored.get('capability') or 'not recorded'} stored, "
                    f"{torch_here.get('capability')} here")
    return "; ".join(said)


def _coretype_hint(stored: dict | None) -> str:
    """One line where a file records an ``OPENBLAS_CORETYPE`` this process does not run under."""
    import os

    env = (stored or {}).get("environment") if isinstance(stored, dict) else None
    want = env.get("OPENBLAS_CORETYPE") if isinstance(env, dict) else None
    if not want or os.environ.get("OPENBLAS_CORETYPE") == want:
        return ""
    return (f"the files were made under OPENBLAS_CORETYPE={want}; this process runs "
            f"{'under ' + os.environ['OPENBLAS_CORETYPE'] if 'OPENBLAS_CORETYPE' in os.environ else 'without it'}: "
            f"set OPENBLAS_CORETYPE={want} to compare OpenBLAS's arithmetic to the bit")


#: the claims a re-run checks: a fold that scored, failed or ran out of time (``na`` is declared by the row)
RERUN = ("ok", "failed", "timeout")


def _chosen_folds(protocol: Protocol, row, *, all_folds: bool, sample: int | None, seed: int) -> list:
    """``(data set, fold)`` of ``row`` to re-run, among its folds that claim ``ok``, ``failed`` or
    ``timeout``: every one of them; ``sample`` of them drawn with ``seed`` and the row's key; or by
    default the first ok fold and the first failed or timed-out fold of each data set (in the
    protocol's order). A claimed failure is checked as a score is: it may hide a row's best folds."""
    folds = [(d, k) for d in protocol.track_datasets(row.track)
             for k in sorted(row.folds.get(d, {})) if row.folds[d][k].status in RERUN]
    if all_folds:
        return folds
    if sample is not None:  # each row its own draw, the same whichever other rows are verified
        import zlib

        rng = np.random.default_rng([seed, zlib.crc32(row.key.encode())])
        keep = set(rng.choice(len(folds), size=min(sample, len(folds)), replace=False).tolist()) if folds else set()
        return [f for i, f in enumerate(folds) if i in keep]
    first = {}
    for d, k in folds:
        first.setdefault((d, row.folds[d][k].ok), k)
    return [(d, k) for (d, _), k in first.items()]


def _selection_differs(stored: RunFile, again: RunFile) -> str:
    """What the stored selection claims that the re-run did not choose (its method, then each
    parameter with both values), in a few words; ``""`` where they agree."""
    import json

    def plain(rec):  # as a file holds it (a re-run's values through the JSON round trip)
        selection = json.loads(json.dumps(rec.selection)) if isinstance(rec.selection, dict) else {}
        return selection.get("method"), selection.get("chosen") or {}

    (m_a, a), (m_b, b) = plain(stored), plain(again)
    said = [] if m_a == m_b else [f"selection.method {m_a!r} stored, {m_b!r} here"]
    def shown(chosen, k):
        return repr(chosen[k]) if k in chosen else "none"

    said += [f"selection.chosen.{k} {shown(a, k)} stored, {shown(b, k)} here"
             for k in sorted(set(a) | set(b)) if shown(a, k) != shown(b, k)]
    return "; ".join(said)


def _tuning_differs(stored: RunFile, again: RunFile) -> tuple[str, str]:
    """A budget protocol's fold (``tuning``): the verdict on the default's test predictions
    (:func:`verdict`) and what else differs, in a few words (the chosen configuration and
    checkpoint, a configuration's checkpoint steps, the largest difference of a checkpoint value
    beyond rounding, the fit rows' disambiguation by either row); ``("same", "")`` where there is
    no tuning block on either side."""
    from plcore.leaderboard.runfile import TUNING_COLUMNS, unpack_predictions
    from plcore.run.protocols import DIGITS

    a, b = stored.tuning, again.tuning
    if a is None and b is None:
        return "same", ""
    if a is None or b is None:
        return "differs", "a tuning block on one side only"
    metric = next(iter(again.scores))
    found = verdict(unpack_predictions(a["default"]["predictions"]), unpack_predictions(b["default"]["predictions"]),
                    stored.scores.get(f"default_{metric}", 0.0), again.scores.get(f"default_{metric}", 0.0))
    said = []
    if a["chosen"] != b["chosen"]:
        said.append(f"tuning.chosen {a['chosen']} stored, {b['chosen']} here")
    if len(a["configurations"]) != len(b["configurations"]):
        return "differs", "; ".join(said + [f"{len(a['configurations'])} configurations stored, "
                                            f"{len(b['configurations'])} here"])
    worst = (0.0, None)
    for j, (x, y) in enumerate(zip(a["configurations"], b["configurations"])):
        if x["steps"] != y["steps"]:
            said.append(f"configuration {j}'s checkpoint steps differ")
            continue
        for col in TUNING_COLUMNS:
            gap = float(np.max(np.abs(np.subtract(x[col], y[col])))) if x[col] else 0.0
            if gap > worst[0]:
                worst = (gap, f"configuration {j}'s {col}")
    if worst[0] > 10.0 ** -DIGITS:
        said.append(f"{worst[1]} differs by up to {worst[0]:.4f}")
    for row in ("default", "tuned"):  # the page's disambiguation column is recomputed from these arrays
        x, y = (unpack_predictions(t["disambiguation"][row]) for t in (a, b))
        if x.shape != y.shape or not np.array_equal(x, y):
            said.append(f"tuning.disambiguation.{row} differs on {int(np.sum(x != y)) if x.shape == y.shape else 'all'}"
                        " fit row(s)")
    return found, "; ".join(said)


def _check_fold(protocol: Protocol, entry, dataset: str, fold: int, stored: RunFile, *, registry, data, splits,
                allow_other_cpu: bool) -> tuple:
    """Re-run one fold under the thread counts its file records and compare it with the file:
    ``(verdict, line)``, the verdict ``same``, ``equivalent``, ``differs`` or ``elsewhere`` (differs
    where the file records other arithmetic). A claimed failure or timeout is the same where the
    fold fails here with the same status and error, and differs otherwise; a selection (method or
    chosen values) other than the re-run's differs, naming each parameter (on other arithmetic only
    where the predictions differ too)."""
    with _threads(recorded_threads(stored)):
        again = fold_record(protocol, entry, dataset, fold, registry=registry, data=data, splits=splits)
    if not stored.ok or not again.ok:
        if (stored.status, stored.error) == (again.status, again.error):
            return "same", f"the same ({again.status}: {again.error})"
        claimed = "ok" if stored.ok else f"{stored.status} ({stored.error})"
        return "differs", f"DIFFERS, claimed {claimed}, {again.status} here" + (f": {again.error}" if again.error
                                                                                 else "")
    a, b = stored.predicted(), again.predicted()
    metric = next(iter(again.scores))
    found = verdict(a, b, stored.scores[metric], again.scores[metric])
    default, tuned = _tuning_differs(stored, again)
    found = max((found, default), key=("same", "equivalent", "differs").index)
    if found == "equivalent":  # other arithmetic moves every checkpoint a little: the choice still counts
        tuned = "; ".join(x for x in tuned.split("; ") if x.startswith("tuning.chosen") or "configurations" in x
                          or "checkpoint steps" in x)  # steps follow the fit rows and the batch, on any machine
    selection = _selection_differs(stored, again)
    chose = "; ".join(x for x in (selection, tuned) if x)
    choice_moved = bool(selection) or "tuning.chosen" in tuned
    if found == "same" and not chose:
        return "same", "the same predictions" + (" (tuned and default) and checkpoints" if stored.tuning else "")
    alike = 100 * float(np.mean(a == b)) if a.shape == b.shape else 0.0
    scores = ", ".join(f"{m} {stored.scores[m]:.4f} stored, {v:.4f} here" for m, v in again.scores.items())
    here = numerics()
    changed = _libraries_changed(stored.numerics, here)
    arithmetic = other_arithmetic(stored.numerics, here)
    what = f"{alike:.1f}% of the rows alike ({scores}{changed}" + (f"; {chose}" if chose else "")
    if found == "equivalent" and not chose:
        return "equivalent", f"numerically equivalent, {what})"
    # the same predictions from another choice: no CPU explains it; from the same choice with a checkpoint
    # of another configuration moved (a chaotic curve that was not chosen), other arithmetic may
    if arithmetic and (found != "same" or not choice_moved):
        return "elsewhere", (f"DIFFERS on this machine's arithmetic, {what}; {arithmetic})"
                             + ("" if allow_other_cpu else ": a failure without --allow-other-cpu"))
    return "differs", f"DIFFERS, {what})"


def verify(protocol: Protocol, results, *, registry, only=None, data_home=None, echo=print, all_folds: bool = False,
           sample: int | None = None, seed: int = 0, allow_missing: bool = False,
           allow_other_cpu: bool = False, n_rows: int | None = None) -> Verification:
    """Recompute every stored score of ``protocol`` under ``results``; re-run folds of the rows
    named by ``only`` (``KIND:NAME``; default every row; a name with no file is one line), or of
    ``n_rows`` of them drawn with ``seed``, and compare predictions (which folds: :func:`_chosen_folds`)."""
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:  # before the scan (numpy says so late)
        raise ConfigError(f"--seed must be a number of 0 or more, got {seed!r}")
    results = Path(results)
    board = collect(protocol, results, data_home=data_home, registry=registry, use_cache=False)  # every file again
    out = Verification(n_files=board.n_files, allow_missing=allow_missing, allow_other_cpu=allow_other_cpu,
                       invalid=list(board.invalid))
    hinted = False
    if board.invalid:
        echo(f"{board.n_files} run file(s), {len(board.invalid)} INVALID (a failure):")
        for path, reason in board.invalid:
            echo(f"  {path}: {reason}")
    else:
        echo(f"{board.n_files} run file(s): each passes its checks, every stored score agrees with its predictions")
    installed = {f"{e.kind}:{e.name}": e for e in entries(protocol, registry)}
    have = {f"{r.kind}:{r.name}" for r in board.rows}
    unknown = [name for name in only or () if name not in have]
    if unknown:
        raise ConfigError(f"--only {', '.join(unknown)}: no run file of {protocol.key} under {results}; its rows: "
                          f"{', '.join(sorted(have)) or 'none'}")
    rows = [r for r in board.rows  # a component once (a budget protocol's default row shares its files)
            if r.variant != "default" and (not only or f"{r.kind}:{r.name}" in only)]
    if n_rows is not None and (isinstance(n_rows, bool) or not isinstance(n_rows, int) or n_rows < 1):
        raise ConfigError(f"--rows must be a positive number of rows, got {n_rows!r}")
    if n_rows is not None:  # drawn among the rows this checkout can re-run: a spot check never spent on others
        rows = [r for r in rows if getattr(installed.get(f"{r.kind}:{r.name}"), "key", None) == r.base_key]
    if n_rows is not None and n_rows < len(rows):
        rows = sorted(rows, key=lambda r: (r.track, r.kind, r.name))
        keep = set(np.random.default_rng([seed, 1]).choice(len(rows), size=n_rows, replace=False).tolist())
        rows = [r for i, r in enumerate(rows) if i in keep]
        echo(f"re-running {n_rows} of the rows, drawn with seed {seed}: "
             + ", ".join(f"{r.kind}:{r.name}" for r in rows))
    data = {}
    for row in rows:
        name = f"{row.kind}:{row.name}"
        entry = installed.get(name)
        if entry is None or entry.key != row.base_key:
            why = "not installed here" if entry is None else f"installed as {entry.key}, the files are {row.base_key}"
            out.skipped.append((name, why))
            echo(f"{name}: not re-run ({why})" + ("" if allow_missing else ": a failure without --allow-missing"))
            continue
        for dataset, fold in _chosen_folds(protocol, row, all_folds=all_folds, sample=sample, seed=seed):
            if dataset not in data:
                data[dataset] = checked_data(protocol, dataset, data_home)
            loaded, splits = data[dataset]
            stored = row.folds[dataset][fold]
            hint = "" if hinted else _coretype_hint(stored.numerics)
            if hint:
                echo(hint)
                hinted = True
            where = (name, dataset, fold)
            try:
                found, line = _check_fold(protocol, entry, dataset, fold, stored, registry=registry, data=loaded,
                                          splits=splits[row.track], allow_other_cpu=allow_other_cpu)
            except Exception as err:  # noqa: BLE001 - one fold's fault is that fold's, the next is still checked
                path = run_path(results, stored).relative_to(results).as_posix()
                found, line = "differs", f"DIFFERS, the re-run of {path} raised {one_line(err)[:300]}"
            getattr(out, {"differs": "differ"}.get(found, found)).append(where)
            echo(f"{name} on {dataset} fold {fold}: {line}")
    echo(f"verified: {len(out.same)} fold(s) the same, {len(out.equivalent)} numerically equivalent, "
         f"{len(out.differ)} differ, "
         + (f"{len(out.elsewhere)} differ on other arithmetic, " if out.elsewhere else "")
         + f"{len(out.skipped)} row(s) not re-run, {len(out.invalid)} invalid file(s)")
    if not out.checked:
        echo("nothing was re-run: verify fails")
    return out
