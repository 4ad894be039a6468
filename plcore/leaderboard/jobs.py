"""Who is on the leaderboard, and how far each cell is (issue 56, item 3; design note 2.3, 2.7).

The entries come from the registry, not from a hand list: every installed learner joins the
``classification`` track, every reducer joins it paired with the protocol's reference learner,
every clusterer the ``clustering`` track. A component tagged ``exact_label_baseline`` (it is
trained on true labels) goes to the unranked ``reference`` section. A component's
``ComponentSpec.leaderboard`` opts it out (``False``), names data sets it cannot run
(``{"na": {data set: reason}}``) or another track. An entry is keyed by its name, its
``leaderboard_revision`` and the hash of its spec (:func:`spec_hash`), so that a changed default
or grid makes a new row instead of mixing results.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from plcore.exceptions import ConfigError
from plcore.leaderboard.protocol import Protocol, Track
from plcore.leaderboard.runfile import iter_runs, row_key

__all__ = ["Entry", "Estimate", "fold_work", "spec_hash", "entries", "chosen", "create_component", "component_setup", "fits_per_fold",
           "estimate_missing", "cost_text", "duration", "TRACK_OF_KIND"]

#: the track each kind joins by default
TRACK_OF_KIND = {"learner": "classification", "reducer": "classification", "clusterer": "clustering"}


def spec_hash(spec) -> str:
    """``sha256:<hex>`` of what defines a component's runs: its class, its config (with the
    overrides), its declared grid and search distributions."""
    data = {"target": spec.target, "config": spec.config, "config_overrides": spec.config_overrides,
            "search_space": spec.search_space, "search_distributions": spec.search_distributions}
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), default=repr)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


@dataclass
class Entry:
    """One row of a track: a component (with the reference learner for a reducer), where it
    ranks (``ranked`` or ``reference``, and its ``group``: ``classic``, ``deep`` or
    ``clustering``) and the data sets it declares it cannot run."""

    kind: str
    name: str
    display_name: str
    track: str
    section: str
    revision: int
    spec_hash: str
    distribution: str
    version: str
    pipeline: list
    na: dict = field(default_factory=dict)
    group: str = "classic"

    @property
    def key(self) -> str:
        """``name@r<revision>-<spec8>``, as the run files' folder names it."""
        return row_key({"name": self.name, "revision": self.revision, "spec_hash": self.spec_hash})


def _placing(registry, kind: str, name: str) -> tuple[str, str]:
    """Where a component's row goes: its section (``reference`` for a learner trained on true
    labels, else ``ranked``) and its group inside the track, each with its own ranks and
    critical-difference diagram (``deep`` for learners trained by epochs, ``classic`` for the
    other learners and the reducers, ``clustering`` for clusterers)."""
    from plcore.tags import get_pll_tags

    if kind == "clusterer":
        return "ranked", "clustering"
    tags = get_pll_tags(registry.create(kind, name))
    section = "reference" if kind == "learner" and tags.exact_label_baseline else "ranked"
    return section, "deep" if kind == "learner" and tags.epoch_checkpoints else "classic"


def entries(protocol: Protocol, registry) -> list[Entry]:
    """Every installed component the protocol's tracks take (a track's ``groups``, where it names
    them, limits it to those groups), in track, kind and name order."""
    out = []
    tracks = protocol.tracks
    reference = tracks["classification"].reference_learner if "classification" in tracks else None
    for kind in ("learner", "reducer", "clusterer"):
        for name in registry.names(kind):
            comp = registry.get(kind, name)
            opt = comp.spec.leaderboard
            if opt is False:
                continue
            opt = opt if isinstance(opt, dict) else {}
            track = opt.get("track", TRACK_OF_KIND[kind])
            if track not in tracks:
                continue
            section, group = _placing(registry, kind, name)
            if not tracks[track].takes(group):  # vision/1: deep rows only
                continue
            pipeline = [name, reference] if kind == "reducer" and reference else [name]
            out.append(Entry(kind, name, comp.spec.display_name, track, section, comp.spec.leaderboard_revision,
                             spec_hash(comp.spec), comp.distribution, comp.version, pipeline,
                             dict(opt.get("na", {})), group))
    return sorted(out, key=lambda e: (e.track, e.section != "ranked", e.kind, e.name))


def create_component(registry, kind: str, name: str, seed=None):
    """The component as its Hydra node composes it (the constructor's defaults and the spec's
    ``config_overrides``); with ``seed``, a ``random_state`` left unset is fixed to it, so that a
    fold gives the same predictions wherever it runs (``verify``)."""
    est = registry.create(kind, name, **registry.get(kind, name).spec.config_overrides)
    params = est.get_params(deep=False)
    if seed is not None and "random_state" in params and params["random_state"] is None:
        est.set_params(random_state=seed)
    return est


def _grid(registry, kind: str, name: str) -> tuple[int, int]:
    """(points of a component's declared grid, how many of them one fit serves: the product of the
    values of its ``path_params``, which a classic learner fits together)."""
    import math

    from plcore.tags import get_pll_tags

    comp = registry.components.get((kind, name))
    if comp is None or not comp.spec.search_space:
        return 1, 1
    space = comp.spec.search_space
    path = get_pll_tags(registry.create(kind, name)).path_params if kind == "learner" else ()
    return math.prod(len(v) for v in space.values()), math.prod(len(v) for k, v in space.items() if k in path)


#: the rows of a deep learner's step by default (plcore-deep's batch), a budget's step in training rows
_STEP_ROWS = 128


def fits_per_fold(spec: Track, entry: Entry, registry) -> float:
    """The fits one fold of ``entry`` makes under a track's settings ``spec``: the grid's points
    (a reducer's times its learner's; a deep learner's the protocol's ``deep.space``) searched by
    the inner folds, then the refit (a clustering partition fits each point once), times the
    epochs where a deep learner's are set (over its own default otherwise). A classic learner's
    ``path_params`` values cost one fit together; a deep learner's stacked points are counted one
    each (an estimate on the high side)."""
    import math

    if spec.budget is not None:  # every configuration fitted once
        return float(spec.budget.configurations)
    deep = entry.group == "deep"
    space = spec.space(entry.group)
    if space:
        points, together = math.prod(len(v) for v in space.values()), 1
    else:
        points, together = 1, 1
        for kind, name in zip(("reducer", "learner") if entry.kind == "reducer" else (entry.kind,), entry.pipeline):
            p, t = _grid(registry, kind, name)
            points, together = points * p, together * t
    from plcore.run.defaults import SELECT_DEFAULTS

    select = {**SELECT_DEFAULTS, **spec.selection(entry.group)}  # the deep rows' own where set
    tried = min(points, select["n_iter"]) if select["method"] == "random" else points
    if select["method"] == "none" or points <= 1:
        fits = 1.0
    elif entry.track == "clustering":
        fits = float(tried)
    else:
        fits = max(1, tried // together if select["method"] == "grid" else tried) * select["cv"] + 1.0
    if deep:
        default = create_component(registry, "learner", entry.name).get_params().get("n_epochs") or 1
        fits *= (spec.n_epochs(entry.group) or default) / default
    return fits


def fold_work(protocol: Protocol, entry: Entry, dataset: str, registry, fits: float | None = None) -> float:
    """A fold's work, what the cost model scales seconds by: fits x training rows
    (:func:`fits_per_fold`); a deep row's under a budget of steps: its steps in training rows (a
    step of ``_STEP_ROWS`` rows) over its learner's default epochs, as :func:`fits_per_fold` counts
    a deep fit's epochs."""
    spec = protocol.track(entry.track)
    if spec.budget is not None and entry.group == "deep":
        default = create_component(registry, "learner", entry.name).get_params().get("n_epochs") or 1
        return spec.budget.configurations * spec.budget.steps * _STEP_ROWS / default
    fits = fits_per_fold(spec, entry, registry) if fits is None else fits
    return fits * _train_rows(protocol, entry.track, dataset)


@dataclass
class Estimate:
    """What :func:`estimate_missing` found: the seconds on one core of the folds not yet run, per
    row (``by_row[key]``), and how many cells each way was scaled from: ``same`` (the row's own
    folds on the data set under another protocol), ``row`` (the row's folds on other data sets, per
    training row and fit), ``group`` (its group's median per training row and fit: a row never
    run), ``probed`` (a probe fit of a row never run: :func:`plcore.leaderboard.runner.probe_rate`)
    and ``unknown`` (nothing measured in its group either); ``guessed``: the rows priced by their
    group's median or not at all (what ``list`` probes)."""

    seconds: float = 0.0
    by_row: dict = field(default_factory=dict)
    same: int = 0
    row: int = 0
    group: int = 0
    unknown: int = 0
    probed: int = 0
    guessed: set = field(default_factory=set)


def _train_rows(protocol: Protocol, track: str, dataset: str) -> float:
    """The rows one fold of ``dataset`` trains on (every row for the clustering track)."""
    return protocol.datasets[dataset]["n_samples"] * protocol.track(track).train_share


def estimate_missing(protocol: Protocol, rows: list[Entry], states: dict, results, registry, *,
                     own: bool = True, probed: dict | None = None) -> Estimate:
    """The cost of the folds not yet run (:class:`Estimate`). A missing fold costs, in this order
    of preference: the mean wall time of the same row's folds on the same data set under another
    protocol of ``results``, times the ratio of fits per fold (:func:`fits_per_fold`) and of
    training rows; else the row's median seconds per training row and fit over its measured
    folds (any protocol, this one included) times this fold's; else the median of that rate over
    the measured rows of its group (how a row that has never run is estimated before it runs).
    The cost model is linear in training rows and fits (docs/leaderboard.md, "field/2: the cost
    model"); a cell with nothing to scale from is counted, not guessed. ``own=False`` leaves this
    protocol's own files out (the estimate as it was before any of its folds ran). A protocol
    without a budget is priced from the files of protocols without one (a budget's fold, every
    configuration at a fixed number of steps, scales to no epoch-counted fold); a budget protocol
    from every protocol's files, a deep row's budget of steps scaled by its steps."""
    import numpy as np

    from plcore.exceptions import ConfigError
    from plcore.leaderboard.protocol import load_protocol

    measured: dict = {}
    rates: dict = {}
    others: dict = {protocol.key: protocol}
    fits_memo: dict = {}

    def fits(p: Protocol, entry: Entry) -> float:
        key = (p.key, entry.track, entry.key)
        if key not in fits_memo:
            fits_memo[key] = fits_per_fold(p.track(entry.track), entry, registry)
        return fits_memo[key]

    def work(p: Protocol, entry: Entry, dataset: str) -> float:
        return fold_work(p, entry, dataset, registry, fits(p, entry))

    installed = {(e.track, e.key): e for e in entries(protocol, registry)} | {(e.track, e.key): e for e in rows}
    for _, rec in iter_runs(results, skip_unreadable=True):
        wall = rec.seconds("wall_s")
        if not rec.ok or isinstance(wall, bool) or not isinstance(wall, (int, float)):
            continue
        pkey = rec.protocol.key
        if pkey not in others:
            try:
                others[pkey] = load_protocol(pkey)
            except ConfigError:  # a protocol this plcore does not ship: its times cannot be scaled
                others[pkey] = None
        other = others[pkey]
        dataset = rec.dataset.name
        if other is None or other.hash != rec.protocol.hash or dataset not in other.datasets:
            continue
        if not own and other.hash == protocol.hash:
            continue
        mine, theirs = protocol.tracks.get(rec.track), other.tracks.get(rec.track)
        if theirs is not None and theirs.budget is not None and (mine is None or mine.budget is None):
            continue  # a budget's fold (configurations x steps) prices no fold of a protocol without one
        key = rec.component.row_key
        entry = installed.get((rec.track, key))
        if entry is None or entry.spec_hash != rec.component.spec_hash:  # the key holds 8 hex digits of it
            continue
        rates.setdefault((entry.group, key), []).append(wall / work(other, entry, dataset))
        if other.hash != protocol.hash:
            measured.setdefault((key, dataset), {}).setdefault(other.key, (other, []))[1].append(wall)
    row_rate = {key: float(np.median(v)) for (_, key), v in rates.items()}
    group_rate = {}
    for (group, key), _ in rates.items():
        group_rate.setdefault(group, []).append(row_rate[key])
    group_rate = {g: float(np.median(v)) for g, v in group_rate.items()}
    out = Estimate()
    for entry in rows:
        for dataset in protocol.track_datasets(entry.track):
            state = "na" if dataset in entry.na else states.get((entry.key, dataset), "not run")
            n = len(protocol.datasets[dataset]["splits"][entry.track])
            missing = n if state in ("not run", "invalid") else n - int(state.split()[1].split("/")[0]) if (
                state.startswith("partial")) else 0
            if not missing:
                continue
            source = measured.get((entry.key, dataset))
            here = work(protocol, entry, dataset)
            if source:
                other, times = source[sorted(source)[0]]
                cost = missing * sum(times) / len(times) * here / work(other, entry, dataset)
                out.same += 1
            elif entry.key in row_rate:
                cost = missing * row_rate[entry.key] * here
                out.row += 1
            elif probed and probed.get(entry.key) is not None:
                cost = missing * probed[entry.key] * here
                out.probed += 1
            elif entry.group in group_rate:
                cost = missing * group_rate[entry.group] * here
                out.group += 1
                out.guessed.add(entry.key)
            else:
                out.unknown += 1
                out.guessed.add(entry.key)  # nothing to scale from: a probe prices it
                continue
            out.seconds += cost
            out.by_row[entry.key] = out.by_row.get(entry.key, 0.0) + cost
    return out


def cost_text(estimate: Estimate, cells: int) -> str:
    """How an :class:`Estimate` is said: "about 1.2 h on one core", how its cells were scaled,
    and the cells that had no measurement; "no estimate" when none had one."""
    if estimate.unknown >= cells:
        return "no estimate (no fold of these rows, nor of any row of their group, measured in the results)"
    ways = [f"{n} from {what}" for n, what in ((estimate.same, "the same cells under another protocol"),
                                                 (estimate.row, "the same rows on other data sets"),
                                                 (estimate.probed, "a probe fit of each row never run"),
                                                 (estimate.group, "their group's median (rows never run)")) if n]
    return (f"{duration(estimate.seconds)} on one core (cells scaled: {'; '.join(ways)})"
            + (f"; {estimate.unknown} of the {cells} cells with nothing to scale from, not counted"
               if estimate.unknown else ""))


def duration(seconds: float) -> str:
    return f"about {seconds / 3600:.1f} h" if seconds >= 5400 else f"about {max(seconds / 60, 0.1):.1f} min"


def chosen(rows, only=None, track=None, group=None):
    """The rows named by ``only`` (``KIND:NAME``; a name that is no row is one line listing them),
    in ``track`` and in ``group``."""
    if track is not None:
        rows = [e for e in rows if e.track == track]
    if group is not None:
        rows = [e for e in rows if e.group == group]
    if not only:
        return rows
    keys = {f"{e.kind}:{e.name}": e for e in rows}
    unknown = [k for k in only if k not in keys]
    if unknown:
        raise ConfigError(f"--only {', '.join(unknown)}: no such row; the rows: {', '.join(sorted(keys))}")
    return [keys[k] for k in only]


def component_setup(protocol: Protocol, entry: Entry, registry):
    """The run's components of a row: the entry's estimator (a reducer with the reference learner), a deep
    learner with the protocol's epochs; and the selection settings for them."""
    from plcore.run.protocols import Setup
    from plcore.run.selection import check_select

    spec = protocol.track(entry.track)
    if entry.kind == "clusterer":
        setup = Setup(clusterer=create_component(registry, "clusterer", entry.name, spec.seed))
        return setup, check_select(spec.selection(entry.group), setup, registry)
    if entry.kind == "reducer":
        setup = Setup(reducer=create_component(registry, "reducer", entry.name, spec.seed),
                      learner=create_component(registry, "learner", entry.pipeline[1], spec.seed))
    else:
        setup = Setup(learner=create_component(registry, entry.kind, entry.name, spec.seed))
    if spec.budget is not None:  # field/3: every row's configurations drawn from its declared space
        drawn = check_select({"method": "random", "n_iter": max(1, spec.budget.configurations - 1),
                              "missing": "skip"}, setup, registry)
        return setup, {**drawn, "method": "budget", "space": drawn.get("space") or {}}
    select = spec.selection(entry.group)  # the deep rows' own where set (field/2: none, each method's defaults)
    if spec.n_epochs(entry.group) is not None:  # else the learner's own
        setup.learner.set_params(n_epochs=spec.n_epochs(entry.group))
    if spec.space(entry.group):
        select["space"] = {f"learner.{k}": list(v) for k, v in spec.space(entry.group).items()}
    return setup, check_select(select, setup, registry)
