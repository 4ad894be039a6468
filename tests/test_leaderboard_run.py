"""``leaderboard run`` and ``merge`` (issue 56, item 4; design note tests 4, 5 and 7): the missing
folds of the chosen rows written as run files, the same predictions the k-fold protocol makes, a
failing method kept as a failed fold in one line, a killed run resumed with only the missing
folds, and two machines' files merged into the tree of a single run."""

from collections import defaultdict

import numpy as np

from plcore.base import BaseClusterer
from plcore.leaderboard import iter_runs, load_protocol, pack_predictions, unpack_predictions
from plcore.leaderboard.jobs import chosen, entries
from plcore.leaderboard.runner import run_missing
from plcore.learners import PlKnnLearner
from plcore.registry import ComponentSpec, Registry, hookimpl

PROTOCOL = load_protocol("field-smoke/1")

def _records(*args):
    """``(path, record)`` of the run files under a folder (:func:`iter_runs`), each as the dict it is written as."""
    return [(p, r.to_dict()) for p, r in iter_runs(*args)]



class _Broken(PlKnnLearner):
    """A learner whose fit fails, naming a file of this machine."""

    def fit(self, X, y):
        raise RuntimeError("cannot read /home/someone/weights.bin")


class _Plugin:
    @hookimpl
    def plcore_components(self):
        return [ComponentSpec("learner", "foo", PlKnnLearner, search_space={"k": [3, 7]}),
                ComponentSpec("learner", "broken", _Broken)]


def _rows(only):
    reg = Registry()
    reg.register(_Plugin(), name="foo-plugin", distribution="plcore-foo", version="0.3")
    reg.load(entry_points=False)
    return reg, chosen(entries(PROTOCOL, reg), only)


def test_a_plugin_row_runs_every_fold_as_the_kfold_protocol_would(tmp_path):
    from plcore.datasets import UniformBags, load_dataset
    from plcore.run.protocols import Setup, kfold

    reg, rows = _rows(["learner:foo"])
    lines = []
    written = run_missing(PROTOCOL, rows, tmp_path, registry=reg, echo=lines.append)
    assert len(written) == 4 and len(lines) == 4 and all(" accuracy=" in line for line in lines)
    runs = {(r["dataset"]["name"], r["fold"]["index"]): r for _, r in _records(tmp_path)}
    assert set(runs) == {("iris", 0), ("iris", 1), ("wine", 0), ("wine", 1)}
    spec = PROTOCOL.track("classification")
    for name in ("iris", "wine"):
        res = kfold(Setup(learner=PlKnnLearner(), bags=UniformBags(r=1)), load_dataset(name),
                    n_splits=spec.n_splits, random_state=spec.seed, refit=False, progress=False,
                    select={**spec.select, "space": {"learner.k": [3, 7]}})
        by_fold = defaultdict(list)
        for row in res.predictions:
            by_fold[row["step"]].append((row["index"], row["y_pred"], row["y_true"]))
        for fold, rows_ in by_fold.items():
            rec = runs[(name, fold)]
            pred = unpack_predictions(rec["predictions"])
            np.testing.assert_array_equal(pred, [p for _, p, _ in sorted(rows_)])
            assert rec["scores"]["accuracy"] == np.mean([p == t for _, p, t in rows_])
            assert rec["selection"]["chosen"]["learner.k"] in (3, 7) and rec["component"]["distribution"] == "plcore-foo"


def test_a_failing_method_is_a_failed_fold_in_one_line_without_machine_paths(tmp_path):
    reg, rows = _rows(["learner:broken"])
    run_missing(PROTOCOL, rows, tmp_path, registry=reg, datasets=["iris"], echo=lambda line: None)
    recs = [r for _, r in _records(tmp_path)]
    assert [r["status"] for r in recs] == ["failed", "failed"]
    assert recs[0]["error"] == "RuntimeError: cannot read weights.bin"


def test_a_killed_run_resumes_with_only_the_missing_folds(tmp_path):
    reg, rows = _rows(["learner:foo"])
    run_missing(PROTOCOL, rows, tmp_path, registry=reg, echo=lambda line: None)
    before = {p: p.read_bytes() for p, _ in _records(tmp_path)}
    assert run_missing(PROTOCOL, rows, tmp_path, registry=reg, echo=lambda line: None) == []  # nothing missing
    lost = sorted(before)[1]
    lost.unlink()  # as if the run had been killed before this fold
    again = run_missing(PROTOCOL, rows, tmp_path, registry=reg, echo=lambda line: None)
    assert again == [lost]
    assert {p: p.read_bytes() for p in before if p != lost} == {p: b for p, b in before.items() if p != lost}


def test_two_machines_runs_merge_from_the_command_line_and_a_conflict_is_one_line(tmp_path, plcore_cli):
    """Results made in two folders ("machines") merge into one tree equal to a single run's; an
    incoming file whose score disagrees with its predictions is refused in one line naming it."""
    import json

    reg, rows = _rows(["learner:foo"])
    single, a, b = tmp_path / "single", tmp_path / "a", tmp_path / "b"
    run_missing(PROTOCOL, rows, single, registry=reg, echo=lambda line: None)
    run_missing(PROTOCOL, rows, a, registry=reg, datasets=["iris"], echo=lambda line: None)
    run_missing(PROTOCOL, rows, b, registry=reg, datasets=["wine"], echo=lambda line: None)
    proc = plcore_cli(["leaderboard", "merge", str(a), str(b), "--results", "merged"], tmp_path)
    assert proc.stdout.strip() == "4 run file(s) merged into merged; 0 identical duplicate(s) dropped"
    merged = {p.relative_to(tmp_path / "merged"): r for p, r in _records(tmp_path / "merged")}
    alone = {p.relative_to(single): r for p, r in _records(single)}
    drop = ("started_at", "finished_at", "timing")
    assert {k: {f: v for f, v in r.items() if f not in drop} for k, r in merged.items()} == \
        {k: {f: v for f, v in r.items() if f not in drop} for k, r in alone.items()}
    (path, rec), = [(p, r) for p, r in _records(b) if r["fold"]["index"] == 0]
    rec["predictions"] = pack_predictions(np.zeros(len(unpack_predictions(rec["predictions"])), dtype=int), 3)
    path.write_text(json.dumps(rec))
    bad = plcore_cli(["leaderboard", "merge", str(b), "--results", "merged"], tmp_path, check=False)
    err = bad.stderr.strip().splitlines()
    assert bad.returncode == 2 and len(err) == 1 and "merge refused, nothing copied: 1 bad run file(s)" in err[0]
    assert f"{path}: the stored accuracy" in err[0] and "disagrees with its predictions" in err[0], bad.stderr


def test_a_clusterer_row_runs_every_partition_as_the_clustering_protocol_would(tmp_path):
    """The clustering track's folds are the clustering protocol's partitions: the same clusters of
    every row, ACC and NMI on the unlabelled rows; a declared n/a data set is written as such."""
    from plcore.run.protocols import Setup, clustering

    class _Clusterers:
        @hookimpl
        def plcore_components(self):
            return [ComponentSpec("clusterer", "km", _KMeans, config={"n_clusters": 3},
                                  leaderboard={"na": {"wine": "declared for the test"}})]

    reg = Registry()
    reg.register(_Clusterers(), name="km-plugin", distribution="plcore-km", version="0.1")
    reg.load(entry_points=False)
    rows = chosen(entries(PROTOCOL, reg), ["clusterer:km"])
    lines = []
    run_missing(PROTOCOL, rows, tmp_path, registry=reg, echo=lines.append)
    runs = {(r["dataset"]["name"], r["fold"]["index"]): r for _, r in _records(tmp_path)}
    assert {k: r["status"] for k, r in runs.items()} == {("iris", 0): "ok", ("iris", 1): "ok", ("wine", 0): "na",
                                                         ("wine", 1): "na"}
    assert runs[("wine", 0)]["error"] == "declared for the test" and len(lines) == 2
    spec = PROTOCOL.track("clustering")
    res = clustering(Setup(clusterer=reg.create("clusterer", "km")), _drawn_iris(), rho=spec.rho, n_partitions=spec.n_partitions, splits="random",
                     preprocessing=spec.preprocessing, preprocessing_by_part=spec.preprocessing_by_part,
                     random_state=spec.seed, progress=False)
    for p, step in enumerate(res.steps):
        rec = runs[("iris", p)]
        clusters = [row["cluster"] for row in res.predictions if row["step"] == p]
        np.testing.assert_array_equal(unpack_predictions(rec["predictions"]), clusters)
        assert rec["scores"] == {"acc": step["acc"], "nmi": step["nmi"]}


class _KMeans(BaseClusterer):
    """k-means of the features, ignoring the candidate sets."""

    def __init__(self, n_clusters=3):
        self.n_clusters = n_clusters

    def _fit(self, X, S):
        from sklearn.cluster import KMeans

        self.labels_ = KMeans(self.n_clusters, n_init=2, random_state=0).fit_predict(X)
        return self


def _drawn_iris():
    from plcore.leaderboard.protocol import _load

    return _load("iris", PROTOCOL.datasets["iris"], None)[1]


def test_each_cell_that_ran_is_also_an_mlflow_run_for_browsing(tmp_path):
    """Item 2: the files are the truth; MLflow gets one run per cell with its folds as steps and
    the run files as artifacts."""
    from mlflow.tracking import MlflowClient

    reg, rows = _rows(["learner:foo"])
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    run_missing(PROTOCOL, rows, tmp_path / "out", registry=reg, echo=lambda line: None, tracking_uri=uri)
    client = MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name("leaderboard-field-smoke-1").experiment_id])
    assert sorted(r.data.params["dataset"] for r in runs) == ["iris", "wine"]
    files = {(r["dataset"]["name"], r["fold"]["index"]): r for _, r in _records(tmp_path / "out")}
    for run in runs:
        assert run.info.status == "FINISHED" and run.data.params["key"] == rows[0].key
        history = client.get_metric_history(run.info.run_id, "fold/accuracy")
        assert {(m.step, m.value) for m in history} == {
            (k, files[(run.data.params["dataset"], k)]["scores"]["accuracy"]) for k in (0, 1)}
        artifacts = {a.path for a in client.list_artifacts(run.info.run_id, "leaderboard")}
        assert artifacts == {"leaderboard/fold-0.json", "leaderboard/fold-1.json"}


def test_the_leaderboard_is_forbidden_every_private_module_of_run_protocols():
    """The leaderboard runs its folds through ``plcore.run.protocols``' public fold runner
    (``evaluate_split``, ``cluster_partition``, ...); the import-linter contract that keeps it so
    lists every private module there (``lint-imports`` enforces it: tests/test_layout.py)."""
    import tomllib
    from pathlib import Path

    import plcore.run.protocols as protocols

    repo = Path(__file__).resolve().parents[1]
    meta = tomllib.loads((repo / "pyproject.toml").read_text())
    (contract,) = [c for c in meta["tool"]["importlinter"]["contracts"]
                   if c["type"] == "forbidden" and c["source_modules"] == ["plcore.leaderboard"]]
    private = {f"plcore.run.protocols.{p.stem}" for p in (repo / "plcore/run/protocols").glob("_*.py")
               if not p.name.startswith("__")}
    assert set(contract["forbidden_modules"]) == private
    for name in ("evaluate_split", "cluster_partition", "feeds_truth", "singleton_candidates", "present_classes"):
        assert name in protocols.__all__ and callable(getattr(protocols, name))
