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
from plcore.leaderboard.protocol import Protocol
from plcore.leaderboard.runfile import iter_runs, row_key, state_of

__all__ = ["Entry", "spec_hash", "entries", "chosen", "create_component", "cell_states", "fits_per_fold",
           "estimate_missing", "cost_text", "TRACK_OF_KIND"]

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
    """Every installed component the protocol's tracks take, in track, kind and name order."""
    out = []
    reference = protocol.data["tracks"].get("classification", {}).get("reference_learner")
    for kind in ("learner", "reducer", "clusterer"):
        for name in registry.names(kind):
            comp = registry.get(kind, name)
            opt = comp.spec.leaderboard
            if opt is False:
                continue
            opt = opt if isinstance(opt, dict) else {}
            track = opt.get("track", TRACK_OF_KIND[kind])
            if track not in protocol.data["tracks"]:
                continue
            section, group = _placing(registry, kind, name)
            pipeline = [name, reference] if kind == "reducer" and reference else [name]
            out.append(Entry(kind, name, comp.spec.display_name, track, section, comp.spec.leaderboard_revision,
                             spec_hash(comp.spec), comp.distribution, comp.version, pipeline,
                             dict(opt.get("na", {})), group))
    return sorted(out, key=lambda e: (e.track, e.section != "ranked", e.kind, e.name))


def cell_states(protocol: Protocol, rows: list[Entry], results) -> dict:
    """``{(entry key, data set): state}``: ``done`` (every split ok), ``failed`` / ``timeout``
    (every split has a final state, one of them this one), ``na`` (declared, or every split na),
    ``partial k/n`` (k splits have a file) or ``not run``, from the run files under ``results``
    made under this protocol's hash (files of another hash are not counted)."""
    have: dict = {}
    for _, rec in iter_runs(results, f"{protocol.data['id']}-{protocol.data['version']}"):
        if rec["protocol"]["hash"] != protocol.hash:
            continue
        have.setdefault((rec["track"], row_key(rec["component"]), rec["dataset"]["name"]), []).append(rec["status"])
    states = {}
    for entry in rows:
        for dataset in protocol.track_datasets(entry.track):
            n = len(protocol.datasets[dataset]["splits"][entry.track])
            got = have.get((entry.track, entry.key, dataset), [])
            states[(entry.key, dataset)] = "na" if dataset in entry.na else state_of(got, n)
    return states


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


def fits_per_fold(spec: dict, entry: Entry, registry) -> float:
    """The fits one fold of ``entry`` makes under a track's settings ``spec``: the grid's points
    (a reducer's times its learner's; a deep learner's the protocol's ``deep.space``) searched by
    the inner folds, then the refit (a clustering partition fits each point once), times the
    epochs where a deep learner's are set (over its own default otherwise). A classic learner's
    ``path_params`` values cost one fit together; a deep learner's stacked points are counted one
    each (an estimate on the high side)."""
    import math

    deep = entry.group == "deep"
    if deep and spec.get("deep", {}).get("space"):
        points, together = math.prod(len(v) for v in spec["deep"]["space"].values()), 1
    else:
        points, together = 1, 1
        for kind, name in zip(("reducer", "learner") if entry.kind == "reducer" else (entry.kind,), entry.pipeline):
            p, t = _grid(registry, kind, name)
            points, together = points * p, together * t
    from plcore.run.defaults import SELECT_DEFAULTS

    select = {**SELECT_DEFAULTS, **spec.get("select", {})}
    tried = min(points, select["n_iter"]) if select["method"] == "random" else points
    if select["method"] == "none" or points <= 1:
        fits = 1.0
    elif entry.track == "clustering":
        fits = float(tried)
    else:
        fits = max(1, tried // together if select["method"] == "grid" else tried) * select["cv"] + 1.0
    if deep:
        default = create_component(registry, "learner", entry.name).get_params().get("n_epochs") or 1
        fits *= (spec.get("deep", {}).get("n_epochs") or default) / default
    return fits


def estimate_missing(protocol: Protocol, rows: list[Entry], states: dict, results, registry) -> tuple[float, int]:
    """(estimated seconds of the folds not yet run, cells with no measurement to scale): each
    missing fold costs the mean wall time of the same row's folds on the same data set under
    another protocol of ``results``, times the ratio of fits per fold (:func:`fits_per_fold`) and
    of training rows. A cell with no such measurement is counted, not guessed."""
    from plcore.exceptions import ConfigError
    from plcore.leaderboard.protocol import load_protocol

    measured: dict = {}
    others: dict = {}
    for _, rec in iter_runs(results):
        if rec["protocol"]["hash"] == protocol.hash or rec["status"] != "ok" or "wall_s" not in rec.get("timing", {}):
            continue
        p = rec["protocol"]
        if (p["id"], p["version"]) not in others:
            try:
                others[(p["id"], p["version"])] = load_protocol(f"{p['id']}/{p['version']}")
            except ConfigError:  # a protocol this plcore does not ship: its times cannot be scaled
                others[(p["id"], p["version"])] = None
        other = others[(p["id"], p["version"])]
        if other is not None:
            key = (row_key(rec["component"]), rec["dataset"]["name"])
            measured.setdefault(key, {}).setdefault(other.key, (other, []))[1].append(rec["timing"]["wall_s"])
    seconds, unknown = 0.0, 0
    for entry in rows:
        spec = protocol.track(entry.track)
        for dataset in protocol.track_datasets(entry.track):
            state = "na" if dataset in entry.na else states.get((entry.key, dataset), "not run")
            n = len(protocol.datasets[dataset]["splits"][entry.track])
            missing = n if state == "not run" else n - int(state.split()[1].split("/")[0]) if state.startswith(
                "partial") else 0
            if not missing:
                continue
            source = measured.get((entry.key, dataset))
            if not source:
                unknown += 1
                continue
            other, times = source[sorted(source)[0]]
            ratio = fits_per_fold(spec, entry, registry) / fits_per_fold(other.track(entry.track), entry, registry)
            rows_ratio = _train_share(spec, entry.track) / _train_share(other.track(entry.track), entry.track)
            seconds += missing * sum(times) / len(times) * ratio * rows_ratio
    return seconds, unknown


def cost_text(seconds: float, unknown: int, cells: int) -> str:
    """How :func:`estimate_missing`'s figures are said: "about 1.2 h on one core, scaled from the
    other tiers' folds", with the cells that had no measurement; "no estimate" when none had one."""
    if unknown >= cells:
        return "no estimate (no fold of these rows on these data sets under another protocol to scale)"
    return (f"about {seconds / 3600:.1f} h on one core, scaled from the other tiers' folds"
            + (f" ({unknown} of the {cells} cells with no measurement to scale, not counted)" if unknown else ""))


def _train_share(spec: dict, track: str) -> float:
    """The share of rows a fold trains on (the clustering track clusters every row)."""
    return 1.0 - 1.0 / spec["n_splits"] if track == "classification" else 1.0


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
