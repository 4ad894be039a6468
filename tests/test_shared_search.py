"""Nested selection that fits once what its candidates share (plcore.run.shared_search): the
shared neighbour search gives each k what its own search gives, the shared fits predict as
their own fits do, and the shared search selects and scores as scikit-learn's search does."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold, ParameterGrid, ParameterSampler, RandomizedSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from plcore import PlKnnLearner
from plcore.base import BaseReducer
from plcore.data import PLDataset
from plcore.exceptions import ConfigError
from plcore.metrics import get_scorer
from plcore.neighbors import NeighborIndex, SharedQueries
from plcore.run.protocols import Setup, kfold
from plcore.run.selection import check_select, make_search
from plcore.run.shared_search import SharedSearchCV, path_keys
from plcore.testing import make_pl_data


def _data(seed=2, n=120):
    X, S, y = make_pl_data(n_samples=n, r=2, n_classes=4, random_state=seed, cluster_std=2.5)
    return X, S, y


@pytest.mark.parametrize("algorithm", ["brute", "kd_tree", "brute32"])
def test_shared_queries_give_each_k_what_its_own_search_gives(algorithm):
    X, _, _ = _data()
    Q = np.random.default_rng(0).normal(size=(30, X.shape[1]))
    index = NeighborIndex(X, algorithm=algorithm)
    shared = SharedQueries(index, k_max=12)
    for query in (None, Q, None, Q[:7]):
        for k in (12, 1, 5, 9):
            d, i = shared.kneighbors(query, n_neighbors=k)
            d_ref, i_ref = index.kneighbors(query, n_neighbors=k)
            np.testing.assert_array_equal(i, i_ref)
            np.testing.assert_array_equal(d, d_ref)
    d, i = shared.kneighbors(Q, n_neighbors=20)   # beyond k_max: searched again, still exact
    np.testing.assert_array_equal(i, index.kneighbors(Q, n_neighbors=20)[1])
    assert shared.n_samples_ == X.shape[0] and shared.kneighbors(Q, 3, return_distance=False).shape == (30, 3)
    with pytest.raises(ValueError, match="n_neighbors"):
        shared.kneighbors(None, n_neighbors=X.shape[0])


def test_shared_queries_search_each_query_set_once():
    X, _, _ = _data()
    calls = []

    class Counting(NeighborIndex):
        def kneighbors(self, X=None, n_neighbors=None, return_distance=True):
            calls.append(n_neighbors)
            return super().kneighbors(X, n_neighbors, return_distance)

    shared = SharedQueries(Counting(X), k_max=10)
    Q = X[:20] + 0.1
    for k in (10, 3, 7, 1):
        shared.kneighbors(Q.copy(), n_neighbors=k)   # a copy: equal by value, as validation makes it
    assert calls == [10]


@pytest.mark.parametrize("sparse", [False, True])
def test_fit_path_learners_predict_as_their_own_fits(sparse):
    X, S, _ = _data()
    S = sp.csr_matrix(S) if sparse else S
    X_test = _data(seed=5, n=40)[0]
    points = [{"k": k, "weights": w} for w in ("linear", "uniform") for k in (1, 3, 10, 25)] + [{"k": 7}]
    fitted = PlKnnLearner(weights="uniform").fit_path(X, S, points)
    assert len(fitted) == len(points)
    for point, learner in zip(points, fitted):
        own = PlKnnLearner(weights="uniform").set_params(**point).fit(X, S)
        assert learner.get_params() == own.get_params()
        np.testing.assert_array_equal(learner.confidences_, own.confidences_)
        np.testing.assert_array_equal(learner.predict_proba(X_test), own.predict_proba(X_test))
        np.testing.assert_array_equal(learner.predict(X_test), own.predict(X_test))
        np.testing.assert_array_equal(learner.classes_, own.classes_)


def test_fit_path_warns_for_a_k_above_the_training_set_as_a_fit_does():
    X, S, _ = _data(n=12)
    with pytest.warns(UserWarning, match="k=50 is larger than the training set"):
        fitted = PlKnnLearner().fit_path(X, S, [{"k": 3}, {"k": 50}])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        own = PlKnnLearner(k=50).fit(X, S)
    np.testing.assert_array_equal(fitted[1].predict_proba(X), own.predict_proba(X))
    with pytest.raises(ValueError, match="k and weights only"):
        PlKnnLearner().fit_path(X, S, [{"metric": "manhattan"}])


class Truncate(BaseReducer):
    """Keeps the first ``n_components`` features; counts its fits (test helper)."""

    fits = 0

    def __init__(self, n_components=2):
        self.n_components = n_components

    def _fit(self, X, S):
        type(self).fits += 1
        self.n_components_ = min(self.n_components, X.shape[1])
        self.confidences_ = S / S.sum(axis=1, keepdims=True)

    def _transform(self, X):
        return X[:, :self.n_components_]


def _same_search(ours, ref, X_test):
    assert ours.best_params_ == ref.best_params_ and ours.best_index_ == ref.best_index_
    assert ours.best_score_ == ref.best_score_
    np.testing.assert_array_equal(ours.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"])
    np.testing.assert_array_equal(ours.cv_results_["rank_test_score"], ref.cv_results_["rank_test_score"])
    np.testing.assert_array_equal(ours.best_estimator_.predict(X_test), ref.best_estimator_.predict(X_test))


@pytest.mark.parametrize("scoring", ["covering_rate", "partial_log_likelihood", "approximated_accuracy"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_shared_grid_search_scores_and_selects_as_grid_search_cv(scoring, seed):
    X, S, _ = _data(seed=seed)
    pipe = make_pipeline(StandardScaler(), Truncate(), PlKnnLearner())
    space = {"truncate__n_components": [1, 2], "plknnlearner__k": [1, 3, 5, 9, 15],
             "plknnlearner__weights": ["linear", "uniform"]}
    cv = KFold(3, shuffle=True, random_state=seed)
    scorer = get_scorer(scoring)
    Truncate.fits = 0
    ref = GridSearchCV(pipe, space, scoring=scorer, cv=cv, error_score="raise").fit(X, S)
    fits_alone = Truncate.fits
    Truncate.fits = 0
    path = path_keys(pipe, space)
    assert sorted(path) == ["plknnlearner__k", "plknnlearner__weights"]
    ours = SharedSearchCV(pipe, list(ParameterGrid(space)), path, scorer, cv).fit(X, S)
    _same_search(ours, ref, _data(seed=9, n=40)[0])
    assert (fits_alone, Truncate.fits) == (2 * 10 * 3 + 1, 2 * 3 + 1)   # the reducer: once per n_components and fold


def test_shared_random_search_draws_and_selects_as_randomized_search_cv():
    X, S, _ = _data(seed=3)
    pipe = make_pipeline(StandardScaler(), PlKnnLearner())
    space = {"plknnlearner__k": list(range(1, 30)), "plknnlearner__weights": ["linear", "uniform"]}
    cv = KFold(3, shuffle=True, random_state=4)
    scorer = get_scorer("covering_rate")
    ref = RandomizedSearchCV(pipe, space, n_iter=6, random_state=4, scoring=scorer, cv=cv).fit(X, S)
    points = list(ParameterSampler(space, n_iter=6, random_state=4))
    ours = SharedSearchCV(pipe, points, path_keys(pipe, space), scorer, cv).fit(X, S)
    assert ours.cv_results_["params"] == list(ref.cv_results_["params"])
    _same_search(ours, ref, X[:30])


def test_make_search_shares_where_the_learner_offers_it_and_falls_back_to_scikit_learn():
    setup = Setup(learner=PlKnnLearner())
    pipe = make_pipeline(StandardScaler(), PlKnnLearner())
    grid = check_select({"method": "grid", "space": {"learner.k": [1, 3]}}, setup)
    assert isinstance(make_search(pipe, grid, 0), SharedSearchCV)
    assert isinstance(make_search(pipe, {**grid, "shared": False}, 0), GridSearchCV)

    class Plain(PlKnnLearner):   # a learner without the tag
        def __sklearn_tags__(self):
            tags = super().__sklearn_tags__()
            tags.pll_tags.path_params = ()
            return tags

    assert isinstance(make_search(make_pipeline(StandardScaler(), Plain()), grid, 0), GridSearchCV)
    with pytest.raises(ConfigError, match="shared must be true or false"):
        check_select({"method": "grid", "space": {"learner.k": [1, 3]}, "shared": "yes"}, setup)


def test_nested_selection_gives_the_same_folds_and_figures_shared_or_not():
    X, S, y = _data(seed=6, n=150)
    ds = PLDataset(X, S, y)
    setup = Setup(reducer=Truncate(), learner=PlKnnLearner())
    select = {"method": "grid", "space": {"learner.k": [1, 5, 12], "reducer.n_components": [1, 2]}, "cv": 3}
    runs = [kfold(setup, ds, n_splits=3, select={**select, "shared": shared}, refit=False, progress=False)
            for shared in (True, False)]
    for a, b in zip(*(r.steps for r in runs)):
        assert {k: v for k, v in a.items() if "time" not in k} == {k: v for k, v in b.items() if "time" not in k}
    assert runs[0].summary["accuracy_mean"] == runs[1].summary["accuracy_mean"] > 0.5
    assert clone(setup.learner).get_params() == PlKnnLearner().get_params()
