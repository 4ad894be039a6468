"""One validation of a run file, used by ``run``, ``merge``, ``list``, ``page`` and ``verify``
alike (issue 63, items 1 and 2).

A file under ``<results>/<id>-<version>/`` is checked against the protocol ``<id>/<version>``:

1. its schema (the types and ranges of its ``selection`` and ``numerics`` included) and the checksum
   of its packed predictions (:func:`~plcore.leaderboard.runfile.read_run`);
2. its place in the tree agreeing with its content, the protocol's hash, a data set of its track,
   a fold in range, and the data set's fingerprint, candidate sets and the fold's digest;
3. its timings: seconds, finite and not negative, and where it ran ok not below a plausible floor
   (:data:`FLOOR`), the wall time at least the fit and predict times;
4. its component block: where the component is installed with the same row key, its full spec
   hash (the folder names only 8 hex digits of it), display name, distribution, pipeline, section
   and group are the installed row's, the hyperparameters it chose are parameters of the
   pipeline's components, and each chosen value is one of the row's search space and allowed by
   its component's ``_parameter_constraints``; otherwise these fields agree with the rest of the
   row's files (the most common value wins);
5. its scores, recomputed from its predictions on the protocol's data.

A scan keeps what it checked (:class:`ScanCache`): the sha256 of each valid file of an installed
row and its recomputed scores, under a context (plcore's version, the checking code, the installed
rows and the protocol's hash), in ``PLCORE_CACHE_DIR`` (default ``$XDG_CACHE_HOME/plcore``, else
``~/.cache/plcore``). A file whose bytes are those it checked is read without its checks again and
its scores are taken from the cache, so a page of unchanged files loads no data set; any other byte,
another installed row or other code checks it again. ``PLCORE_SCAN_CACHE=0`` turns it off.

A file that fails a check is not an error of the folder: it is an :class:`Invalid` cell with its
reason, one line naming the file, and the callers show it as such (``page`` and ``list``), replace
it by running the fold again (``run``), or refuse it (``merge``, ``verify``).
"""

from __future__ import annotations

import contextlib
import math
import re
import shutil
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from plcore.exceptions import ConfigError, DataValidationError, PlcoreError, one_line
from plcore.leaderboard.protocol import Protocol, checked_data, fold_scores, load_protocol
from plcore.leaderboard.runfile import (TUNING_COLUMNS, ComponentRef, RunFile, inside_tree, read_run, run_path,
                                        state_of, stored_value)
from plcore.utils.files import atomic_write

__all__ = ["Invalid", "Scan", "scan", "cell_states", "MergeReport", "merge_trees", "refuse_links", "IDENTITY",
           "MACHINE_FIELDS", "LAYOUT"]

#: the fields of a run file's component block that must agree with its row (the spec hash in full:
#: the row's folder names only its first 8 hex digits)
IDENTITY = ("spec_hash", "display_name", "distribution", "pipeline", "section", "group")
#: the fields two files of one fold may differ in and still be the same run: where and when it ran
MACHINE_FIELDS = ("timing", "started_at", "finished_at", "machine", "numerics", "software", "warnings", "error")
#: the fewest seconds a fold that ran ok can record: an order of magnitude below the smallest in the
#: committed results under leaderboard/ (measured on 2026-12-02 over every run file of every protocol:
#: fit_s 0.00082 s and wall_s 0.0026 s, PERCEPTRON on wine-uniform of field/2), so that a faster
#: machine passes and a file that sets every timing to 1e-9 s does not
FLOOR = {"fit_s": 5e-5, "wall_s": 2e-4}
#: a stored score and its recomputed value may differ by this much (JSON round trip)
TOLERANCE = 1e-9
_FOLD = re.compile(r"^fold-(\d+)\.json$")


@dataclass(frozen=True)
class Invalid:
    """A run file that failed a check: its path, its cell as its place in the tree says
    ``(track, kind, row key, data set, fold)`` (None for a stray file: a place that is no cell of
    the protocol) and the reason, in one line."""

    path: Path
    cell: tuple
    reason: str

    def line(self, root=None) -> str:
        shown = self.path.relative_to(root).as_posix() if root is not None else str(self.path)
        return f"{shown}: {self.reason}"


@dataclass
class Scan:
    """What :func:`scan` found: the valid files ``(path, run file)`` (:class:`RunFile`), the invalid ones
    (:class:`Invalid`), each valid ok file's scores as recomputed (``scores[path]``) and the
    installed rows it checked them against."""

    valid: list = field(default_factory=list)
    invalid: list = field(default_factory=list)
    scores: dict = field(default_factory=dict)
    #: the installed rows it checked against, ``{(track, kind, row key): entry}`` (empty without a registry)
    installed: dict = field(default_factory=dict)

    def statuses(self) -> dict:
        """``{(track, row key, data set): [status, ...]}`` of every file, ``"invalid"`` for an
        invalid one in a cell's place (a stray file stands for no fold)."""
        out: dict = defaultdict(list)
        for _, rec in self.valid:
            out[(rec.track, rec.component.row_key, rec.dataset.name)].append(rec.status)
        for bad in self.invalid:
            if bad.cell is not None:
                track, _, key, dataset, _ = bad.cell
                out[(track, key, dataset)].append("invalid")
        return dict(out)


def _cell_of(protocol: Protocol, folder: Path, path: Path) -> tuple | None:
    """``(track, kind, row key, data set, fold)`` from a file's place under the protocol's folder,
    where that place is one of the protocol's cells (a track and data set of it, a fold in range,
    named ``fold-<k>.json`` as :func:`~plcore.leaderboard.runfile.run_path` names it); else None:
    a stray file, listed but never standing for a fold."""
    parts = path.relative_to(folder).parts
    if len(parts) != 5:
        return None
    track, kind, key, dataset, name = parts
    m = _FOLD.match(name)
    if (m is None or name != f"fold-{int(m.group(1))}.json" or track not in protocol.data["tracks"]
            or dataset not in protocol.track_datasets(track)
            or not int(m.group(1)) < len(protocol.datasets[dataset]["splits"][track])):
        return None
    return track, kind, key, dataset, int(m.group(1))


def _check_place(protocol: Protocol, results: Path, path: Path, rec: RunFile) -> None:
    """Refuse a file that is not where its content places it, or not of this protocol: another
    hash, a data set the track does not use, a fold out of range, or another fingerprint,
    candidate sets or fold digest than the protocol's."""
    if path != run_path(results, rec):
        raise DataValidationError(f"its content places it at {run_path(results, rec).relative_to(results)}")
    if rec.protocol.hash != protocol.hash:
        raise DataValidationError(f"made under protocol hash {rec.protocol.hash}, not {protocol.key}'s "
                                  f"{protocol.hash}")
    dataset, fold = rec.dataset.name, rec.fold.index
    if rec.track not in protocol.data["tracks"] or dataset not in protocol.track_datasets(rec.track):
        raise DataValidationError(f"the {rec.track} track of {protocol.key} has no data set {dataset!r}")
    entry = protocol.datasets[dataset]
    splits = entry["splits"][rec.track]
    if not 0 <= fold < len(splits) or rec.fold.n_splits != len(splits):
        raise DataValidationError(f"fold {fold} of {rec.fold.n_splits}, the protocol has {len(splits)}")
    digest = rec.dataset.candidates_digest
    for what, have, want in (("fingerprint", rec.dataset.fingerprint, entry["fingerprint"]),
                             ("fold digest", rec.fold.test_digest, splits[fold]),
                             ("candidates digest", entry["candidates_digest"] if digest is None else digest,
                              entry["candidates_digest"])):
        if have != want:
            raise DataValidationError(f"its {what} {have} is not the protocol's {want}")


def _check_timing(rec: RunFile) -> None:
    """Seconds (or a list of them), finite and not negative; where the fold ran ok, ``fit_s`` and ``wall_s`` not below
    their floor (:data:`FLOOR`) and ``wall_s`` (measured around the whole fold) at least
    ``fit_s + predict_s``, up to rounding."""
    timing = {} if rec.timing is None else rec.timing
    if not isinstance(timing, dict):
        raise DataValidationError("timing is not a mapping of seconds")
    for key, value in timing.items():
        for v in value if isinstance(value, list) else [value]:  # a budget's seconds per configuration
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0:
                raise DataValidationError(f"timing.{key}={value!r} is not a number of seconds")
    if not rec.ok:  # a fold that failed may fail at once
        return
    for key, floor in FLOOR.items():
        if key not in timing:
            raise DataValidationError(f"timing.{key} is missing from a fold that ran ok")
        if timing[key] < floor:
            raise DataValidationError(f"timing.{key}={timing[key]!r} is below {floor} s, faster than any fit of "
                                      "the committed results by an order of magnitude")
    if "wall_s" in timing:
        parts = sum(timing.get(k, 0.0) for k in ("fit_s", "predict_s"))
        if timing["wall_s"] < parts - 1e-6 - 1e-9 * parts:
            raise DataValidationError(f"timing.wall_s={timing['wall_s']!r} is less than fit_s + predict_s "
                                      f"({parts!r}), which it includes")


def _roles(component: ComponentRef) -> dict:
    """``{"learner": name}``, ``{"reducer": name, "learner": its learner}`` or ``{"clusterer": name}``."""
    pipeline = list(component.pipeline or [component.name])
    if component.kind == "reducer":
        return {"reducer": pipeline[0], "learner": pipeline[-1]}
    return {component.kind: component.name}


class _Installed:
    """The installed rows of a protocol (by track, kind and row key) and their components'
    parameters, read from a registry once."""

    def __init__(self, protocol: Protocol, registry):
        from plcore.leaderboard.jobs import entries

        self.protocol = protocol
        self.registry = registry
        self.rows = {} if registry is None else {(e.track, e.kind, e.key): e for e in entries(protocol, registry)}
        self._params: dict = {}
        self._setups: dict = {}

    def setup(self, entry):
        """The row's components and its selection as the runner builds them (``(setup, select)``;
        None where they cannot be built here: the runner's own fold then fails)."""
        key = (entry.track, entry.kind, entry.key)
        if key not in self._setups:
            from plcore.leaderboard.jobs import component_setup

            try:
                self._setups[key] = component_setup(self.protocol, entry, self.registry)
            except Exception:  # noqa: BLE001 - nothing to check against
                self._setups[key] = None
        return self._setups[key]

    def built(self, rec) -> bool:
        """Whether the row of ``rec`` could be built here (its chosen values were checked)."""
        entry = self.rows.get((rec.track, rec.component.kind, rec.component.row_key))
        return entry is not None and self.setup(entry) is not None

    def params(self, kind: str, name: str) -> set | None:
        if (kind, name) not in self._params:
            from plcore.leaderboard.jobs import create_component

            try:
                self._params[(kind, name)] = set(create_component(self.registry, kind, name).get_params(deep=False))
            except Exception:  # noqa: BLE001 - not installed here: nothing to check against
                self._params[(kind, name)] = None
        return self._params[(kind, name)]


def _identity_of(entry) -> dict:
    return {"spec_hash": entry.spec_hash, "display_name": entry.display_name, "distribution": entry.distribution,
            "pipeline": list(entry.pipeline),
            "section": entry.section, "group": entry.group}


def _check_component(rec: RunFile, expected: dict, source: str, installed: _Installed, entry) -> None:
    """The component block against its row (``expected``: the installed row's identity, or the
    row's files' most common one; ``source`` says which) and the chosen hyperparameters against the
    pipeline's parameters where the row is installed."""
    c = rec.component
    for key in IDENTITY:
        if c.get(key) != expected.get(key):
            raise DataValidationError(f"its component.{key} {c.get(key)!r} is not {source}'s {expected.get(key)!r}")
    if entry is not None and (rec.status == "na") != (rec.dataset.name in entry.na):
        raise DataValidationError(
            f"its status {rec.status!r} on {rec.dataset.name}: the installed row declares that data set "
            + ("not applicable" if rec.dataset.name in entry.na else "applicable"))
    chosen = rec.chosen
    if not isinstance(chosen, dict):
        raise DataValidationError("selection.chosen is not a mapping of hyperparameters")
    if entry is None:
        return
    roles = _roles(c)
    for key in chosen:
        role, _, param = str(key).partition(".")
        params = installed.params(role, roles[role]) if role in roles else None
        if role not in roles or (params is not None and param not in params):
            owner = f"{role} {roles[role]}" if role in roles else f"the pipeline ({', '.join(roles)})"
            raise DataValidationError(f"its chosen hyperparameter {key!r} is not a parameter of {owner}")


def _in_space(value, values) -> bool:
    """Whether a stored chosen ``value`` is one of a search space's ``values`` (a list, or a
    distribution's ``{name: [low, high]}`` spec; its bounds up to rounding)."""
    from plcore.utils.distributions import check_distribution, is_distribution

    if not is_distribution(values):
        return any(value == stored_value(v) for v in values)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    dist = check_distribution(values)
    return any(dist.contains(value * (1 + e)) for e in (0.0, 1e-12, -1e-12))


def _check_chosen(rec: RunFile, installed: _Installed, entry) -> None:
    """The values a file's selection chose against its installed row: each one of the row's search
    space (where it searches one; ``verify`` compares the method and the choice with its own re-run)
    and allowed by its component's ``_parameter_constraints`` (:func:`plcore.validation.validate_params`,
    the check every ``fit`` makes)."""
    from sklearn.base import clone

    from plcore.validation import validate_params

    built = installed.setup(entry) if rec.ok else None
    if built is None:
        return
    setup, select = built
    space = select.get("space") or {}
    spec = installed.protocol.track(rec.track)
    if spec.budget is not None:
        _check_configurations(rec, spec, space)
    for key, value in rec.chosen.items():
        role, _, param = key.partition(".")
        values = space.get(key)
        if isinstance(values, list):  # the value as the grid has it (a stored repr is not the value)
            value = next((v for v in values if stored_value(v) == value), value)
        try:
            validate_params(clone(getattr(setup, role)).set_params(**{param: value}))
        except Exception as err:  # noqa: BLE001 - a plugin's own validation may raise anything: this file's line
            raise DataValidationError(f"its selection.chosen.{key}={value!r}: {one_line(str(err))}") from None
        if values is None:
            raise DataValidationError(f"its selection.chosen.{key}={value!r}: the row searches "
                                      + (f"only {', '.join(space)}" if space else "no hyperparameter"))
        if not _in_space(stored_value(value), values):
            shown = values if isinstance(values, dict) else ", ".join(map(repr, values))
            raise DataValidationError(f"its selection.chosen.{key}={value!r} is not in the row's search space "
                                      f"({shown})")


def _check_configurations(rec: RunFile, spec, space: dict) -> None:
    """A budget protocol's file: its configurations are the installed row's draws (the defaults,
    then the points :func:`plcore.run.protocols.draw_configurations` draws from the row's space
    with the track's seed), and its ``selection.chosen`` the chosen configuration's values."""
    from plcore.run.protocols import draw_configurations

    tuning = rec.tuning
    if not isinstance(tuning, dict):
        raise DataValidationError(f"it has no tuning block, which every fold of {rec.protocol.id}/"
                                  f"{rec.protocol.version} records")
    drawn = [{k: stored_value(v) for k, v in point.items()}
             for point in draw_configurations(space, spec.budget.configurations, spec.seed)]
    stored = [conf["params"] for conf in tuning["configurations"]]
    if len(stored) != len(drawn):
        raise DataValidationError(f"its tuning has {len(stored)} configuration(s), the row's budget draws {len(drawn)}")
    for j, (a, b) in enumerate(zip(stored, drawn)):
        if a != b:
            raise DataValidationError(f"its tuning.configurations[{j}].params {a!r} are not the row's draw {b!r}")
    if rec.chosen != stored[tuning["chosen"]["configuration"]]:
        raise DataValidationError(f"its selection.chosen {rec.chosen!r} is not its chosen configuration's params "
                                  f"{stored[tuning['chosen']['configuration']]!r}")


def _check_tuning_choice(rec: RunFile, spec, scores: dict) -> None:
    """A budget protocol's file: its ``tuning.chosen`` is the checkpoint its own stored curves
    choose (:func:`plcore.run.checkpoints.select_checkpoints` by the track's criterion), and the test
    accuracies it stores at that checkpoint and at the default's last one are its predictions'
    (``scores``, recomputed)."""
    from plcore.run.checkpoints import select_checkpoints
    from plcore.run.protocols import CRITERION_COLUMN, DIGITS

    if not isinstance(rec.tuning, dict):
        raise DataValidationError(f"it has no tuning block, which every fold of {rec.protocol.id}/"
                                  f"{rec.protocol.version} records")
    confs = rec.tuning["configurations"]
    curves = [np.column_stack([conf[c] for c in TUNING_COLUMNS]) for conf in confs]
    choice = select_checkpoints(curves)[CRITERION_COLUMN[spec.budget.criterion]]
    chosen = rec.tuning["chosen"]
    if (choice.draw, choice.checkpoint) != (chosen["configuration"], chosen["checkpoint"]):
        raise DataValidationError(
            f"its tuning.chosen (configuration {chosen['configuration']}, checkpoint {chosen['checkpoint']}) is not "
            f"what its curves choose by {spec.budget.criterion} (configuration {choice.draw}, checkpoint "
            f"{choice.checkpoint})")
    metric = spec.metric
    for what, stored, got in (("tuned", confs[choice.draw]["test_accuracy"][choice.checkpoint], scores[metric]),
                              ("default", confs[0]["test_accuracy"][-1], scores[f"default_{metric}"])):
        if not abs(stored - got) <= 10.0 ** -DIGITS:  # stored rounded to DIGITS decimals
            raise DataValidationError(f"its {what} checkpoint's stored test_accuracy {stored} disagrees with its "
                                      f"predictions ({got:.6f})")


def _consensus(records: list) -> dict:
    """The most common value of each identity field among a row's records."""
    out = {}
    for key in IDENTITY:
        counts = Counter(repr(r.component.get(key)) for r in records)
        top = max(sorted(counts), key=lambda v: counts[v])
        out[key] = next(r.component.get(key) for r in records if repr(r.component.get(key)) == top)
    return out


class ScanCache:
    """What a scan checked before (the module says what and where): ``{relative path: [sha256,
    scores]}`` of the valid files of installed rows, under the scan's context; a cache of another
    context is empty. Reading or writing it never fails a scan (an unreadable cache is empty, an
    unwritable one is not written)."""

    def __init__(self, results: Path, protocol: Protocol, installed: _Installed, *, enabled: bool = True):
        import hashlib
        import json
        import os

        self.results, self.files, self.path = results, {}, None
        if not enabled or os.environ.get("PLCORE_SCAN_CACHE", "1") == "0" or installed.registry is None:
            return
        base = os.environ.get("PLCORE_CACHE_DIR") or os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "plcore")
        place = hashlib.sha256(f"{results.resolve()}|{protocol.key}".encode()).hexdigest()[:16]
        self.path = Path(base) / "leaderboard-scan" / f"{protocol.data['id']}-{protocol.data['version']}-{place}.json"
        self.context = _context(protocol, installed)
        try:
            found = json.loads(self.path.read_text())
            if found.get("context") == self.context and isinstance(found.get("files"), dict):
                self.files = found["files"]
        except (OSError, ValueError, AttributeError):
            pass

    def hit(self, rel: str, digest: str):
        """The cached scores (a mapping, or None for a fold without scores) of a file whose bytes
        are ``digest``; ``False`` where it was not checked so."""
        got = self.files.get(rel)
        return got[1] if isinstance(got, list) and len(got) == 2 and got[0] == digest else False

    def save(self, checked: dict) -> None:
        """Keep ``{relative path: [sha256, scores]}``, written atomically."""
        import json

        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with atomic_write(self.path) as tmp:
                tmp.write_text(json.dumps({"context": self.context, "files": checked}, sort_keys=True))
        except OSError:
            pass


def _context(protocol: Protocol, installed: _Installed) -> str:
    """What a cached check depends on beyond the file's bytes: plcore's version, the code that
    checks (these modules' sources), the protocol's hash and every installed row's identity."""
    import hashlib
    import json

    from plcore import __version__

    import importlib

    code = hashlib.sha256()
    for name in ("plcore.leaderboard.checks", "plcore.leaderboard.runfile", "plcore.leaderboard.protocol",
                 "plcore.leaderboard.jobs", "plcore.run.protocols._budget", "plcore.run.checkpoints",
                 "plcore.run.selection", "plcore.utils.distributions", "plcore.metrics", "plcore.validation",
                 "plcore.run.protocols._plench", "plcore.run.protocols._clustering"):  # fit rows, partitions
        code.update(Path(importlib.import_module(name).__file__).read_bytes())
    from importlib.metadata import version  # the draws (ParameterSampler) and the splits follow these

    code.update(" ".join(version(lib) for lib in ("numpy", "scipy", "scikit-learn")).encode())
    rows = sorted([list(k), _identity_of(e), sorted(e.na), str(e.version)] for k, e in installed.rows.items())
    text = json.dumps([__version__, code.hexdigest(), protocol.hash, rows], sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def scan(protocol: Protocol, results, *, registry=None, paths=None, data_home=None, use_cache: bool = True) -> Scan:
    """Check the run files of ``protocol`` under ``results`` (or only ``paths``, files under it)
    as the module says; a registry adds the check against the installed rows (and, with
    ``use_cache``, the cache of what was checked before: :class:`ScanCache`; ``verify`` and
    ``merge`` check every file again)."""
    import hashlib
    import json

    results = Path(results)
    folder = results / f"{protocol.data['id']}-{protocol.data['version']}"
    files = sorted(folder.glob("*/*/*/*/fold-*.json")) if paths is None else sorted(Path(p) for p in paths)
    installed = _Installed(protocol, registry)
    out = Scan(installed=installed.rows)
    cache = ScanCache(results, protocol, installed, enabled=use_cache)
    read: list = []
    digests: dict = {}
    hits: list = []

    def refuse(path, err):  # one line, whatever the file held
        reason = one_line(str(err).removeprefix(f"{path}: "))[:300]
        out.invalid.append(Invalid(path, _cell_of(protocol, folder, path), reason))

    for path in files:
        try:
            raw = path.read_bytes()
            digests[path] = hashlib.sha256(raw).hexdigest()
            rel = path.relative_to(results).as_posix()
            scores = cache.hit(rel, digests[path])
            if scores is not False:  # these bytes passed every check here before
                rec = RunFile.from_dict(json.loads(raw), str(path), checked=True)
                if (rec.track, rec.component.kind, rec.component.row_key) in installed.rows:
                    hits.append((path, rec, scores))
                    continue
            rec = read_run(path)
            _check_place(protocol, results, path, rec)
            _check_timing(rec)
        except Exception as err:  # noqa: BLE001 - any fault of one file is that file's, never the folder's
            refuse(path, err if isinstance(err, DataValidationError) else f"malformed ({type(err).__name__}: {err})")
            continue
        read.append((path, rec))
    by_row = defaultdict(list)
    for path, rec in read:
        by_row[(rec.track, rec.component.kind, rec.component.row_key)].append((path, rec))
    checked = []
    for key, files_of_row in by_row.items():
        entry = installed.rows.get(key)
        expected, source = ((_identity_of(entry), "the installed row") if entry is not None else
                            (_consensus([r for _, r in files_of_row]), "the row's other files"))
        for path, rec in files_of_row:
            try:
                _check_component(rec, expected, source, installed, entry)
                if entry is not None:
                    _check_chosen(rec, installed, entry)
            except DataValidationError as err:
                refuse(path, err)
                continue
            checked.append((path, rec))
    _recompute(protocol, results, checked, out, data_home, refuse)
    for path, rec, scores in hits:
        out.valid.append((path, rec))
        if scores is not None:
            out.scores[path] = scores
    out.valid.sort(key=lambda pr: pr[0])
    out.invalid.sort(key=lambda bad: bad.path)
    if cache.path is not None:
        keep = {p.relative_to(results).as_posix(): [digests[p], out.scores.get(p)] for p, rec in out.valid
                if (rec.track, rec.component.kind, rec.component.row_key) in installed.rows
                and (not rec.ok or installed.built(rec))}  # a file whose chosen values went unchecked: never
        if paths is not None:  # a scan of some files keeps what it knew of the others
            keep = {**cache.files, **keep}
        if keep != cache.files:
            cache.save(keep)
    return out


def _recompute(protocol: Protocol, results: Path, checked: list, out: Scan, data_home, refuse) -> None:
    """Each ok file's scores recomputed from its predictions (:func:`fold_scores`); a file whose
    stored score disagrees, or whose predictions do not cover its test rows, is refused."""
    by_dataset = defaultdict(list)
    for path, rec in checked:
        if rec.ok:
            by_dataset[rec.dataset.name].append((path, rec))
        else:
            out.valid.append((path, rec))
    for dataset, files in by_dataset.items():
        try:
            (_, drawn), splits = checked_data(protocol, dataset, data_home)
        except PlcoreError as err:  # not here, or not the protocol's: its files cannot be checked
            for path, _ in files:
                refuse(path, f"not checked: data set {dataset!r} could not be loaded here ({err})")
            continue
        for path, rec in files:
            track, fold = rec.track, rec.fold.index
            split = splits[track][fold]
            pred = rec.predicted()
            expected = len(split[1]) if track == "classification" else drawn.n_samples
            if pred.size != expected:
                refuse(path, f"{pred.size} predictions for {expected} rows")
                continue
            spec = protocol.track(track)
            try:
                got = fold_scores(spec, track, drawn, split, pred, fold=fold, tuning=rec.tuning)
                if spec.budget is not None and track == "classification":
                    _check_tuning_choice(rec, spec, got)
            except DataValidationError as err:
                refuse(path, err)
                continue
            stored = rec.scores if isinstance(rec.scores, dict) else {}
            bad = [m for m, v in got.items() if isinstance(stored.get(m), bool)
                   or not isinstance(stored.get(m), (int, float)) or not abs(float(stored[m]) - v) <= TOLERANCE]
            if bad:
                m = bad[0]
                refuse(path, f"the stored {m} {stored.get(m)} disagrees with its predictions ({got[m]:.6f})")
                continue
            out.valid.append((path, rec))
            out.scores[path] = got


def cell_states(protocol: Protocol, rows: list[Entry], results, *, found=None, registry=None) -> dict:
    """``{(entry key, data set): state}``: ``invalid`` (a fold's file failed its checks),
    ``done`` (every split ok), ``failed`` / ``timeout`` (every split has a final state, one of
    them this one), ``na`` (declared, or every split na), ``partial k/n`` (k splits have a file)
    or ``not run``, from the run files under ``results`` as :func:`scan`
    checks them (``found``: a scan already made; ``registry``: check against the installed rows)."""
    if found is None:
        found = scan(protocol, results, registry=registry)
    have = found.statuses()
    states = {}
    for entry in rows:
        for dataset in protocol.track_datasets(entry.track):
            n = len(protocol.datasets[dataset]["splits"][entry.track])
            got = have.get((entry.track, entry.key, dataset), [])
            states[(entry.key, dataset)] = "na" if dataset in entry.na else state_of(got, n)
    return states


@dataclass
class MergeReport:
    """What :func:`merge_trees` did: the files copied, the duplicates dropped (identical
    predictions to a file already present), and the files left out because a ``leaderboard run``
    into the same tree held their fold or wrote it during the merge (merging again checks them
    against what it wrote)."""

    copied: list = field(default_factory=list)
    duplicates: list = field(default_factory=list)
    left: list = field(default_factory=list)


def _same_setting(a: RunFile, b: RunFile) -> str | None:
    """What differs between two valid run files of one place, other than where and when they ran
    (:data:`MACHINE_FIELDS`, and the installed distribution's version): the first field that does
    (the status, the predictions, the full spec hash, the scores, the chosen hyperparameters, ...);
    None when nothing does."""
    if a.status != b.status:
        return f"status {a.status} vs {b.status}"
    if (a.predictions or {}).get("sha256") != (b.predictions or {}).get("sha256"):
        return "other predictions"

    def setting(rec: RunFile) -> dict:
        out = {k: v for k, v in rec.to_dict().items() if k not in MACHINE_FIELDS}
        out["component"] = {k: v for k, v in out["component"].items() if k != "version"}
        return out

    left, right = setting(a), setting(b)
    for key in sorted(set(left) | set(right)):
        x, y = left.get(key), right.get(key)
        if x == y:
            continue
        if isinstance(x, dict) and isinstance(y, dict):
            sub = next(k for k in sorted(set(x) | set(y)) if x.get(k) != y.get(k))
            return f"{key}.{sub} {x.get(sub)!r} vs {y.get(sub)!r}"
        return f"{key} {x!r} vs {y!r}"
    return None


def _describe(record: RunFile) -> str:
    c = record.component
    return (f"fold {record.fold.index} of {c.kind}:{c.name}@r{c.revision} on {record.dataset.name} "
            f"({record.protocol.key})")


#: where :func:`merge_trees` looks for run files under each SRC
LAYOUT = "SRC/<protocol id>-<version>/<track>/<kind>/<name>@r<rev>-<hash>/<data set>/fold-<k>.json"
_PROTOCOL_FOLDER = re.compile(r"^.+-\d+$")


def refuse_links(root, what: str) -> None:
    """Refuse, in one line naming it, a symbolic link (a folder's or a file's) anywhere under the
    results tree ``root`` (``root`` itself may be one): one leading out of the tree would make a
    command read or write outside it, one inside it would put a file in another's place, so a
    results tree holds none. Checked before any work; ``what`` names the tree (``--results res``)."""
    import os

    root = Path(root)
    if not root.is_dir():
        return
    top = root.resolve()
    for folder, dirs, files in os.walk(root):
        for name in sorted(dirs + files):
            link = Path(folder, name)
            if not link.is_symlink():
                continue
            target = link.resolve()
            where = "inside it" if target == top or top in target.parents else f"out of {root}"
            raise ConfigError(f"{what}: {link} is a symbolic link leading {where}; a results tree holds no links "
                              "(put the folder or file itself there)")


def _no_run_files(source: Path) -> ConfigError:
    """The refusal of a SRC with no run file where :data:`LAYOUT` puts them, with the folder to pass
    where run files lie deeper or shallower."""
    import os

    said = f"{source}: no run file at {LAYOUT}"
    for path in sorted(source.rglob("fold-*.json")):
        n = len(path.relative_to(source).parts)
        up = path.relative_to(source).parts[:n - 6] if n >= 6 else [".."] * (6 - n)
        root = Path(os.path.normpath(source.joinpath(*up)))
        rel = Path(os.path.relpath(path, root)).parts
        if root != source and len(rel) == 6 and ".." not in rel and _PROTOCOL_FOLDER.match(rel[0]):
            where = (f"run files lie deeper, under {root / rel[0]}" if n > 6 else
                     f"it is a folder inside the results tree {root} (of {rel[0]})")
            return ConfigError(f"{said}; {where}: pass {root} instead")
    return ConfigError(f"{said}; nothing merged")


def _scan_tree(root: Path, registry, data_home) -> tuple[list, list]:
    """Every run file under ``root``, checked against the protocol its folder names: the valid
    ``(path, record)`` and the :class:`Invalid` ones (a folder of no shipped protocol included)."""
    valid, invalid = [], []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []:
        pid, _, version = folder.name.rpartition("-")
        files = sorted(folder.glob("*/*/*/*/fold-*.json"))
        if not files:
            continue
        try:
            protocol = load_protocol(f"{pid}/{version}")
        except ConfigError:
            invalid += [Invalid(p, None, f"{folder.name} is the folder of no protocol this plcore ships")
                        for p in files]
            continue
        found = scan(protocol, root, registry=registry, data_home=data_home, use_cache=False)
        valid += found.valid
        invalid += found.invalid
    return valid, invalid


def merge_trees(sources, into, *, registry=None, data_home=None, echo=None) -> MergeReport:
    """Merge the run files of the trees ``sources`` into the tree ``into``, which stays locked for
    the whole merge (``<into>/.merge.lock``, the operating system's lock through :mod:`filelock`:
    a second merge into it waits, then checks against what the first one copied).

    Everything is checked before anything is copied: a tree with a symbolic link
    (:func:`refuse_links`) and a SRC with no run file where :data:`LAYOUT` puts them are refused;
    every incoming file is validated (:func:`scan`), and the merge is refused naming each bad one;
    a valid file whose place (``run_path``: the row's folder names 8 hex digits of the spec hash)
    already holds a file in ``into`` (or in an earlier source) that differs from it in anything but
    where and when it ran (:func:`_same_setting`: another full spec hash too) is refused in one
    line naming both; one that does not is dropped as a duplicate. Each file is copied under its
    fold's claim (:func:`~plcore.leaderboard.runfile.claimed`, the lock ``leaderboard run`` holds
    while it computes a fold): a fold a run holds, or wrote since the check, is left to it and
    reported (:attr:`MergeReport.left`). Nothing is ever replaced."""
    from filelock import FileLock, Timeout

    into, sources = Path(into), [Path(s) for s in sources]
    for source in sources:
        if not source.is_dir():
            raise DataValidationError(f"{source}: no such folder of run files")
        refuse_links(source, f"merge {source}")
        if not any(source.glob("*/*/*/*/*/fold-*.json")):
            raise _no_run_files(source)
    refuse_links(into, f"--results {into}")
    created = not into.exists()
    into.mkdir(parents=True, exist_ok=True)
    lock = FileLock(into / ".merge.lock", timeout=0)
    try:
        try:
            lock.acquire()
        except Timeout:
            if echo is not None:
                echo(f"{into}: another merge into it is under way; waiting for it")
            lock.acquire(timeout=-1)
        try:
            into.mkdir(parents=True, exist_ok=True)  # a merge that waited: the first may have removed it
            return _merge(sources, into, registry, data_home)
        finally:
            (into / ".merge.lock").unlink(missing_ok=True)  # gone while held: a waiter re-checks it (filelock 4.2)
            lock.release()
    finally:
        if created and into.is_dir() and not any(into.iterdir()):
            with contextlib.suppress(OSError):  # another merge may have written into it meanwhile
                into.rmdir()


def _merge(sources, into: Path, registry, data_home) -> MergeReport:
    """:func:`merge_trees`'s work, under its lock."""
    valid, invalid = _scan_tree(into, registry, data_home)
    present = {p: (p, r) for p, r in valid}
    invalid_here = {bad.path for bad in invalid}
    plan, report, bad = [], MergeReport(), []
    for source in sources:
        valid, invalid = _scan_tree(source, registry, data_home)
        for b in invalid:  # one in the place of a file here names it: the file it would replace
            here = into / b.path.relative_to(source)
            bad.append(b.line() + (f" (not merged over {here})" if b.cell is not None and here in present else ""))
        for path, record in valid:
            target = run_path(into, record)
            if target in invalid_here:
                bad.append(f"{path}: would replace {target}, a run file that is invalid there (run `leaderboard "
                           "run` to replace it, or remove it)")
                continue
            if target in present:
                other_path, other = present[target]
                differs = _same_setting(other, record)
                if differs:
                    raise DataValidationError(f"{_describe(record)} differs between {other_path} and {path} "
                                              f"({differs}): nothing merged, nothing replaced; run `leaderboard "
                                              "verify` or bump the revision")
                report.duplicates.append(path)
                continue
            present[target] = (path, record)
            plan.append((path, record))
    if bad:
        raise DataValidationError(f"merge refused, nothing copied: {len(bad)} bad run file(s): " + "; ".join(bad))
    from plcore.leaderboard.runfile import claimed

    for path, record in plan:
        target = run_path(into, record)
        inside_tree(into, target)
        with claimed(target) as mine:  # a run into this tree computes the fold, or has just written it
            if not mine or target.exists():
                report.left.append(path)
                continue
            with atomic_write(target) as tmp:
                shutil.copyfile(path, tmp)
        report.copied.append(target)
    return report
