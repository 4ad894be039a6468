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

from plcore.leaderboard.protocol import Protocol
from plcore.leaderboard.runfile import iter_runs

__all__ = ["Entry", "spec_hash", "entries", "cell_states", "TRACK_OF_KIND"]

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
        return f"{self.name}@r{self.revision}-{self.spec_hash.split(':', 1)[-1][:8]}"


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
        c = rec["component"]
        key = f"{c['name']}@r{c['revision']}-{c['spec_hash'].split(':', 1)[-1][:8]}"
        have.setdefault((rec["track"], key, rec["dataset"]["name"]), []).append(rec["status"])
    states = {}
    for entry in rows:
        for dataset in protocol.track_datasets(entry.track):
            n = len(protocol.datasets[dataset]["splits"][entry.track])
            got = have.get((entry.track, entry.key, dataset), [])
            if dataset in entry.na:
                state = "na"
            elif len(got) < n:
                state = f"partial {len(got)}/{n}" if got else "not run"
            elif all(s == "ok" for s in got):
                state = "done"
            else:
                state = next(s for s in ("failed", "timeout", "na") if s in got)
            states[(entry.key, dataset)] = state
    return states
