"""The learners: wiring of the rules, chunking, inner validation, learning on known data."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.neighbors import NearestNeighbors

from plcore.exceptions import InvalidParameterError
from plcore.learners import PlKnnLearner
from plcore_aknn import AknnLearner, AknnMulticlassLearner, KnnOracleLearner, _rules
from plcore_aknn._rules import aknn_rule, multiclass_rule


def noisy_pl_data(n, q=4, d=3, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, d))
    y = (X[:, 0] > 0).astype(int) + 2 * (X[:, 1] > 0).astype(int)
    y %= q
    S = rng.random_sample((n, q)) < 0.35
    S[np.arange(n), y] = True
    return X, S, y


@pytest.mark.parametrize("cls,rule", [(AknnLearner, aknn_rule), (AknnMulticlassLearner, multiclass_rule)])
def test_learner_applies_rule_to_its_neighbours(cls, rule):
    X, S, _ = noisy_pl_data(300)
    Xq = np.random.RandomState(9).normal(size=(120, 3))
    est = cls(c=0.4, delta=0.05, k_max=15).fit(X, S)
    ind = NearestNeighbors(n_neighbors=15, algorithm="brute").fit(X).kneighbors(Xq, return_distance=False)
    counts = np.cumsum(S[ind], axis=1)
    pred, k_used = rule(counts, 300, 0.4, 0.05)
    assert np.array_equal(est.predict(Xq), pred)
    assert not hasattr(est, "n_neighbors_used_")      # predict changes no state
    labels, k2 = est.predict_with_k(Xq)
    assert np.array_equal(labels, pred) and np.array_equal(k2, k_used)
    assert k_used.min() >= 1 and k_used.max() <= 15


def test_chunked_prediction_equals_unchunked(monkeypatch):
    X, S, _ = noisy_pl_data(300)
    Xq = np.random.RandomState(1).normal(size=(97, 3))
    est = AknnLearner(c=0.3, k_max=12).fit(X, sp.csr_matrix(S.astype(float)))
    full = est.predict_with_k(Xq)
    monkeypatch.setattr(_rules, "CHUNK_ELEMENTS", 12 * 4 * 7)   # 7 queries a chunk
    chunked = est.predict_with_k(Xq)
    assert np.array_equal(full[0], chunked[0]) and np.array_equal(full[1], chunked[1])


def test_k_max_capped_by_training_size_and_params_validated():
    X, S, _ = noisy_pl_data(6)
    est = AknnLearner(k_max=50).fit(X, S)
    assert est.n_neighbors_ == 6 and est.predict_with_k(X)[1].max() <= 6
    for bad in ({"c": 0}, {"c": -1.0}, {"c": float("inf")}, {"delta": 1.0}, {"delta": 0},
                {"k_max": 0}, {"k_max": 2.5}):
        with pytest.raises(InvalidParameterError):
            AknnLearner(**bad).fit(X, S)
    with pytest.raises(InvalidParameterError, match=r"The 'k_max' parameter of AknnMulticlassLearner must "
                                                    r"be an int in the range \[1, inf\)\. Got 0 instead\."):
        AknnMulticlassLearner(k_max=0).fit(X, S)
    with pytest.raises(InvalidParameterError):
        KnnOracleLearner(weights="cosine").fit(X, S)


def test_knn_oracle_picks_k_by_literal_leave_one_out():
    X, S, _ = noisy_pl_data(45, seed=4)
    K = 7
    est = KnnOracleLearner(k_max=K).fit(X, S)
    hit = np.zeros(K)
    for k in range(1, K + 1):
        for i in range(45):
            others = np.delete(np.arange(45), i)
            p = PlKnnLearner(k=k).fit(X[others], S[others]).predict(X[i:i + 1])[0]
            hit[k - 1] += S[i, p]
    np.testing.assert_allclose(est.cv_hit_rate_, hit / 45)
    assert est.n_neighbors_ == int(np.argmax(hit)) + 1
    ref = PlKnnLearner(k=est.n_neighbors_).fit(X, S)
    Xq = np.random.RandomState(2).normal(size=(30, 3))
    assert np.array_equal(est.predict(Xq), ref.predict(Xq))
    np.testing.assert_allclose(est.predict_proba(Xq), ref.predict_proba(Xq))
    labels, k_used = est.predict_with_k(Xq)
    assert np.array_equal(labels, ref.predict(Xq)) and np.all(k_used == est.n_neighbors_)


def _label_aligned(n, rng):
    """1-D x; p(y|x) piecewise in x; bags = label + each other label w.p. 0.3 (label-aligned)."""
    P = np.array([[0.7, 0.2, 0.1], [0.15, 0.6, 0.25], [0.1, 0.3, 0.6]])
    X = rng.random_sample((n, 1))
    region = np.minimum((X[:, 0] * 3).astype(int), 2)
    probs = P[region]
    y = (rng.random_sample(n)[:, None] > np.cumsum(probs, axis=1)).sum(axis=1)
    S = rng.random_sample((n, 3)) < 0.3
    S[np.arange(n), y] = True
    return X, S, probs


def test_accuracy_approaches_bayes_on_label_aligned_data():
    # consistency (Theorem 3.1) needs k_max growing with n; c = 1 keeps early eliminations safe
    rng = np.random.RandomState(0)
    Xt, _, Pt = _label_aligned(3000, rng)
    bayes = Pt.max(axis=1).mean()                                   # 0.633
    acc, k_used = {}, {}
    for n in (150, 1000, 8000):
        X, S, _ = _label_aligned(n, rng)
        k_max = int(4 * np.sqrt(n))
        pred, k_used[n] = AknnLearner(c=1.0, delta=0.1, k_max=k_max).fit(X, S).predict_with_k(Xt)
        acc[n] = Pt[np.arange(len(Xt)), pred].mean()                # exact E[1{pred = y}]
    assert acc[150] < acc[1000] < acc[8000]
    assert acc[150] < bayes - 0.03
    assert acc[8000] > bayes - 0.005
    # the elimination decides most queries once n is large (k_max = 357)
    assert np.mean(k_used[8000] < int(4 * np.sqrt(8000))) > 0.9


def test_confidences_on_candidates():
    X, S, y = noisy_pl_data(200)
    for est in (AknnLearner(), AknnMulticlassLearner(), KnnOracleLearner()):
        conf = est.fit(X, S).confidences_
        assert conf.shape == S.shape and np.all(conf[~S] == 0)
        np.testing.assert_allclose(conf.sum(axis=1), 1.0)


@pytest.mark.parametrize("cls", [AknnLearner, AknnMulticlassLearner, KnnOracleLearner])
def test_predict_with_k_supports_a_subclass_that_predicts_through_it(cls):
    """benchmarks/aknn_experiments.py records the k used by overriding predict with
    predict_with_k; predict_with_k must not call back into predict."""
    rng = np.random.RandomState(0)
    X = rng.randn(60, 3)
    S = rng.rand(60, 4) < 0.5
    S[np.arange(60), rng.randint(4, size=60)] = True

    class Recording(cls):
        def predict(self, X):
            return self.predict_with_k(X)[0]

    est = Recording().fit(X, S)
    labels, used = est.predict_with_k(X[:5])
    np.testing.assert_array_equal(est.predict(X[:5]), labels)
    np.testing.assert_array_equal(labels, cls().fit(X, S).predict(X[:5]))
    assert used.shape == (5,) and np.all(used >= 1)


# ----------------------------------------------------------------------------- shared selection
@pytest.mark.parametrize("cls", [AknnLearner, AknnMulticlassLearner])
def test_fit_path_learners_predict_as_their_own_fits(cls):
    """One index and one search per query set, to the largest k_max, for every (c, delta,
    k_max): each learner's predictions, decision k and confidences are its own fit's."""
    from plcore.testing import make_pl_data

    X, S, _ = make_pl_data(n_samples=150, r=2, n_classes=4, random_state=7, cluster_std=3.5)
    X_test = make_pl_data(n_samples=60, r=2, n_classes=4, random_state=8, cluster_std=3.5)[0]
    points = [{"c": c, "delta": d, "k_max": k} for c in (0.25, 1.0) for d in (0.1, 0.5) for k in (5, 20, 500)]
    fitted = cls().fit_path(X, S, points)
    for point, learner in zip(points, fitted):
        own = cls().set_params(**point).fit(X, S)
        assert learner.get_params() == own.get_params() and learner.n_neighbors_ == own.n_neighbors_
        for a, b in zip(learner.predict_with_k(X_test), own.predict_with_k(X_test)):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(learner.confidences_, own.confidences_)
    assert len({tuple(m.predict(X_test)) for m in fitted}) > 1   # the points differ here
    with pytest.raises(ValueError, match="c, delta and k_max only"):
        cls().fit_path(X, S, [{"metric": "manhattan"}])


def test_shared_search_over_the_declared_grid_selects_as_grid_search_cv():
    from sklearn.model_selection import GridSearchCV, KFold, ParameterGrid
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from plcore.metrics import get_scorer
    from plcore.run.shared_search import SharedSearchCV, path_keys
    from plcore.testing import make_pl_data
    from plcore_aknn.plugin import AKNN_SEARCH_SPACE

    X, S, _ = make_pl_data(n_samples=150, r=2, n_classes=4, random_state=9, cluster_std=4.0)
    pipe = make_pipeline(StandardScaler(), AknnLearner())
    space = {f"aknnlearner__{p}": v for p, v in AKNN_SEARCH_SPACE.items()}
    cv, scorer = KFold(3, shuffle=True, random_state=0), get_scorer("covering_rate")
    ref = GridSearchCV(pipe, space, scoring=scorer, cv=cv).fit(X, S)
    assert sorted(path_keys(pipe, space)) == sorted(space)   # the whole grid shares one fit
    ours = SharedSearchCV(pipe, list(ParameterGrid(space)), path_keys(pipe, space), scorer, cv).fit(X, S)
    assert ours.best_params_ == ref.best_params_
    np.testing.assert_array_equal(ours.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"])
