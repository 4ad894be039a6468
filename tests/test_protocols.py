"""Evaluation protocols: kfold, holdout, online, clustering."""

import numpy as np
import pytest
from sklearn.metrics import matthews_corrcoef
from sklearn.model_selection import KFold
from sklearn.preprocessing import StandardScaler

from plcore.base import BaseClusterer, BaseLearner, BaseReducer
from plcore.data import PLDataset
from plcore.exceptions import PlcoreError
from plcore.datasets import ClusterNoisyBags, DropTrueBags, NoisyBags, UniformBags
from plcore.learners import PlKnnLearner
from plcore.run.pipeline import build_pipeline, make_preprocessor
from plcore.run.protocols import (
    PROTOCOLS,
    Setup,
    apply_bags,
    clustering,
    clustering_partitions,
    default_config,
    holdout,
    kfold,
    online,
    stratified_mask,
)
from plcore.testing import make_pl_data


def small_dataset():
    X, S, y = make_pl_data(n_samples=60)
    return PLDataset(X, S, y, name="blobs")


def test_kfold_partitions_and_records_every_fold():
    ds = small_dataset()
    res = kfold(PlKnnLearner(k=3), ds, n_splits=5, random_state=0, progress=False)
    assert len(res.steps) == 5
    by_step = {}
    for row in res.predictions:
        by_step.setdefault(row["step"], []).append(row)
    test_rows = np.sort([r["index"] for r in res.predictions])
    assert np.array_equal(test_rows, np.arange(ds.n_samples))  # each row tested exactly once
    for step in res.steps:
        rows = by_step[step["step"]]
        assert step["accuracy"] == pytest.approx(np.mean([r["y_true"] == r["y_pred"] for r in rows]))
    s = res.summary
    assert s["accuracy_mean"] == pytest.approx(np.mean([f["accuracy"] for f in res.steps]))
    assert {"accuracy_std", "transductive_accuracy_mean", "mcc_mean", "mcc_std", "fit_time_mean"} <= set(s)
    for step in res.steps:
        rows = by_step[step["step"]]
        assert step["mcc"] == pytest.approx(matthews_corrcoef([r["y_true"] for r in rows], [r["y_pred"] for r in rows]))


class _NoConfidences(BaseLearner):
    """A learner with scores and no ``confidences_``: a fixed linear score of the first feature."""

    def _fit(self, X, S):
        self.w_ = np.linspace(-1, 1, S.shape[1])

    def _scores(self, X):
        return np.outer(X[:, 0], self.w_)

    def predict_proba(self, X):
        z = self._scores(self._validate_predict(X))
        return np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)


def test_a_learner_without_confidences_is_scored_on_its_candidate_masked_training_scores():
    ds = small_dataset()
    res = kfold(_NoConfidences(), ds, n_splits=3, random_state=0, progress=False, preprocessing="none", refit=False)
    for step, (train, _) in zip(res.steps, KFold(3, shuffle=True, random_state=0).split(ds.X)):
        fitted = _NoConfidences().fit(ds.X[train], ds.S[train])
        masked = np.where(ds.S[train], fitted.predict_proba(ds.X[train]), -np.inf)
        assert step["transductive_accuracy"] == pytest.approx(np.mean(masked.argmax(axis=1) == ds.y_true[train]))


def test_kfold_is_seeded():
    ds = small_dataset()
    a = kfold(PlKnnLearner(k=3), ds, n_splits=3, random_state=7, progress=False)
    b = kfold(PlKnnLearner(k=3), ds, n_splits=3, random_state=7, progress=False)
    assert [f["accuracy"] for f in a.steps] == [f["accuracy"] for f in b.steps]


def test_preprocessing_is_fitted_on_training_part_only():
    ds = small_dataset()
    pipe = build_pipeline(PlKnnLearner(k=3), "standardize")
    assert isinstance(pipe.steps[0][1], StandardScaler)
    train = np.arange(30)
    pipe.fit(ds.X[train], ds.S[train])
    np.testing.assert_allclose(pipe.steps[0][1].mean_, ds.X[train].mean(axis=0))
    assert len(build_pipeline(PlKnnLearner(), "none").steps) == 1
    with pytest.raises(ValueError, match="unknown preprocessing"):
        make_preprocessor("zscore")
    assert type(make_preprocessor("sklearn.preprocessing.Normalizer")).__name__ == "Normalizer"
    with pytest.raises(ValueError, match="could not be imported"):
        make_preprocessor("sklearn.preprocessing.NoSuchScaler")


def test_kfold_needs_candidates():
    X, S, y = make_pl_data(n_samples=30)
    with pytest.raises(ValueError, match="exact labels only"):
        kfold(PlKnnLearner(), PLDataset(X, None, y), progress=False)


def test_kfold_without_true_labels_estimates_label_free_as_a_textbook_loop_does():
    """Issue 55: candidate sets and no true labels: each fold's covering rate (predictions inside
    the test rows' candidate sets) and approximated accuracy (score mass on them, PLENCH's AA),
    computed here by hand on the same folds; no accuracy; the refit model is logged as usual.
    With true labels the same call reports accuracy and no label-free keys (nothing changes)."""
    from sklearn.pipeline import make_pipeline

    X, S, y = make_pl_data(n_samples=90)
    res = kfold(PlKnnLearner(k=5), PLDataset(X, S), n_splits=3, progress=False)
    cr, aa = [], []
    for train, test in KFold(3, shuffle=True, random_state=0).split(X):
        pipe = make_pipeline(StandardScaler(), PlKnnLearner(k=5)).fit(X[train], S[train])
        pred, proba = pipe.predict(X[test]), pipe.predict_proba(X[test])
        cr.append(np.mean([S[i, p] for i, p in zip(test, pred)]))
        on_set = [proba[j, p] * S[i, p] / (proba[j] * S[i]).sum() for j, (i, p) in enumerate(zip(test, pred))]
        aa.append(np.mean(on_set))  # the score mass on the candidates, read at the prediction
    np.testing.assert_allclose([s["covering_rate"] for s in res.steps], cr)
    assert res.summary["covering_rate_mean"] == pytest.approx(np.mean(cr))
    assert res.summary["covering_rate_std"] == pytest.approx(np.std(cr))
    assert "accuracy_mean" not in res.summary and "transductive_accuracy_mean" not in res.summary
    np.testing.assert_allclose([s["approximated_accuracy"] for s in res.steps], aa, rtol=1e-9)
    assert res.model is not None
    assert "y_true" not in res.predictions[0] and res.predictions[0]["label_pred"] in {str(c) for c in range(S.shape[1])}
    labelled = kfold(PlKnnLearner(k=5), PLDataset(X, S, y), n_splits=3, progress=False)
    assert "accuracy_mean" in labelled.summary and "covering_rate_mean" not in labelled.summary
    np.testing.assert_array_equal([p["y_pred"] for p in labelled.predictions], [p["y_pred"] for p in res.predictions])


def test_label_free_estimates_are_the_same_for_sparse_candidate_sets():
    import scipy.sparse as sp

    X, S, _ = make_pl_data(n_samples=60)
    dense = kfold(PlKnnLearner(k=5), PLDataset(X, S), n_splits=3, progress=False)
    sparse = kfold(PlKnnLearner(k=5), PLDataset(X, sp.csr_matrix(S)), n_splits=3, progress=False)
    for key in ("covering_rate", "approximated_accuracy"):
        np.testing.assert_allclose([s[key] for s in sparse.steps], [s[key] for s in dense.steps])


def test_label_free_selection_and_holdout_run_without_true_labels():
    """Nested selection scores candidate sets only, so it works as on labelled data: each fold's
    choice is logged, the refit searched on all rows; holdout estimates label-free likewise."""
    from plcore.run.protocols import holdout

    X, S, y = make_pl_data(n_samples=90)
    select = {"method": "grid", "space": {"learner.k": [3, 7]}, "cv": 2}
    res = kfold(PlKnnLearner(), PLDataset(X, S), n_splits=3, select=select, progress=False)
    assert all(s["selected.learner.k"] in (3, 7) for s in res.steps) and res.model["pipeline"][-1].k in (3, 7)
    labelled = kfold(PlKnnLearner(), PLDataset(X, S, y), n_splits=3, select=select, progress=False)
    assert [s["selected.learner.k"] for s in res.steps] == [s["selected.learner.k"] for s in labelled.steps]
    hold = holdout(PlKnnLearner(k=5), PLDataset(X, S), n_repeats=2, progress=False)
    assert set(hold.summary) >= {"covering_rate_mean", "approximated_accuracy_mean"} and "accuracy_mean" not in hold.summary


def test_what_needs_true_labels_is_refused_in_one_line_without_them():
    from plcore.run.protocols import holdout

    X, S, _ = make_pl_data(n_samples=40)
    ds = PLDataset(X, S, name="mine")
    for call, needle in ((lambda: holdout(PlKnnLearner(), ds, stratify=True, progress=False), "stratify=true"),
                         (lambda: kfold(PlKnnLearner(), ds, exact_labels="always", progress=False),
                          "exact-label baseline"),
                         (lambda: kfold(PlKnnLearner(), ds, progress=False,
                                        select={"method": "oracle", "space": {"learner.k": [3, 5]}}), "oracle")):
        with pytest.raises(PlcoreError) as exc:
            call()
        assert "\n" not in str(exc.value) and needle in str(exc.value) and "'mine' has none" in str(exc.value)


def test_bags_generate_candidates_for_exact_label_data_only():
    X, S, y = make_pl_data(n_samples=60)
    exact = PLDataset(X, None, y)
    out = apply_bags(exact, UniformBags(r=1), random_state=0)
    assert out.is_partial and (out.S.sum(1) == 2).all()
    real = PLDataset(X, S, y)
    assert apply_bags(real, UniformBags(r=2), random_state=0) is real  # real candidates kept
    noisy = apply_bags(real, DropTrueBags(eta=1.0), random_state=0)
    assert not noisy.S[np.arange(60), y].any()  # corrupting generators apply to real bags


class _DropsTrueSilently(UniformBags):
    """A generator that leaves the true label of every fourth row out and does not say so."""

    def _generate(self, y, n_classes, rng, X=None, S=None):
        out = super()._generate(y, n_classes, rng)
        out[::4, :] = ~out[::4, :]
        return out


class _DropsTrueDeclared(_DropsTrueSilently):
    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.pll_tags.noisy_candidates = True
        return tags


def test_generated_sets_without_their_true_label_need_the_noisy_candidates_tag():
    """Issue 43: a generator that leaves true labels out on purpose declares it (tag
    ``noisy_candidates``: noisy, drop_true, cluster_noisy); one that does not is refused in one
    line, so a faulty generator cannot pass noise off as partial labels."""
    X, S, y = make_pl_data(n_samples=60, n_classes=5)
    exact = PLDataset(X, None, y, name="blobs")
    with pytest.raises(ValueError) as info:
        apply_bags(exact, _DropsTrueSilently(r=1), random_state=0)
    assert str(info.value) == ("_DropsTrueSilently left the true label out of its candidate set in 15 of 60 rows "
                               "(rows 0, 4, 8, 12, 16, ...) but does not declare noisy partial labels "
                               "(tag noisy_candidates)")
    drawn = apply_bags(exact, _DropsTrueDeclared(r=1), random_state=0)
    assert drawn.rows_outside_candidates().tolist() == list(range(0, 60, 4))
    for gen in (NoisyBags(q=0.3, eta=0.5), DropTrueBags(eta=0.5), ClusterNoisyBags(n_clusters=2, eta=0.9)):
        assert apply_bags(exact, gen, random_state=0).rows_outside_candidates().size > 0


def test_rows_the_data_already_had_outside_are_not_the_generators():
    """Data accepted with dataset.noisy=true: a corrupting generator without the tag is judged
    only on the rows it changed."""

    class KeepsSets(UniformBags):
        def __sklearn_tags__(self):
            tags = super().__sklearn_tags__()
            tags.pll_tags.corrupts_existing_labels = True
            return tags

        def _generate(self, y, n_classes, rng, X=None, S=None):
            return S.toarray().astype(bool) if hasattr(S, "toarray") else np.asarray(S, dtype=bool).copy()

    X, S, y = make_pl_data(n_samples=40)
    S = np.asarray(S, dtype=bool).copy()
    S[3] = ~S[3]
    data = PLDataset(X, S, y, meta={"noisy": True})
    assert apply_bags(data, KeepsSets(r=1), random_state=0).rows_outside_candidates().tolist() == [3]


def test_holdout():
    ds = small_dataset()
    res = holdout(Setup(learner=PlKnnLearner(k=3)), ds, test_size=0.25, n_repeats=3, progress=False)
    assert len(res.steps) == 3
    assert all(len([r for r in res.predictions if r["step"] == i]) == 15 for i in range(3))
    assert res.summary["accuracy_mean"] > 0.8


class StreamingNearestCentroid(BaseLearner):
    """Online test learner: running class means of the candidate-weighted examples."""

    def __init__(self):
        pass

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.pll_tags.online = True
        return tags

    def partial_fit(self, X, y, classes=None):
        S = np.asarray(y, dtype=float)
        if not hasattr(self, "sums_"):
            self.classes_ = np.asarray(classes)
            self.sums_ = np.zeros((len(classes), X.shape[1]))
            self.counts_ = np.zeros(len(classes))
            self.n_features_in_ = X.shape[1]
            self.seen_ = []
        if len(X):
            w = S / S.sum(axis=1, keepdims=True)
            self.sums_ += w.T @ X
            self.counts_ += w.sum(axis=0)
            self.seen_.append(S.copy())
        return self

    def _fit(self, X, S):
        raise NotImplementedError

    def predict(self, X):
        return self.classes_[np.argmax(self._scores(X), axis=1)]

    def _scores(self, X):
        means = self.sums_ / np.maximum(self.counts_, 1e-12)[:, None]
        d = ((X[:, None, :] - means[None]) ** 2).sum(-1)
        return np.where(self.counts_ > 0, -d, -np.inf)


def test_online_mistake_rate_curve():
    X, S, y = make_pl_data(n_samples=60, cluster_std=0.3)
    ds = PLDataset(X, None, y)
    res = online(Setup(learner=StreamingNearestCentroid(), bags=UniformBags(r=1)), ds, n_runs=4,
                 progress=False)
    curve = res.curves["mistake_rate"]
    assert curve.shape == (60,) and len(res.steps) == 4
    assert curve[-1] < 0.4  # learns: far below the 2/3 error of guessing among 3 classes
    assert res.summary["mistake_rate_final_mean"] == pytest.approx(
        np.mean([s["mistake_rate_final"] for s in res.steps]))


class FastPath(StreamingNearestCentroid):
    """Registered below with a prequential kernel (counted, to prove the protocol uses it)."""


def _fast_path_kernel(learner, X, S, classes):
    _fast_path_kernel.calls += 1
    learner.partial_fit(X[:0], S[:0], classes=classes)
    preds = []
    for i in range(len(X)):
        preds.append(learner.predict(X[i:i + 1])[0])
        learner.partial_fit(X[i:i + 1], S[i:i + 1])
    return np.array(preds)


def test_online_uses_the_registered_prequential_kernel(monkeypatch):
    from plcore.registry import Component, ComponentSpec, get_registry

    spec = ComponentSpec("learner", "fast_path", FastPath, prequential=_fast_path_kernel)
    monkeypatch.setitem(get_registry().components, ("learner", "fast_path"), Component(spec, "t", "t", "0"))
    _fast_path_kernel.calls = 0
    X, S, y = make_pl_data(n_samples=50, cluster_std=2.0)
    ds = PLDataset(X, None, y)
    setup = dict(bags=UniformBags(r=1))
    slow = online(Setup(learner=StreamingNearestCentroid(), **setup), ds, n_runs=3, progress=False)
    assert _fast_path_kernel.calls == 0
    fast = online(Setup(learner=FastPath(), **setup), ds, n_runs=3, progress=False)
    assert _fast_path_kernel.calls == 3  # one call per run, not the per-example loop
    np.testing.assert_allclose(fast.curves["mistake_rate"], slow.curves["mistake_rate"])


def test_online_rejects_a_learner_not_tagged_online():
    with pytest.raises(ValueError, match="needs an online learner"):
        online(Setup(learner=PlKnnLearner()), small_dataset(), n_runs=1, progress=False)


def test_online_feeds_true_labels_to_exact_label_baselines():
    X, S, y = make_pl_data(n_samples=30)
    ds = PLDataset(X, S, y)

    class ExactBaseline(StreamingNearestCentroid):
        def __sklearn_tags__(self):
            tags = super().__sklearn_tags__()
            tags.pll_tags.exact_label_baseline = True
            return tags

    captured = {}
    import plcore.run.protocols._online as protocols

    orig = protocols.clone

    def spy(est):
        new = orig(est)
        captured["learner"] = new
        return new

    protocols.clone = spy
    try:
        online(Setup(learner=ExactBaseline()), ds, n_runs=1, progress=False)
    finally:
        protocols.clone = orig
    seen = np.vstack(captured["learner"].seen_)
    assert (seen.sum(axis=1) == 1).all()  # singleton sets of the true label


class ExactKnn(PlKnnLearner):
    """PL-KNN tagged as an exact-label baseline (test helper)."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.pll_tags.exact_label_baseline = True
        return tags


class RecordingReducer(BaseReducer):
    """Identity reducer that records the candidate matrices it was fitted on (class-level: survives clone)."""

    seen = []

    def __init__(self):
        pass

    def _fit(self, X, S):
        RecordingReducer.seen.append(np.asarray(S, dtype=bool).copy())
        self.n_components_ = X.shape[1]
        self.confidences_ = S / S.sum(axis=1, keepdims=True)

    def _transform(self, X):
        return X


@pytest.mark.parametrize("protocol", [kfold, holdout])
def test_exact_label_baselines_get_true_labels_under_kfold_and_holdout(protocol):
    X, S, y = make_pl_data(n_samples=60, r=2, random_state=3)
    ds = PLDataset(X, S, y)
    exact = protocol(Setup(learner=ExactKnn(k=3)), ds, progress=False)
    plain = protocol(Setup(learner=PlKnnLearner(k=3)), ds, progress=False)
    assert exact.tags["training_labels"] == "exact" and plain.tags["training_labels"] == "candidates"
    # the refitted model saw the truth: its training confidences are the true labels
    np.testing.assert_array_equal(exact.model["pipeline"][-1].confidences_.argmax(axis=1), y)
    assert "transductive_accuracy_mean" not in exact.summary  # trivially 1 on true labels: not reported
    assert plain.summary["transductive_accuracy_mean"] < 1.0
    never = protocol(Setup(learner=ExactKnn(k=3)), ds, exact_labels="never", progress=False)
    assert never.tags["training_labels"] == "candidates"
    assert never.summary["accuracy_mean"] == plain.summary["accuracy_mean"]


@pytest.mark.parametrize("fit_reducer_on", ["train", "all"])
def test_a_reducer_before_an_exact_label_baseline_sees_candidate_sets_only(fit_reducer_on):
    X, S, y = make_pl_data(n_samples=60, r=2, random_state=3)
    RecordingReducer.seen.clear()
    res = kfold(Setup(reducer=RecordingReducer(), learner=ExactKnn(k=3)), PLDataset(X, S, y), n_splits=3,
                fit_reducer_on=fit_reducer_on, refit=False, progress=False)
    assert res.tags["training_labels"] == "exact"
    assert len(RecordingReducer.seen) == 3
    for seen in RecordingReducer.seen:
        assert (seen.sum(axis=1) == 3).all()  # the candidate sets (true + 2), never singletons
    assert [s.shape[0] for s in RecordingReducer.seen] == ([60] * 3 if fit_reducer_on == "all" else [40] * 3)



class CandidateVoteClusterer(BaseClusterer):
    """Test clusterer: k-means, then nothing else (ignores candidates)."""

    def __init__(self, n_clusters=3, random_state=None):
        self.n_clusters = n_clusters
        self.random_state = random_state

    def _fit(self, X, S):
        from sklearn.cluster import KMeans

        self.seen_S_ = S
        self.labels_ = KMeans(self.n_clusters, n_init=5, random_state=self.random_state).fit_predict(X)


def test_clustering_protocol_random_partitions():
    X, S, y = make_pl_data(n_samples=90, cluster_std=0.3)
    ds = PLDataset(X, S, y)
    res = clustering(Setup(clusterer=CandidateVoteClusterer(random_state=0)), ds, rho=0.2,
                     n_partitions=3, progress=False)
    assert len(res.steps) == 3 and all(s["n_labelled"] == 18 for s in res.steps)
    assert res.summary["acc_mean"] == pytest.approx(1.0)  # well-separated blobs
    assert res.summary["nmi_mean"] == pytest.approx(1.0)
    assert res.extra["confusion"].sum() == 3 * 72


def test_stratified_partitions_follow_the_plc_demo_rule():
    """Per class in label order ceil(rho n_c) rows, the list cut to round(rho n): with class sizes
    10, 25, 7, 3 and rho 0.2 that is 2 + 5 + 2 + 1 = 10 rows cut to 9, so the last class loses its row."""
    y = np.repeat([0, 1, 2, 3], [10, 25, 7, 3])
    for seed in range(5):
        mask = stratified_mask(y, 0.2, np.random.RandomState(seed))
        np.testing.assert_array_equal(np.bincount(y[mask], minlength=4), [2, 5, 2, 0])
    ds = PLDataset(np.zeros((45, 2)), np.ones((45, 4), bool), y)
    parts = clustering_partitions(ds, rho=0.2, n_partitions=20, splits="auto", random_state=0)
    assert all(np.array_equal(np.bincount(y[lab], minlength=4), [2, 5, 2, 0]) and (lab ^ ev).all()
               for lab, ev in parts)
    assert len({tuple(np.flatnonzero(lab)) for lab, _ in parts}) == 20  # different rows each time
    uniform = clustering_partitions(ds, rho=0.2, n_partitions=20, splits="auto", random_state=0, draw="uniform")
    counts = np.array([np.bincount(y[lab], minlength=4) for lab, _ in uniform])
    assert (counts.sum(axis=1) == 9).all() and counts[:, 3].any()  # uniform draws reach the last class


class _PseudoLabelClusterer(CandidateVoteClusterer):
    """Test clusterer that exposes the first candidate of every row as its pseudo-labels."""

    def _fit(self, X, S):
        super()._fit(X, S)
        self.pseudo_labels_ = np.argmax(S, axis=1)
        self.n_graph_components_ = 7


def test_clustering_scores_the_classes_present_only():
    """A label column with no true instance is dropped from the candidate sets and the cluster
    count (``classes="present"``) and named as a run parameter; ``classes="all"`` keeps it."""
    X, _, y = make_pl_data(n_samples=90, n_classes=3, cluster_std=0.3)
    S = np.zeros((90, 4), bool)
    S[np.arange(90), y] = True
    S[:10, 3] = True  # column 3: a candidate, never the truth
    lab = np.arange(90) < 45
    ds = PLDataset(X, S, y, classes=np.array(["a", "b", "c", "d"]), meta={"splits": [(lab, ~lab)]})
    with pytest.warns(UserWarning, match=r"1 label column\(s\) of unnamed have no true instance \(d\): 3 clusters"):
        res = clustering(Setup(clusterer=_PseudoLabelClusterer(random_state=0)), ds, progress=False)
    assert res.params == {"classes_scored": 3, "classes_left_out": "d"}
    assert res.extra["confusion"].shape == (3, 3)
    # the evaluated rows carry all 3 labels, so their pseudo-label (first candidate) is class 0
    assert res.summary["pseudo_label_acc_mean"] == np.mean(y[~lab] == 0)
    assert res.summary["graph_components_mean"] == 7
    seen = {}

    class Spy(CandidateVoteClusterer):
        def _fit(self, X, S):
            seen["q"] = S.shape[1]
            super()._fit(X, S)

    with pytest.warns(UserWarning, match="no true instance"):
        clustering(Setup(clusterer=Spy(random_state=0)), ds, progress=False)
    assert seen["q"] == 3
    res = clustering(Setup(clusterer=Spy(random_state=0)), ds, classes="all", progress=False)
    assert seen["q"] == 4 and res.params == {"classes_scored": 4, "classes_left_out": "none"}


def test_clustering_uses_stored_splits_and_marks_unlabelled_rows():
    X, S, y = make_pl_data(n_samples=30)
    lab = np.zeros(30, bool)
    lab[:5] = True
    ds = PLDataset(X, S, y, meta={"splits": [(lab, ~lab)]})
    parts = clustering_partitions(ds, rho=0.5, n_partitions=10, splits="auto", random_state=0)
    assert len(parts) == 1 and parts[0][0].sum() == 5
    seen = {}

    class Spy(CandidateVoteClusterer):
        def _fit(self, X, S):
            seen["S"] = S
            super()._fit(X, S)

    res = clustering(Setup(clusterer=Spy(random_state=0)), ds, progress=False)
    assert len(res.steps) == 1
    assert np.array_equal(seen["S"][:5], S[:5]) and seen["S"][5:].all()  # unlabelled: all ones
    with pytest.raises(ValueError, match="no stored splits"):
        clustering_partitions(PLDataset(X, S, y), rho=0.1, n_partitions=1, splits="file", random_state=0)


@pytest.mark.parametrize("by_part", [False, True])
def test_clustering_preprocessing_on_all_rows_or_by_part(by_part):
    """``preprocessing_by_part`` (the PLC demo's z-scoring): each partition's labelled and
    unlabelled rows are standardised separately; by default all rows together."""
    X, S, y = make_pl_data(n_samples=40)
    X = X + np.arange(40)[:, None] * 0.1  # the two parts differ in mean
    lab = np.zeros(40, bool)
    lab[:10] = True
    ds = PLDataset(X, S, y, meta={"splits": [(lab, ~lab)]})
    seen = {}

    class Spy(CandidateVoteClusterer):
        def _fit(self, X, S):
            seen["X"] = X
            super()._fit(X, S)

    clustering(Setup(clusterer=Spy(random_state=0)), ds, preprocessing_by_part=by_part, progress=False)
    parts = (lab, ~lab) if by_part else (np.ones(40, bool),)
    for part in parts:
        np.testing.assert_allclose(seen["X"][part].mean(axis=0), 0.0, atol=1e-12)
        np.testing.assert_allclose(seen["X"][part].std(axis=0), 1.0, atol=1e-12)
    if not by_part:
        assert np.abs(seen["X"][lab].mean(axis=0)).max() > 0.1


def test_protocols_registry_defaults():
    for name in PROTOCOLS:
        cfg = default_config(name)
        assert cfg["name"] == name


class FirstTwo(BaseReducer):
    """Test reducer: the first two columns times ``scale``; uniform confidences on the candidates."""

    def __init__(self, scale=1.0):
        self.scale = scale

    def _fit(self, X, S):
        self.n_components_ = 2
        conf = np.asarray(S, dtype=float)
        self.confidences_ = conf / conf.sum(axis=1, keepdims=True)

    def _transform(self, X):
        return self.scale * X[:, :2]


def test_kfold_records_reducer_dimensions_and_disambiguation():
    ds = small_dataset()
    res = kfold(Setup(reducer=FirstTwo(), learner=PlKnnLearner(k=3)), ds, n_splits=3, progress=False)
    assert all(s["n_components"] == 2 for s in res.steps)
    assert res.summary["n_components_mean"] == 2
    # uniform confidences over {true, one false}: argmax picks the lower index -> about half right
    assert 0.2 < res.summary["reducer_transductive_accuracy_mean"] < 0.8


def test_kfold_transductive_reducer_sees_all_rows_but_learner_only_train():
    from plcore.base import BaseReducer

    class CountingReducer(BaseReducer):
        calls = []  # rows seen by each fit (class-level: survives clone)

        def __init__(self):
            pass

        def _fit(self, X, S):
            CountingReducer.calls.append(X.shape[0])
            self.n_components_ = X.shape[1]
            conf = np.asarray(S, dtype=float)
            self.confidences_ = conf / conf.sum(axis=1, keepdims=True)

        def _transform(self, X):
            return X

    ds = small_dataset()
    res = kfold(Setup(reducer=CountingReducer(), learner=PlKnnLearner(k=3)), ds, n_splits=3,
                fit_reducer_on="all", progress=False)
    assert CountingReducer.calls == [60, 60, 60, 60]  # three folds, then the refit on all rows
    CountingReducer.calls.clear()
    inductive = kfold(Setup(reducer=CountingReducer(), learner=PlKnnLearner(k=3)), ds, n_splits=3,
                      refit=False, progress=False)
    assert CountingReducer.calls == [40, 40, 40]
    # identity reducer: both protocols must give the same predictions
    assert [s["accuracy"] for s in res.steps] == [s["accuracy"] for s in inductive.steps]
    assert "reducer_transductive_accuracy" in res.steps[0]
    with pytest.raises(ValueError, match="fit_reducer_on"):
        kfold(Setup(reducer=CountingReducer(), learner=PlKnnLearner(k=3)), ds, n_splits=3,
              fit_reducer_on="test", progress=False)


def test_reduced_preprocessing_scales_the_reducer_output_and_keeps_its_attributes():
    from plcore.preprocessing import RescaledReducer, fitted_reducer
    from plcore.run.pipeline import build_pipeline

    TinyScale = lambda: FirstTwo(scale=0.01)  # noqa: E731 - two columns on CENDA-like scale

    ds = small_dataset()
    pipe = build_pipeline([TinyScale(), PlKnnLearner(k=3)], "standardize", "standardize")
    assert isinstance(pipe.steps[-2][1], RescaledReducer)
    pipe.fit(ds.X, ds.S)
    red = pipe.steps[-2][1]
    Z = red.transform(pipe.steps[0][1].transform(ds.X))
    np.testing.assert_allclose(Z.mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(Z.std(axis=0), 1, rtol=1e-12)
    inner = fitted_reducer(red)
    assert inner is red.reducer_ and fitted_reducer(inner) is inner
    assert inner.n_components_ == 2 and inner.confidences_.shape == (60, ds.S.shape[1])
    with pytest.raises(AttributeError):  # no attribute forwarding on the wrapper
        red.n_components_
    # default: no wrapper, raw reducer output
    assert isinstance(build_pipeline([TinyScale(), PlKnnLearner(k=3)]).steps[-2][1], FirstTwo)
    # kfold reports the wrapped reducer's attributes, inductively and transductively
    base = kfold(Setup(reducer=TinyScale(), learner=PlKnnLearner(k=3)), ds, n_splits=3, progress=False)
    for on in ("train", "all"):
        res = kfold(Setup(reducer=TinyScale(), learner=PlKnnLearner(k=3)), ds, n_splits=3, progress=False,
                    reduced_preprocessing="standardize", fit_reducer_on=on)
        assert res.summary["n_components_mean"] == 2 and "reducer_transductive_accuracy_mean" in res.summary
    with pytest.raises(ValueError, match="preprocessing"):
        kfold(Setup(reducer=TinyScale(), learner=PlKnnLearner(k=3)), ds, n_splits=3, progress=False,
              reduced_preprocessing="zscore")
    assert base.summary["n_components_mean"] == 2


def test_minmax_nonconstant_drops_constant_columns_and_scales_on_the_fitted_rows():
    from plcore.preprocessing import MinMaxNonConstant
    from plcore.run.pipeline import make_preprocessor

    X = np.array([[1.0, 5.0, 2.0], [3.0, 5.0, 4.0], [2.0, 5.0, 8.0]])
    sc = make_preprocessor("minmax_nonconstant").fit(X)
    assert isinstance(sc, MinMaxNonConstant)
    np.testing.assert_allclose(sc.transform(X), [[0, 0], [1, 1 / 3], [0.5, 1]])
    np.testing.assert_array_equal(sc.get_feature_names_out(), ["x0", "x2"])
    # rows it was not fitted on keep the fitted scale (values outside [0, 1] stay so)
    np.testing.assert_allclose(sc.transform([[5.0, 0.0, 14.0]]), [[2.0, 2.0]])


def test_isotropic_scaler_keeps_neighbours_and_reaches_unit_rms():
    from sklearn.neighbors import NearestNeighbors

    from plcore.preprocessing import IsotropicScaler
    from plcore.run.pipeline import make_preprocessor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3)) * [0.01, 0.05, 0.02] + 7.0
    sc = make_preprocessor("isotropic").fit(X)
    assert isinstance(sc, IsotropicScaler)
    Z = sc.transform(X)
    np.testing.assert_allclose(np.sqrt(np.mean(Z ** 2)), 1.0, rtol=1e-12)
    np.testing.assert_allclose(Z.mean(axis=0), 0.0, atol=1e-12)
    # one factor for all columns: column ratios and neighbour lists are unchanged
    np.testing.assert_allclose(Z.std(axis=0) / Z.std(axis=0)[0], X.std(axis=0) / X.std(axis=0)[0], rtol=1e-12)
    nn = lambda A: NearestNeighbors(n_neighbors=5).fit(A).kneighbors(A, return_distance=False)  # noqa: E731
    np.testing.assert_array_equal(nn(Z), nn(X))
    assert IsotropicScaler().fit(np.ones((4, 2))).scale_ == 1.0     # constant data: no division by zero


@pytest.mark.parametrize("protocol", [kfold, holdout])
def test_refit_returns_the_pipeline_fitted_on_all_rows(protocol):
    ds = small_dataset()
    res = protocol(Setup(learner=PlKnnLearner(k=3)), ds, progress=False)
    pipe = res.model["pipeline"]
    assert pipe[-1].confidences_.shape == (ds.n_samples, ds.n_classes)  # fitted on every row
    np.testing.assert_array_equal(pipe.predict(ds.X), build_pipeline([PlKnnLearner(k=3)]).fit(ds.X, ds.S).predict(ds.X))
    assert res.model["classes"] == list(ds.classes) and res.model["X_example"].shape == (5, ds.n_features)
    assert protocol(Setup(learner=PlKnnLearner(k=3)), ds, refit=False, progress=False).model is None


def test_prediction_rows_carry_class_names_and_scores():
    ds = small_dataset()
    res = kfold(Setup(learner=PlKnnLearner(k=3)), ds, n_splits=3, refit=False, progress=False)
    row = res.predictions[0]
    names = [str(c) for c in ds.classes]
    assert row["label_pred"] == names[row["y_pred"]] and row["label_true"] == names[row["y_true"]]
    scores = [row[f"score_{n}"] for n in names]
    assert abs(sum(scores) - 1) < 1e-9 and int(np.argmax(scores)) == row["y_pred"]


# ----------------------------------------------------------------------------- parallel steps
def _without_times(steps):
    return [{k: v for k, v in s.items() if not k.endswith("_time")} for s in steps]


@pytest.mark.parametrize("protocol, kwargs", [(kfold, {"n_splits": 4}), (holdout, {"n_repeats": 3})])
def test_n_jobs_runs_the_steps_in_processes_with_the_serial_results(protocol, kwargs):
    """Folds (and the refit's selection candidates) in 2 worker processes: the same steps,
    predictions, selected values and refitted model as the serial run, at one BLAS thread."""
    from threadpoolctl import threadpool_limits

    from plcore.datasets import load_dataset

    ds = load_dataset("digits")
    ds = ds.with_candidates(UniformBags(r=2).generate(ds.y_true, random_state=0))
    select = {"method": "grid", "space": {"learner.k": [3, 8]}}
    seen = []
    with threadpool_limits(1):
        serial = protocol(Setup(learner=PlKnnLearner()), ds, select=select, progress=False, **kwargs)
    parallel = protocol(Setup(learner=PlKnnLearner()), ds, select=select, progress=False, n_jobs=2,
                        callback=seen.append, **kwargs)
    assert _without_times(parallel.steps) == _without_times(serial.steps)
    assert [s["step"] for s in seen] == list(range(len(serial.steps))), "callbacks in step order"
    assert parallel.predictions == serial.predictions
    X = ds.X[:50]
    np.testing.assert_array_equal(parallel.model["pipeline"].predict(X), serial.model["pipeline"].predict(X))


def test_n_jobs_is_validated_in_one_line():
    from plcore.exceptions import InvalidParameterError

    spec = PROTOCOLS["kfold"]
    for bad in (0, -2, 1.5, "2"):
        with pytest.raises(InvalidParameterError, match="'n_jobs' parameter of protocol kfold"):
            spec.validate({**spec.defaults, "n_jobs": bad})
    spec.validate({**spec.defaults, "n_jobs": -1})


def test_protocol_functions_defaults_equal_the_one_table():
    """A protocol called from Python and one composed by Hydra start from the same defaults
    (plcore.run.defaults): a default changed in one place only fails here."""
    import inspect

    from plcore.run.defaults import PROTOCOL_DEFAULTS, SELECT_DEFAULTS

    for name, table in PROTOCOL_DEFAULTS.items():
        params = inspect.signature(PROTOCOLS[name].function).parameters
        for key, value in table.items():
            default = params[key].default
            if key == "select":  # None in Python means nested selection's defaults
                assert default is None and value == SELECT_DEFAULTS, name
            else:
                assert default == value, f"{name}.{key}: function {default!r}, table {value!r}"


@pytest.mark.parametrize("protocol", [kfold, holdout])
def test_a_generator_that_learns_from_labels_sees_only_each_splits_training_rows(protocol, monkeypatch):
    from plcore.datasets import InstanceDependentBags

    X, _, y = make_pl_data(n_samples=60)
    calls = []
    real = InstanceDependentBags.generate

    def spy(self, y, X=None, random_state=None, **kw):
        calls.append(None if kw.get("fit_rows") is None else np.sort(np.asarray(kw["fit_rows"])))
        return real(self, y, X, random_state, **kw)

    monkeypatch.setattr(InstanceDependentBags, "generate", spy)
    setup = Setup(learner=PlKnnLearner(k=3), bags=InstanceDependentBags(max_iter=20, random_state=0))
    kw = {"n_splits": 3} if protocol is kfold else {"n_repeats": 2}
    res = protocol(setup, PLDataset(X, None, y), refit=False, progress=False, **kw)
    splits = [c for c in calls if c is not None]
    assert len(splits) == len(res.steps)
    for rows, step in zip(splits, res.steps):
        assert len(rows) < 60  # a training part, never all rows
    test_rows = [sorted(r["index"] for r in res.predictions if r["step"] == s["step"]) for s in res.steps]
    for rows, test in zip(splits, test_rows):
        assert not set(rows) & set(test) and len(rows) + len(test) == 60
    if protocol is holdout:  # no all-rows draw beside the splits' (kfold keeps one for its data check)
        assert len(calls) == len(splits)


def test_a_labelled_row_whose_candidates_all_fall_in_left_out_columns_becomes_unlabelled():
    """A noisy bag (the true label dropped) can hold only a class with no true instance; with that
    column left out it would be empty: the row is clustered as unlabelled, with a warning."""
    X, _, y = make_pl_data(n_samples=60, n_classes=3, cluster_std=0.3)
    S = np.zeros((60, 4), bool)
    S[np.arange(60), y] = True
    S[0] = [False, False, False, True]  # only the absent class
    lab = np.arange(60) < 30
    seen = {}

    class Spy(CandidateVoteClusterer):
        def _fit(self, X, S):
            seen["row0"] = S[0].copy()
            super()._fit(X, S)

    ds = PLDataset(X, S, y, meta={"splits": [(lab, ~lab)]})
    with pytest.warns(UserWarning, match="1 labelled row\\(s\\) of unnamed had candidates only in left-out"):
        clustering(Setup(clusterer=Spy(random_state=0)), ds, progress=False)
    assert seen["row0"].tolist() == [True, True, True]
