"""Frozen, versioned leaderboard protocols (issue 56, item 1; design note section 2.2).

A protocol is a YAML file shipped with plcore (``plcore/leaderboard/frozen/<id>-<version>.yaml``),
so that a plugin author who installs plcore runs the same thing. It holds the tracks (the metric,
the outer folds, the nested label-free selection, the deep budget) and the data sets, each with the
fingerprint of the data as loaded, how its candidate sets are made (its own, or a named bag
generator with its parameters and seed), the digest of those candidate sets and one digest per
outer fold (of the fold's sorted test rows, as OpenML stores its splits). A task may load another
data set than its name (``data: ecoli`` for ``ecoli-instance``); a track may take only some groups
of rows (``groups: [deep]``), give the deep rows their own selection (``deep.select``); a protocol
may be meant for a machine with a GPU (``requires: gpu``, refused by ``run`` elsewhere). Its hash
(:func:`protocol_hash`, the sha256 of its canonical JSON) goes into every run file; a test pins it,
so that a changed protocol needs a new version, and results of two versions never share a table.

:func:`describe_dataset` computes a data set's entry (how a protocol is frozen:
``python -m plcore.leaderboard.protocol freeze``); :func:`check_dataset` refuses, in one line,
data whose fingerprint, candidate sets or folds differ from the protocol's.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from plcore.exceptions import ConfigError, DataValidationError

__all__ = ["HEADLINE", "PROTOCOL_DIR", "Protocol", "Track", "DeepBudget", "available_protocols", "load_protocol", "protocol_hash",
           "describe_dataset", "check_dataset", "rows_digest", "track_splits",
           "split_digest", "fold_scores", "clustering_truth"]

#: the headline protocol (docs/results/leaderboard.md): what the leaderboard commands take without
#: ``--protocol`` (field/2 before it, its page docs/results/leaderboard_field2.md)
HEADLINE = "field/3"
#: the protocols shipped with plcore, frozen YAML data (their code: :mod:`plcore.run.protocols`)
PROTOCOL_DIR = Path(__file__).resolve().parent / "frozen"


def _canonical(data) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def protocol_hash(data: dict) -> str:
    """``sha256:<hex>`` of a protocol's canonical JSON (sorted keys, no spaces)."""
    return "sha256:" + hashlib.sha256(_canonical(data)).hexdigest()


def rows_digest(rows) -> str:
    """``sha256:<hex>`` of sorted row indices (a fold's test rows), as little-endian int64."""
    return "sha256:" + hashlib.sha256(np.sort(np.asarray(rows, dtype="<i8")).tobytes()).hexdigest()


def _candidates_digest(S) -> str:
    import scipy.sparse as sp

    dense = S.toarray() if sp.issparse(S) else np.asarray(S)
    return "sha256:" + hashlib.sha256(np.ascontiguousarray(dense, dtype=np.uint8).tobytes()).hexdigest()


@dataclass(frozen=True)
class DeepBudget:
    """A track's settings for its deep rows (``deep:``): the epochs (None: each learner's own),
    their own selection (None: the track's) and the search space of their parameters (None: each
    learner's declared grid)."""

    n_epochs: int | None = None
    select: dict | None = None
    space: dict | None = None

    @classmethod
    def from_dict(cls, data) -> DeepBudget:
        data = data or {}
        return cls(data.get("n_epochs"), data.get("select"), data.get("space") or None)


@dataclass(frozen=True)
class Track:
    """A protocol's track, typed (the file's ``tracks.<name>``): its seed, preprocessing, nested
    selection and metrics; the classification track's outer folds (``n_splits``) and reference
    learner, the clustering track's partitions (``rho``, ``n_partitions``, ``preprocessing_by_part``);
    the groups of rows it takes (None: every group) and its deep rows' budget. What the runner and
    the cost model read, the one way (:meth:`selection`, :meth:`space`, :meth:`n_epochs`)."""

    name: str
    seed: int
    preprocessing: str
    select: dict
    metrics: tuple
    n_splits: int | None = None
    rho: float | None = None
    n_partitions: int | None = None
    preprocessing_by_part: bool = False
    reference_learner: str | None = None
    groups: tuple | None = None
    deep: DeepBudget = DeepBudget()
    budget: object = None

    @classmethod
    def from_dict(cls, name: str, data: dict) -> Track:
        """The track ``name`` of a protocol file (its ``tracks.<name>`` mapping)."""
        from plcore.run.protocols import Budget

        return cls(name, data["seed"], data.get("preprocessing", "standardize"), dict(data.get("select", {})),
                   tuple(data.get("metrics", [data.get("metric", "accuracy")])), data.get("n_splits"),
                   data.get("rho"), data.get("n_partitions"), bool(data.get("preprocessing_by_part", False)),
                   data.get("reference_learner"), tuple(data["groups"]) if "groups" in data else None,
                   DeepBudget.from_dict(data.get("deep")),
                   Budget.from_dict(data["budget"]) if data.get("budget") else None)

    @property
    def metric(self) -> str:
        """The first metric (the classification track's only one)."""
        return self.metrics[0]

    def fit_rows(self, train, fold: int):
        """Under a ``budget``: the rows of outer fold ``fold``'s training rows ``train`` that its
        learners fit on (the rest are its validation rows: :func:`plcore.run.protocols.validation_split`)."""
        from plcore.run.protocols import fold_seeds, validation_split

        train = np.asarray(train)
        return train[validation_split(len(train), self.budget.validation, fold_seeds(self.seed, fold)["split"])[0]]

    def takes(self, group: str) -> bool:
        """Whether rows of ``group`` (``classic``, ``deep``, ``clustering``) are on this track."""
        return self.groups is None or group in self.groups

    def selection(self, group: str) -> dict:
        """The nested selection of a row of ``group``, as the protocol writes it (the deep rows'
        own where the track sets one, else the track's; the defaults are the selection's)."""
        return dict(self.deep.select if group == "deep" and self.deep.select is not None else self.select)

    def space(self, group: str) -> dict | None:
        """The protocol's search space of a row of ``group`` (the deep rows', where set), or None:
        the component's declared grid."""
        return self.deep.space if group == "deep" else None

    def n_epochs(self, group: str) -> int | None:
        """The epochs of a row of ``group`` (the deep rows', where set), or None: the learner's own."""
        return self.deep.n_epochs if group == "deep" else None

    @property
    def train_share(self) -> float:
        """The share of rows a fold's learners train on (the clustering track clusters every row;
        under a ``budget`` the fit rows its validation split leaves)."""
        if self.name != "classification":
            return 1.0
        share = 1.0 - 1.0 / self.n_splits
        return share * (1.0 - self.budget.validation) if self.budget is not None else share


@dataclass(frozen=True)
class Protocol:
    """A loaded protocol: its ``data`` (the file's content) and ``hash``."""

    data: dict
    hash: str
    _tracks: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def key(self) -> str:
        """``<id>/<version>`` (``field-smoke/1``)."""
        return f"{self.data['id']}/{self.data['version']}"

    @property
    def datasets(self) -> dict:
        """``{name: entry}`` in the file's order."""
        return {d["name"]: d for d in self.data["datasets"]}

    def track_datasets(self, track: str) -> list:
        """The data sets a track uses (each data set's ``tracks``, default every track), in order."""
        return [name for name, d in self.datasets.items() if track in d["splits"]]

    @property
    def tracks(self) -> dict:
        """``{name: Track}`` in the file's order."""
        return {name: self.track(name) for name in self.data["tracks"]}

    def track(self, name: str) -> Track:
        """The track ``name`` (:class:`Track`, built once per protocol: a scan asks for it per
        file); a track the protocol lacks is one line naming its tracks."""
        if name not in self._tracks:
            try:
                self._tracks[name] = Track.from_dict(name, self.data["tracks"][name])
            except KeyError:
                raise ConfigError(f"protocol {self.key} has no track {name!r}; its tracks: "
                                  f"{', '.join(self.data['tracks'])}") from None
        return self._tracks[name]


def available_protocols() -> list[str]:
    """The shipped protocols, ``<id>/<version>``, sorted."""
    out = []
    for path in sorted(PROTOCOL_DIR.glob("*.yaml")):
        stem, _, version = path.stem.rpartition("-")
        out.append(f"{stem}/{version}")
    return out


def load_protocol(key: str) -> Protocol:
    """The shipped protocol ``<id>/<version>`` (``field/1``); an unknown one is one line listing them."""
    import yaml

    pid, sep, version = str(key).partition("/")
    path = PROTOCOL_DIR / f"{pid}-{version}.yaml"
    if not sep or not version.isdigit() or not path.is_file():
        raise ConfigError(f"no leaderboard protocol {key!r}; the protocols: {', '.join(available_protocols())}")
    data = yaml.safe_load(path.read_text())
    if data.get("id") != pid or data.get("version") != int(version):
        raise ConfigError(f"{path.name} says it is {data.get('id')}/{data.get('version')}, not {key}")
    return Protocol(data, protocol_hash(data))


def _load(name: str, entry: dict, data_home=None):
    """The data set of an entry (the file ``entry["data"]`` names, default its own name), its
    candidate sets made as the entry says; the same entry is loaded once per process (a launcher's
    worker runs many rows on the same data)."""
    key = (name, _canonical({k: entry.get(k) for k in ("data", "load", "candidates")}),
           None if data_home is None else str(data_home))
    if key not in _LOADED:
        _LOADED[key] = _load_uncached(name, entry, data_home)
    return _LOADED[key]


#: ``_load``'s results in this process (the data sets are small; a task's data never change)
_LOADED: dict = {}


def _load_uncached(name: str, entry: dict, data_home=None):
    from plcore.datasets import load_dataset

    ds = load_dataset(entry.get("data", name), data_home=data_home, **entry.get("load", {}))
    source = entry["candidates"]
    if source == "native":
        if not ds.is_partial:
            raise DataValidationError(f"data set {name!r} has no candidate sets of its own")
        return ds, ds
    from plcore.registry import get_registry

    options = dict(source)
    generator = options.pop("generator")
    bags = get_registry().create("bags", generator, **{k: v for k, v in options.items() if k != "seed"})
    return ds, ds.with_candidates(bags.generate(ds.y_true, ds.X, source["seed"], n_classes=ds.n_classes))


def track_splits(spec: Track, track: str, drawn) -> list:
    """A track's splits of the data set ``drawn``: the classification track's shuffled k-fold
    outer folds ``(train, test)`` (``n_splits``, ``seed``) as the k-fold protocol draws them, the
    clustering track's partitions ``(labelled, evaluated)`` masks (``rho``, ``n_partitions``,
    ``seed``) as the clustering protocol draws them."""
    if track == "classification":
        from sklearn.model_selection import KFold

        return list(KFold(n_splits=spec.n_splits, shuffle=True, random_state=spec.seed).split(drawn.X))
    if track == "clustering":
        from plcore.run.protocols import clustering_partitions

        return clustering_partitions(drawn, rho=spec.rho, n_partitions=spec.n_partitions, splits="random",
                                     random_state=spec.seed)
    raise ConfigError(f"no leaderboard track {track!r}; the tracks: classification, clustering")


def split_digest(track: str, split) -> str:
    """The digest a protocol keeps of a split: of a fold's test rows, of a partition's labelled rows."""
    return rows_digest(split[1] if track == "classification" else np.flatnonzero(split[0]))


def fold_scores(spec: Track, track: str, drawn, split, pred, *, fold: int | None = None, tuning=None) -> dict:
    """The scores of one split's predictions, recomputed from them (never read from a file):
    the classification track's metric on the test rows; the clustering track's metrics (ACC by the
    best cluster map, NMI) on the evaluated rows over the classes with a true instance. Under a
    budget (``tuning``: a run file's, of outer fold ``fold``) also the default's metric
    (``default_<metric>``) and the fit rows' disambiguation accuracy of the tuned choice and of the
    default (``disambiguation``, ``default_disambiguation``); predictions of another length than
    their rows are refused in one line."""
    from plcore.leaderboard.runfile import unpack_predictions
    from plcore.metrics import accuracy, clustering_accuracy, nmi

    pred = np.asarray(pred)
    if track == "classification":
        out = {spec.metric: _scored(accuracy, drawn.y_true[split[1]], pred, "test rows")}
        if spec.budget is not None and tuning is not None:
            fit = spec.fit_rows(split[0], fold)
            out[f"default_{spec.metric}"] = _scored(accuracy, drawn.y_true[split[1]],
                                                    unpack_predictions(tuning["default"]["predictions"]),
                                                    "test rows (default)")
            for name, key in (("disambiguation", "tuned"), ("default_disambiguation", "default")):
                out[name] = _scored(accuracy, drawn.y_true[fit], unpack_predictions(tuning["disambiguation"][key]),
                                    f"fit rows ({key})")
        return out
    y, evaluated = clustering_truth(drawn), split[1]
    found = {"acc": clustering_accuracy, "nmi": nmi}
    return {m: float(found[m](y[evaluated], pred[evaluated])) for m in spec.metrics}


def _scored(metric, y, pred, what: str) -> float:
    if len(pred) != len(y):
        raise DataValidationError(f"{len(pred)} predictions for {len(y)} {what}")
    return metric(y, pred)


def clustering_truth(drawn) -> np.ndarray:
    """The true labels as columns of the clustering track's candidate matrix: the classes with a
    true instance, in label order (the clustering protocol's ``classes="present"``)."""
    from plcore.run.protocols import present_classes

    keep = present_classes(drawn, "present")
    position = np.full(drawn.n_classes, -1)
    position[keep] = np.arange(keep.size)
    return position[drawn.y_true]


def _folds(entry: dict, track: str):
    """How many of a track's splits a data set runs (its ``folds``, the first ones; None: all)."""
    return entry.get("folds") if track == "classification" else None


def describe_dataset(name: str, candidates, tracks: dict, *, load: dict | None = None, data_home=None,
                     only: list | None = None, data: str | None = None, folds: int | None = None) -> dict:
    """A protocol's entry for a data set: its fingerprint as loaded, the candidate sets' source
    (``"native"``, or ``{"generator": ..., <parameters>, "seed": ...}``) and digest, and per track
    the digest of each split's test rows: the classification track's shuffled k-fold outer folds
    (``n_splits``, ``seed``) as the k-fold protocol draws them, the clustering track's partitions'
    labelled rows (``rho``, ``n_partitions``, ``seed``) as the clustering protocol draws them;
    ``only`` names the tracks that use the data set (default: every track); ``data`` the data set
    to load where the task's ``name`` differs from it (``ecoli-instance``: ``ecoli`` with
    instance-dependent candidate sets); ``folds`` how many of the classification track's outer
    folds it runs (the first ones; default all)."""
    entry = {"name": name, **({"data": data} if data else {}), "candidates": candidates,
             **({"load": load} if load else {}),
             **({"tracks": list(only)} if only else {}), **({"folds": int(folds)} if folds else {})}
    ds, drawn = _load(name, entry, data_home)
    splits = {track: [split_digest(track, split) for split in track_splits(Track.from_dict(track, tracks[track]),
                                                                           track, drawn)][:_folds(entry, track)]
              for track in ("classification", "clustering") if track in tracks and track in (only or tracks)}
    entry.update(fingerprint=ds.fingerprint(), n_samples=int(ds.n_samples), n_classes=int(ds.n_classes),
                 candidates_digest=_candidates_digest(drawn.S), splits=splits)
    return entry


def check_dataset(protocol: Protocol, name: str, data_home=None) -> dict:
    """The protocol's entry for ``name``, after checking the data here against it: a fingerprint,
    candidate sets or splits that differ are refused in one line (the results would not be
    comparable). Returns the entry."""
    entry = protocol.datasets.get(name)
    if entry is None:
        raise ConfigError(f"protocol {protocol.key} has no data set {name!r}; its data sets: "
                          f"{', '.join(protocol.datasets)}")
    here = describe_dataset(name, entry["candidates"], protocol.data["tracks"], load=entry.get("load"),
                            data_home=data_home, only=entry.get("tracks"), data=entry.get("data"),
                            folds=entry.get("folds"))
    for key, what in (("fingerprint", "its fingerprint"), ("candidates_digest", "its candidate sets"),
                      ("splits", "its folds")):
        if here[key] != entry[key]:
            shown = (f"{here[key]} here, {entry[key]} in the protocol" if key != "splits"
                     else "the test rows of its folds differ")
            raise DataValidationError(f"data set {name!r} differs from protocol {protocol.key}: {what} ({shown}); "
                                      "its results would not be comparable")
    return entry


def checked_data(protocol: Protocol, name: str, data_home=None):
    """The data set ``name`` checked against the protocol (:func:`check_dataset`), loaded with its
    candidate sets, and the splits of each track that uses it: ``((ds, drawn), {track: splits})``."""
    entry = check_dataset(protocol, name, data_home=data_home)
    data = _load(name, entry, data_home)
    return data, {t: track_splits(protocol.track(t), t, data[1])[:_folds(entry, t)] for t in protocol.data["tracks"]
                  if name in protocol.track_datasets(t)}


def _freeze(key: str, data_home=None) -> str:
    """The protocol ``key``'s file with every data set's entry computed again (``freeze``): the
    fingerprints and digests of a new protocol version, from its tracks and its data sets'
    ``name``, ``candidates`` and ``load``."""
    import yaml

    pid, _, version = key.partition("/")
    path = PROTOCOL_DIR / f"{pid}-{version}.yaml"
    data = yaml.safe_load(path.read_text())
    data["datasets"] = [describe_dataset(d["name"], d["candidates"], data["tracks"], load=d.get("load"),
                                         data_home=data_home, only=d.get("tracks"), data=d.get("data"),
                                         folds=d.get("folds"))
                        for d in data["datasets"]]
    header = "".join(line + "\n" for line in path.read_text().splitlines() if line.startswith("#"))
    return header + yaml.safe_dump(data, sort_keys=False, width=120)


if __name__ == "__main__":  # python -m plcore.leaderboard.protocol freeze field-smoke/1 > file
    if sys.argv[1:2] != ["freeze"] or len(sys.argv) != 3:
        sys.exit("usage: python -m plcore.leaderboard.protocol freeze <id>/<version>  (prints the frozen file)")
    sys.stdout.write(_freeze(sys.argv[2]))
