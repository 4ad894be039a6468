"""The leaderboard's source of truth: one JSON file per fold of a cell (schema
``plcore.leaderboard.run/1``; ``../shared/design/leaderboard.md`` section 2.4).

A file holds the protocol (id, version, hash), the component (kind, name, revision, spec hash,
distribution and version), the data set (name, fingerprint, candidates digest), the fold (index,
count, digest of its test rows, seed), the status (``ok``, ``failed``, ``timeout``, ``na``; a
one-line ``error`` when not ok), the chosen hyperparameters, the test rows' predicted class
indices packed as bytes (so that scores are recomputed, never trusted), timings, the machine's
id and the software versions. It lives at
``<root>/<protocol id>-<version>/<track>/<kind>/<name>@r<revision>-<spec8>/<data set>/fold-<k>.json``
and is written atomically (a killed writer leaves no half file). Every refusal is one
:class:`~plcore.exceptions.DataValidationError` line naming the file.

Checking a file against its protocol, the installed rows and the data, and merging trees, is
:mod:`plcore.leaderboard.checks`.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from plcore.exceptions import DataValidationError

__all__ = ["SCHEMA", "STATUSES", "pack_predictions", "unpack_predictions", "run_key", "row_key", "state_of", "to_run",
           "run_path", "validate_run", "write_run", "read_run", "iter_runs", "claim_path", "claimed"]

SCHEMA = "plcore.leaderboard.run/1"
#: a fold's outcome: scored, raised (its one-line error kept), ran out of time, declared not applicable
STATUSES = ("ok", "failed", "timeout", "na")
#: the fields every run file has, and the fields of its parts
_REQUIRED = {"schema": None, "protocol": ("id", "version", "hash"), "track": None,
             "component": ("kind", "name", "revision", "spec_hash"), "dataset": ("name", "fingerprint"),
             "fold": ("index", "n_splits", "test_digest"), "status": None}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
#: strings that name a place on one machine (a page or a merged tree must hold none)
_MACHINE_PATH = re.compile(r"(^|[\s'\"(=])(/(home|root|tmp|Users|work|var|mnt|opt)/|[A-Za-z]:\\)")


def pack_predictions(pred, n_classes: int) -> dict:
    """The test rows' predicted class indices as ``{"encoding", "data", "sha256"}``: one byte a
    row (``uint8``, two for more than 255 classes), base64, and the digest of the bytes."""
    pred = np.asarray(pred)
    if pred.ndim != 1 or (pred.size and (pred.min() < 0 or pred.max() >= n_classes)):
        raise DataValidationError(f"predictions must be class indices 0 .. {n_classes - 1} of the test rows")
    dtype = np.dtype("u1") if n_classes <= 256 else np.dtype("<u2")
    data = np.ascontiguousarray(pred, dtype=dtype).tobytes()
    return {"encoding": f"uint{8 * dtype.itemsize}-base64", "data": base64.b64encode(data).decode("ascii"),
            "sha256": hashlib.sha256(data).hexdigest()}


def unpack_predictions(packed: dict) -> np.ndarray:
    """The class indices :func:`pack_predictions` packed; a digest that does not match is refused."""
    encodings = {"uint8-base64": np.dtype(np.uint8), "uint16-base64": np.dtype("<u2")}
    try:
        dtype = encodings[packed["encoding"]]
        data = base64.b64decode(packed["data"].encode("ascii"), validate=True)
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise DataValidationError(f"predictions are not packed as {' or '.join(encodings)} ({err})") from None
    if hashlib.sha256(data).hexdigest() != packed.get("sha256"):
        raise DataValidationError("the predictions do not match their sha256")
    return np.frombuffer(data, dtype=dtype).astype(np.int64)


def run_key(record: dict) -> tuple:
    """What identifies a run file (the machine is not part of it): protocol id and version, track,
    component kind, name, revision and spec hash, data set, fold."""
    p, c = record["protocol"], record["component"]
    return (p["id"], int(p["version"]), record["track"], c["kind"], c["name"], int(c["revision"]),
            c["spec_hash"], record["dataset"]["name"], int(record["fold"]["index"]))


def row_key(component: dict) -> str:
    """A leaderboard row's key, ``<name>@r<revision>-<spec8>``, from a run file's ``component``."""
    return f"{component['name']}@r{component['revision']}-{component['spec_hash'].split(':', 1)[-1][:8]}"


def state_of(statuses: list, n: int) -> str:
    """A cell's state from its folds' statuses (``n`` folds): ``invalid`` (a fold's file failed
    its checks: :mod:`plcore.leaderboard.checks`), ``done`` (every fold ok), ``failed`` /
    ``timeout`` / ``na`` (every fold has a final state, one of them this one), ``partial k/n``
    (k folds have a file) or ``not run``."""
    if "invalid" in statuses:
        return "invalid"
    if len(statuses) < n:
        return f"partial {len(statuses)}/{n}" if statuses else "not run"
    if all(s == "ok" for s in statuses):
        return "done"
    return next(s for s in ("failed", "timeout", "na") if s in statuses)


def to_run(state: str) -> bool:
    """Whether a cell in ``state`` (:func:`state_of`) still has folds to run (an invalid file's
    fold is run again)."""
    return state in ("not run", "invalid") or state.startswith("partial")


def run_path(root, record: dict) -> Path:
    """``<root>/<protocol>-<version>/<track>/<kind>/<name>@r<revision>-<spec8>/<data set>/fold-<k>.json``."""
    pid, version, track, kind, _, _, _, dataset, fold = run_key(record)
    return (Path(root) / f"{pid}-{version}" / track / kind / row_key(record["component"]) / dataset
            / f"fold-{fold}.json")


def _strings(value, where=""):
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, f"{where}.{k}" if where else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, f"{where}[{i}]")


def validate_run(record: dict, what: str = "run file") -> dict:
    """Check a run file's record (schema, required fields, names usable in a path, status and its
    one-line error, packed predictions where ok, no path of a machine); return it."""
    if not isinstance(record, dict):
        raise DataValidationError(f"{what}: not a JSON object")
    if record.get("schema") != SCHEMA:
        raise DataValidationError(f"{what}: schema {record.get('schema')!r} is not {SCHEMA!r}")
    for key, parts in _REQUIRED.items():
        if key not in record:
            raise DataValidationError(f"{what}: lacks the field {key!r}")
        for part in parts or ():
            if not isinstance(record[key], dict) or part not in record[key]:
                raise DataValidationError(f"{what}: lacks the field '{key}.{part}'")
    for key, kind in (("component.revision", int), ("fold.index", int), ("fold.n_splits", int),
                      ("protocol.version", int), ("component.spec_hash", str), ("protocol.hash", str),
                      ("dataset.fingerprint", str), ("fold.test_digest", str)):
        part, field_ = key.split(".")
        value = record[part][field_]
        if isinstance(value, bool) or not isinstance(value, kind):
            raise DataValidationError(f"{what}: {key}={value!r} is not {'an integer' if kind is int else 'a string'}")
    if not isinstance(record.get("timing", {}), dict):
        raise DataValidationError(f"{what}: timing is not a mapping of seconds")
    names = {"protocol.id": record["protocol"]["id"], "track": record["track"],
             "component.kind": record["component"]["kind"], "component.name": record["component"]["name"],
             "dataset.name": record["dataset"]["name"]}
    for key, value in names.items():
        if not isinstance(value, str) or not _NAME.match(value):
            raise DataValidationError(f"{what}: {key}={value!r} is not a name (letters, digits, '_', '.', '+', '-')")
    status = record["status"]
    if status not in STATUSES:
        raise DataValidationError(f"{what}: status {status!r} is not one of {', '.join(STATUSES)}")
    error = record.get("error")
    if status == "ok":
        if error is not None:
            raise DataValidationError(f"{what}: status ok with an error")
        if "predictions" not in record:
            raise DataValidationError(f"{what}: status ok without predictions")
        unpack_predictions(record["predictions"])
    elif not isinstance(error, str) or not error.strip() or "\n" in error.strip():
        raise DataValidationError(f"{what}: status {status} needs its error in one line")
    for where, text in _strings(record):
        if _MACHINE_PATH.search(text):  # the text itself is not repeated: it would carry the path on
            raise DataValidationError(f"{what}: {where} names a path of a machine")
    return record


def write_run(root, record: dict) -> Path:
    """Validate ``record`` and write it to its place under ``root`` atomically (a temporary file in
    the same folder, then renamed: a reader, or a writer killed half-way, leaves none or all of
    it). Returns the path."""
    validate_run(record)
    path = run_path(root, record)
    _atomic(path, lambda tmp: tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n"))
    return path


def _atomic(path: Path, write) -> None:
    """``write(tmp)`` to a temporary file beside ``path``, then renamed to it (none or all of it is
    ever there); the temporary file is removed if the write fails."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def read_run(path) -> dict:
    """The validated record of a run file; a file that is not one is refused in one line naming it."""
    path = Path(path)
    try:
        record = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise DataValidationError(f"{path}: not a readable run file ({type(err).__name__}: {err})") from None
    return validate_run(record, str(path))


def iter_runs(root, protocol: str = "*", *, skip_unreadable: bool = False):
    """``(path, record)`` of every run file under ``root`` (only those of the protocol folder
    ``protocol``, ``<id>-<version>``, where given), in path order (temporary files of a writer
    still at work are not run files). A file that does not read as a run file is refused, or
    passed over with ``skip_unreadable`` (what :mod:`plcore.leaderboard.checks` does with it is
    the callers' business: it shows them as invalid cells)."""
    for path in sorted(Path(root).glob(f"{protocol}/*/*/*/*/fold-*.json")):
        try:
            yield path, read_run(path)
        except DataValidationError:
            if not skip_unreadable:
                raise



def claim_path(path: Path) -> Path:
    """The lock file of a fold's run file: ``.fold-<k>.json.lock`` beside it (never a run file)."""
    return path.with_name(f".{path.name}.lock")


@contextlib.contextmanager
def claimed(path: Path):
    """Hold the fold whose run file is ``path`` for this process while the block runs (issue 63,
    item 5): yields True when this process holds it, False when another run does, so that two
    runs into one folder split the folds instead of both computing them. The lock is the operating
    system's (``flock`` through :mod:`filelock`): a run that is killed lets go of it with its
    process, so its folds are taken over by the next run (its lock file, left behind, is only a
    name), with no stale lock to clear."""
    from filelock import FileLock, Timeout

    lock = FileLock(claim_path(path), timeout=0)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        lock.acquire()
    except Timeout:
        yield False
        return
    try:
        yield True
    finally:  # the lock file goes while still held: a run that locked its old inode sees it unlinked and retries
        claim_path(path).unlink(missing_ok=True)
        lock.release()
