"""The leaderboard's source of truth: one JSON file per fold of a cell (schema
``plcore.leaderboard.run/<N>``, now ``run/1``; ``../shared/design/leaderboard.md`` section 2.4).

A file holds the protocol (id, version, hash), the component (kind, name, revision, spec hash,
distribution and version), the data set (name, fingerprint, candidates digest), the fold (index,
count, digest of its test rows, seed), the status (``ok``, ``failed``, ``timeout``, ``na``; a
one-line ``error`` when not ok), the chosen hyperparameters, the test rows' predicted class
indices packed as bytes (so that scores are recomputed, never trusted), timings, the machine's
id and the software versions. It lives at
``<root>/<protocol id>-<version>/<track>/<kind>/<name>@r<revision>-<spec8>/<data set>/fold-<k>.json``
and is written atomically (a killed writer leaves no half file). Every refusal is one
:class:`~plcore.exceptions.DataValidationError` line naming the file.

In code a file is a frozen :class:`RunFile`, built, upgraded and validated in one place
(:meth:`RunFile.from_dict`) and written back by :meth:`RunFile.to_dict` with the keys and values it
was read from (a committed file re-written is the same bytes). A file of an older schema is
upgraded as it is read, through the ``update_to_N`` steps registered with :func:`update_to`
(asv's manner), never refused: a new schema raises :data:`SCHEMA_VERSION` and registers its step.

Checking a file against its protocol, the installed rows and the data, and merging trees, is
:mod:`plcore.leaderboard.checks`.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import hashlib
import json
import re
from dataclasses import MISSING, dataclass, field, fields, replace
from pathlib import Path

import numpy as np

from plcore.exceptions import DataValidationError
from plcore.utils.files import atomic_write

__all__ = ["SCHEMA", "SCHEMA_VERSION", "STATUSES", "RunFile", "ProtocolRef", "ComponentRef", "DatasetRef", "FoldRef",
           "update_to", "upgrade", "fold_path", "pack_predictions", "unpack_predictions", "run_key", "row_key", "state_of",
           "to_run", "run_path", "inside_tree", "validate_run", "write_run", "read_run", "iter_runs", "claim_path",
           "claimed"]

#: what every run file's ``schema`` starts with; the number after it is the schema's version
SCHEMA_PREFIX = "plcore.leaderboard.run/"
#: the schema this plcore writes; a file of an older one is upgraded on reading (:func:`upgrade`)
SCHEMA_VERSION = 2
SCHEMA = f"{SCHEMA_PREFIX}{SCHEMA_VERSION}"
#: the oldest schema the chain of updates starts from
FIRST_VERSION = 1
#: ``{N: update_to_N}``: each step takes a record of schema ``N - 1`` (a copy: it may change it) and
#: returns it in schema ``N`` (asv's ``update_to_N`` manner); :func:`upgrade` runs them in order
UPDATES: dict = {}
#: a fold's outcome: scored, raised (its one-line error kept), ran out of time, declared not applicable
STATUSES = ("ok", "failed", "timeout", "na")
#: the fields every run file has, and the fields of its parts
_REQUIRED = {"schema": None, "protocol": ("id", "version", "hash"), "track": None,
             "component": ("kind", "name", "revision", "spec_hash"), "dataset": ("name", "fingerprint"),
             "fold": ("index", "n_splits", "test_digest"), "status": None}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
#: strings that name a place on one machine (a page or a merged tree must hold none)
_MACHINE_PATH = re.compile(r"(^|[\s'\"(=])(/(home|root|tmp|Users|work|var|mnt|opt)/|[A-Za-z]:\\)")


def update_to(version: int):
    """Register the decorated function as ``update_to_<version>``: the step of :func:`upgrade`
    that turns a record of schema ``version - 1`` into one of schema ``version``. When the schema
    changes, :data:`SCHEMA_VERSION` goes up by one and its step is registered here, so that the
    committed files of the older schema are read (upgraded), never refused."""
    def register(step):
        UPDATES[int(version)] = step
        return step
    return register


#: steps that change no part of a record (a schema that only adds a field): given a shallow copy
_ADDS_ONLY: set = set()


@update_to(2)
def update_to_2(record: dict) -> dict:
    """run/1 -> run/2: run/2 adds ``tuning`` (a budget protocol's configurations and checkpoints,
    ``field/3``), which no run/1 file has; nothing else changes."""
    return record


_ADDS_ONLY.add(update_to_2)


def _schema_version(schema) -> int | None:
    """The version number of a ``schema`` string (None where it is not one of plcore's run files)."""
    if not isinstance(schema, str) or not schema.startswith(SCHEMA_PREFIX):
        return None
    tail = schema[len(SCHEMA_PREFIX):]
    return int(tail) if tail.isdigit() and tail == str(int(tail)) else None


def upgrade(record: dict, what: str = "run file") -> dict:
    """``record`` in the current schema (:data:`SCHEMA_VERSION`): a record of an older one passed
    through the ``update_to_N`` steps in order (:data:`UPDATES`; each on a copy, its ``schema`` set
    to the step's), one of the current schema returned as it is. A schema that is no run file's,
    older than the chain, newer than this plcore or without a step to the next one is refused in
    one line."""
    found = record.get("schema")
    version, current = _schema_version(found), SCHEMA_VERSION
    target = f"{SCHEMA_PREFIX}{current}"
    if version is None or version < FIRST_VERSION:
        raise DataValidationError(f"{what}: schema {found!r} is not {target!r}")
    if version > current:
        raise DataValidationError(f"{what}: schema {found!r} is newer than {target!r}, the one this plcore reads "
                                  "(upgrade plcore)")
    while version < current:
        step = UPDATES.get(version + 1)
        if step is None:
            raise DataValidationError(f"{what}: schema {found!r} has no update_to_{version + 1} to {target!r}")
        record = step(dict(record) if step in _ADDS_ONLY else copy.deepcopy(record))
        version += 1
        record["schema"] = f"{SCHEMA_PREFIX}{version}"
    return record


def _from(cls, data: dict):
    """``cls`` built from a validated mapping: its known fields, the rest as ``extra``, and the
    fields the mapping had (written back as they were: :func:`_to`)."""
    names = [f.name for f in fields(cls) if f.name not in ("extra", "present")]
    known = {k: data[k] for k in names if k in data}
    if isinstance(known.get("pipeline"), list):
        known["pipeline"] = tuple(known["pipeline"])
    return cls(**known, extra={k: v for k, v in data.items() if k not in names}, present=frozenset(known))


def _to(obj, always=()) -> dict:
    """A part of a run file as the mapping it is written as: the fields its source had, or (built
    in code) those set and those in ``always`` (written as null where unset), then its ``extra``."""
    out = {}
    for f in fields(obj):
        if f.name in ("extra", "present"):
            continue
        value = getattr(obj, f.name)
        if (f.name in obj.present) if obj.present is not None else (
                value is not None or f.name in always or f.default is MISSING):
            value = value.to_dict() if hasattr(value, "to_dict") else value
            out[f.name] = list(value) if isinstance(value, tuple) else copy.deepcopy(value)
    out.update(copy.deepcopy(dict(obj.extra)))
    return out


@dataclass(frozen=True)
class ProtocolRef:
    """A run file's ``protocol``: the id, version and hash of the protocol it was made under."""

    id: str
    version: int
    hash: str
    #: fields this plcore does not know (kept as they are)
    extra: dict = field(default_factory=dict, repr=False)
    #: the fields the file had (None: built in code)
    present: frozenset | None = field(default=None, repr=False, compare=False)

    @property
    def key(self) -> str:
        """``<id>/<version>`` (``field-smoke/1``)."""
        return f"{self.id}/{self.version}"

    def to_dict(self) -> dict:
        return _to(self)


@dataclass(frozen=True)
class ComponentRef:
    """A run file's ``component``: what identifies its row (kind, name, revision, spec hash) and
    the row's identity as installed when it ran (display name, distribution and version,
    pipeline, section, group; None where the file lacks one)."""

    kind: str
    name: str
    revision: int
    spec_hash: str
    display_name: str | None = None
    distribution: str | None = None
    version: str | None = None
    pipeline: tuple | None = None
    section: str | None = None
    group: str | None = None
    extra: dict = field(default_factory=dict, repr=False)
    present: frozenset | None = field(default=None, repr=False, compare=False)

    @property
    def row_key(self) -> str:
        """``<name>@r<revision>-<spec8>`` (:func:`row_key`)."""
        return row_key(self)

    def get(self, name: str, default=None):
        """The identity field ``name`` as the file has it (``default`` where it lacks it)."""
        if self.present is not None and name not in self.present:
            return default
        value = getattr(self, name)
        return list(value) if isinstance(value, tuple) else value

    def to_dict(self) -> dict:
        return _to(self, ("display_name", "distribution", "version", "pipeline", "section", "group"))


@dataclass(frozen=True)
class DatasetRef:
    """A run file's ``dataset``: its name, fingerprint and candidate sets' digest."""

    name: str
    fingerprint: str
    candidates_digest: str | None = None
    extra: dict = field(default_factory=dict, repr=False)
    present: frozenset | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict:
        return _to(self, ("candidates_digest",))


@dataclass(frozen=True)
class FoldRef:
    """A run file's ``fold``: its index, the count of folds, the digest of its test rows, the seed."""

    index: int
    n_splits: int
    test_digest: str
    seed: int | None = None
    extra: dict = field(default_factory=dict, repr=False)
    present: frozenset | None = field(default=None, repr=False, compare=False)

    def to_dict(self) -> dict:
        return _to(self, ("seed",))


@dataclass(frozen=True)
class RunFile:
    """One run file, typed (schema ``plcore.leaderboard.run/<N>``; the module says what it holds).

    Built from a record with :meth:`from_dict` (upgraded through the ``update_to_N`` chain and
    validated: the one place a record is checked) and written back with :meth:`to_dict`: the same
    keys and values as the record it was read from, so that a file re-written is the same bytes.
    Built in code (the runner), ``to_dict`` writes the fields that are set, and ``error`` (null
    when ok). The mappings it holds (``scores``, ``timing``, ...) are the file's own values."""

    schema: str
    protocol: ProtocolRef
    track: str
    component: ComponentRef
    dataset: DatasetRef
    fold: FoldRef
    status: str
    error: str | None = None
    predictions: dict | None = None
    scores: dict | None = None
    selection: dict | None = None
    timing: dict | None = None
    started_at: str | None = None
    finished_at: str | None = None
    warnings: tuple | None = None
    machine: dict | None = None
    numerics: dict | None = None
    software: dict | None = None
    #: a budget protocol's every configuration and checkpoint (``field/3``; :func:`_check_tuning`)
    tuning: dict | None = None
    #: top-level fields this plcore does not know (kept as they are)
    extra: dict = field(default_factory=dict, repr=False)
    present: frozenset | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_dict(cls, record, what: str = "run file", *, checked: bool = False) -> RunFile:
        """The run file of a record (a file's JSON): upgraded to the current schema, validated
        (:func:`validate_run`; a record that is not one is refused in one line naming ``what``).
        ``checked``: the record's exact bytes passed these checks before (a scan's cache,
        :mod:`plcore.leaderboard.checks`): upgraded only."""
        record = upgrade(record, what) if checked else validate_run(record, what)
        parts = {"protocol": ProtocolRef, "component": ComponentRef, "dataset": DatasetRef, "fold": FoldRef}
        built = {k: _from(part, record[k]) for k, part in parts.items()}
        top = {k: v for k, v in record.items() if k not in parts}
        if isinstance(top.get("warnings"), list):
            top["warnings"] = tuple(top["warnings"])
        run = _from(cls, {**top, **dict.fromkeys(parts)})
        return replace(run, **built, present=run.present | frozenset(parts))

    def to_dict(self) -> dict:
        """The record as it is written (:func:`write_run`): the keys and values it was read from."""
        return _to(self, ("error",))

    @property
    def key(self) -> tuple:
        """:func:`run_key`."""
        return run_key(self)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def predicted(self) -> np.ndarray:
        """The test rows' predicted class indices (:func:`unpack_predictions`)."""
        return unpack_predictions(self.predictions)

    @property
    def chosen(self):
        """The hyperparameters the fold's selection chose (``selection.chosen``; ``{}`` where none)."""
        return self.selection.get("chosen", {}) if isinstance(self.selection, dict) else {}

    def seconds(self, name: str):
        """``timing[name]`` (``wall_s``, ``fit_s``, ...), None where the file has none."""
        return (self.timing or {}).get(name)

    def replace(self, **changes) -> RunFile:
        """A copy with ``changes`` (the fields the source had, and those set, written)."""
        present = None if self.present is None else self.present | {k for k in changes if k in _RUN_FIELDS}
        return replace(self, **changes, present=present)


_RUN_FIELDS = frozenset(f.name for f in fields(RunFile))


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


def stored_value(value):
    """A chosen hyperparameter as a run file stores it: a number or a string as it is (a numpy
    scalar as its Python value), anything else as its ``repr``."""
    if isinstance(value, np.generic):
        value = value.item()
    return value if isinstance(value, (int, float, str)) else repr(value)


def run_key(run: RunFile) -> tuple:
    """What identifies a run file (the machine is not part of it): protocol id and version, track,
    component kind, name, revision and spec hash, data set, fold."""
    p, c = run.protocol, run.component
    return (p.id, p.version, run.track, c.kind, c.name, c.revision, c.spec_hash, run.dataset.name, run.fold.index)


def row_key(component) -> str:
    """A leaderboard row's key, ``<name>@r<revision>-<spec8>``, from a run file's component (a
    :class:`ComponentRef`, or a mapping with its ``name``, ``revision`` and ``spec_hash``)."""
    if isinstance(component, ComponentRef):
        name, revision, spec = component.name, component.revision, component.spec_hash
    else:
        name, revision, spec = component["name"], component["revision"], component["spec_hash"]
    return f"{name}@r{revision}-{spec.split(':', 1)[-1][:8]}"


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


def fold_path(root, protocol_id: str, version: int, track: str, kind: str, key: str, dataset: str, fold: int) -> Path:
    """``<root>/<protocol>-<version>/<track>/<kind>/<row key>/<data set>/fold-<k>.json``: where the
    run file of a fold lives."""
    return Path(root) / f"{protocol_id}-{version}" / track / kind / key / dataset / f"fold-{fold}.json"


def run_path(root, run: RunFile) -> Path:
    """``<root>/<protocol>-<version>/<track>/<kind>/<name>@r<revision>-<spec8>/<data set>/fold-<k>.json``."""
    pid, version, track, kind, _, _, _, dataset, fold = run_key(run)
    return fold_path(root, pid, version, track, kind, run.component.row_key, dataset, fold)


def _strings(value, where=""):
    if isinstance(value, str):
        yield where, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, f"{where}.{k}" if where else str(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, f"{where}[{i}]")


def _check_selection(selection, what: str) -> None:
    """``selection``: absent, or a mapping whose ``method`` is a name and whose ``chosen`` maps
    ``<role>.<parameter>`` to one plain value (a number or a string: what the runner writes)."""
    if selection is None:
        return
    if not isinstance(selection, dict):
        raise DataValidationError(f"{what}: selection is not a mapping")
    if "method" in selection and not isinstance(selection["method"], str):
        raise DataValidationError(f"{what}: selection.method={selection['method']!r} is not a string")
    chosen = selection.get("chosen", {})
    if not isinstance(chosen, dict):
        raise DataValidationError(f"{what}: selection.chosen is not a mapping of hyperparameters")
    for key, value in chosen.items():
        if not isinstance(value, (int, float, str)) or (isinstance(value, float) and not np.isfinite(value)):
            raise DataValidationError(f"{what}: selection.chosen.{key}={value!r} is not a number or a string")


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and bool(np.isfinite(value))


#: the checkpoint columns a configuration of ``tuning`` records, each a list as long as its ``steps``
TUNING_COLUMNS = ("covering_rate", "approximated_accuracy", "val_accuracy", "test_accuracy")


def _check_tuning(tuning, what: str) -> None:
    """``tuning`` (a budget protocol's, :func:`plcore.leaderboard.runner.fold_record`): absent, or
    a mapping of ``configurations`` (a non-empty list, each with its drawn ``params`` mapping names
    to a number or a string, its checkpoints' ``steps``, non-negative increasing integers, and the
    :data:`TUNING_COLUMNS`, shares between 0 and 1, one per step), the ``chosen`` ``configuration``
    and ``checkpoint`` (indices into them), the default's packed test ``predictions`` and the packed
    fit rows' ``disambiguation`` of the ``default`` and the ``tuned`` choice. Each fault is one line
    naming the field."""
    if tuning is None:
        return
    if not isinstance(tuning, dict):
        raise DataValidationError(f"{what}: tuning is not a mapping")
    configurations = tuning.get("configurations")
    if not isinstance(configurations, list) or not configurations:
        raise DataValidationError(f"{what}: tuning.configurations is not a non-empty list")
    for j, conf in enumerate(configurations):
        where = f"tuning.configurations[{j}]"
        if not isinstance(conf, dict) or not isinstance(conf.get("params"), dict):
            raise DataValidationError(f"{what}: {where} is not a mapping with its params")
        for key, value in conf["params"].items():
            if not isinstance(value, (str, bool)) and not _number(value):
                raise DataValidationError(f"{what}: {where}.params.{key}={value!r} is not a number or a string")
        steps = conf.get("steps")
        if (not isinstance(steps, list) or not steps or not all(isinstance(s, int) and not isinstance(s, bool)
                                                                 and s >= 0 for s in steps)
                or any(b <= a for a, b in zip(steps, steps[1:]))):
            raise DataValidationError(f"{what}: {where}.steps is not a list of increasing step counts")
        for column in TUNING_COLUMNS:
            values = conf.get(column)
            if (not isinstance(values, list) or len(values) != len(steps)
                    or not all(_number(v) and 0 <= v <= 1 for v in values)):
                raise DataValidationError(f"{what}: {where}.{column} is not one share in [0, 1] per step")
    chosen = tuning.get("chosen")
    if not isinstance(chosen, dict):
        raise DataValidationError(f"{what}: tuning.chosen is not a mapping")
    j, c = chosen.get("configuration"), chosen.get("checkpoint")
    if not (isinstance(j, int) and not isinstance(j, bool) and 0 <= j < len(configurations)):
        raise DataValidationError(f"{what}: tuning.chosen.configuration={j!r} is not one of its configurations")
    if not (isinstance(c, int) and not isinstance(c, bool) and 0 <= c < len(configurations[j]["steps"])):
        raise DataValidationError(f"{what}: tuning.chosen.checkpoint={c!r} is not one of its checkpoints")
    for key in ("default", "disambiguation"):
        if not isinstance(tuning.get(key), dict):
            raise DataValidationError(f"{what}: tuning.{key} is not a mapping")
    for where, packed in (("default.predictions", tuning["default"].get("predictions")),
                          ("disambiguation.default", tuning["disambiguation"].get("default")),
                          ("disambiguation.tuned", tuning["disambiguation"].get("tuned"))):
        try:
            unpack_predictions(packed)
        except DataValidationError as err:
            raise DataValidationError(f"{what}: tuning.{where}: {err}") from None


def _positive_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _check_numerics(found, what: str) -> None:
    """``numerics`` (what :func:`plcore.leaderboard.runner.numerics` records): absent, or a mapping
    whose ``libraries`` are mappings with a name as ``api``, a string or null as ``version`` and
    ``architecture``, a positive integer or null as ``threads``; whose ``environment`` maps names
    to strings; whose ``cpu`` is a string or null; and whose ``torch`` (where PyTorch was loaded) has
    a string ``version``, a positive integer of ``threads`` and strings or nulls as ``capability``
    and ``cuda``. ``verify`` re-runs a fold under these thread counts: a value it cannot use is
    refused here, naming the field."""
    if found is None:
        return
    if not isinstance(found, dict):
        raise DataValidationError(f"{what}: numerics is not a mapping")
    libraries = found.get("libraries", [])
    if not isinstance(libraries, list):
        raise DataValidationError(f"{what}: numerics.libraries is not a list")
    for i, lib in enumerate(libraries):
        where = f"numerics.libraries[{i}]"
        if not isinstance(lib, dict):
            raise DataValidationError(f"{what}: {where} is not a mapping")
        if not isinstance(lib.get("api"), str):
            raise DataValidationError(f"{what}: {where}.api={lib.get('api')!r} is not a string")
        for key in ("version", "architecture"):
            if lib.get(key) is not None and not isinstance(lib[key], str):
                raise DataValidationError(f"{what}: {where}.{key}={lib[key]!r} is not a string")
        if lib.get("threads") is not None and not _positive_int(lib["threads"]):
            raise DataValidationError(f"{what}: {where}.threads={lib['threads']!r} is not a positive integer")
    env = found.get("environment", {})
    if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
        raise DataValidationError(f"{what}: numerics.environment is not a mapping of names to strings")
    if found.get("cpu") is not None and not isinstance(found["cpu"], str):
        raise DataValidationError(f"{what}: numerics.cpu={found['cpu']!r} is not a string")
    torch = found.get("torch")
    if torch is None:
        return
    if not isinstance(torch, dict):
        raise DataValidationError(f"{what}: numerics.torch is not a mapping")
    if not isinstance(torch.get("version"), str):
        raise DataValidationError(f"{what}: numerics.torch.version={torch.get('version')!r} is not a string")
    if not _positive_int(torch.get("threads")):
        raise DataValidationError(f"{what}: numerics.torch.threads={torch.get('threads')!r} is not a positive "
                                  "integer")
    for key in ("capability", "cuda"):
        if torch.get(key) is not None and not isinstance(torch[key], str):
            raise DataValidationError(f"{what}: numerics.torch.{key}={torch[key]!r} is not a string")


def validate_run(record: dict, what: str = "run file") -> dict:
    """Check a run file's record (its schema, upgraded to the current one through the
    ``update_to_N`` chain: :func:`upgrade`; required fields, names usable in a path, status and its
    one-line error, packed predictions where ok, the types of ``selection`` and ``numerics``, no
    path of a machine); return it (upgraded: a new
    dict where a step ran, else ``record`` itself). :meth:`RunFile.from_dict` builds a run file
    from what it returns."""
    if not isinstance(record, dict):
        raise DataValidationError(f"{what}: not a JSON object")
    record = upgrade(record, what)
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
    _check_selection(record.get("selection"), what)
    _check_numerics(record.get("numerics"), what)
    _check_tuning(record.get("tuning"), what)
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


def write_run(root, run) -> Path:
    """Validate ``run`` (a :class:`RunFile`, or its record as a dict) and write it to its place
    under ``root`` atomically (a temporary file in the same folder, then renamed: a reader, or a
    writer killed half-way, leaves none or all of it): :meth:`RunFile.to_dict` as JSON, one
    space of indent, sorted keys. Returns the path."""
    run = RunFile.from_dict(run.to_dict() if isinstance(run, RunFile) else run)
    path = run_path(root, run)
    text = json.dumps(run.to_dict(), indent=1, sort_keys=True) + "\n"
    inside_tree(root, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as tmp:
        tmp.write_text(text)
    return path


def inside_tree(root, path) -> None:
    """Refuse, in one line, to write ``path`` where its folder, through a symbolic link, leads out
    of the results tree ``root`` (the nearest folder of it that exists, resolved, must be in it)."""
    root, folder = Path(root), Path(path).parent
    while not folder.exists() and folder != root and root in folder.parents:
        folder = folder.parent
    if not folder.exists():  # nothing of the tree exists yet: no link in it
        return
    top, real = root.resolve(), folder.resolve()
    if real != top and top not in real.parents:
        raise DataValidationError(f"{path}: its folder leads out of {root} through a symbolic link; nothing written")


def read_run(path) -> RunFile:
    """The run file at ``path``, validated (and upgraded to the current schema:
    :func:`upgrade`); a file that is not one is refused in one line naming it."""
    path = Path(path)
    try:
        record = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise DataValidationError(f"{path}: not a readable run file ({type(err).__name__}: {err})") from None
    return RunFile.from_dict(record, str(path))


def iter_runs(root, protocol: str = "*", *, skip_unreadable: bool = False):
    """``(path, run file)`` (:class:`RunFile`) of every run file under ``root`` (only those of the protocol folder
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
