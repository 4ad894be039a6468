"""Label-free model selection: scorers from candidate sets only, and nested selection in the protocols."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.model_selection import GridSearchCV, KFold, RandomizedSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from plcore import PlKnnLearner
from plcore.base import BaseReducer
from plcore.data import PLDataset
from plcore.exceptions import ConfigError
from plcore.metrics import (clustering_covering_rate, covering_rate, covering_rate_scorer, get_scorer,
                            partial_log_likelihood)
from plcore.run.protocols import Setup, holdout, kfold
from plcore.testing import make_pl_data

S = np.array([[1, 1, 0], [0, 1, 0], [0, 1, 1], [1, 0, 1]], dtype=bool)


def test_covering_rate_literal():
    assert covering_rate(S, [0, 2, 2, 1]) == 0.5  # rows 0 and 2 hit
    assert covering_rate(sp.csr_matrix(S), ["a", "c", "c", "b"], classes=np.array(["a", "b", "c"])) == 0.5
    with pytest.raises(ValueError, match="not in classes"):
        covering_rate(S, ["a", "z", "c", "b"], classes=np.array(["a", "b", "c"]))


def test_partial_log_likelihood_literal():
    P = np.array([[0.5, 0.25, 0.25], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6], [0.3, 0.4, 0.3]])
    expected = np.mean(np.log([0.75, 0.8, 0.8, 0.6]))
    assert partial_log_likelihood(S, P) == pytest.approx(expected)
    assert partial_log_likelihood(S, np.where(S, 1.0 / S.sum(1, keepdims=True), 0.0)) == pytest.approx(0.0)


def test_clustering_covering_rate_maps_clusters_by_candidate_sets_only():
    # labelled rows 0-3 (row 4 is unlabelled: all classes); clusters 7 -> class 1, 9 -> class 0 covers 3 of 4
    S5 = np.vstack([S, np.ones(3, dtype=bool)])
    labels = np.array([7, 7, 7, 9, 9])
    assert clustering_covering_rate(S5, labels) == pytest.approx(4 / 4)
    assert clustering_covering_rate(S5, np.array([7, 9, 7, 9, 9])) == pytest.approx(3 / 4)
    assert clustering_covering_rate(np.ones((3, 3), bool), [0, 1, 2]) == 0.0


def test_score_is_accuracy_for_labels_and_covering_rate_for_candidate_matrices():
    X, S_, y = make_pl_data(n_samples=90, r=1)
    est = PlKnnLearner(k=3).fit(X, S_)
    assert est.score(X, S_) == covering_rate(S_, est.predict(X), est.classes_)
    assert est.score(X, sp.csr_matrix(S_)) == est.score(X, S_)
    assert PlKnnLearner(k=3).fit(X, y).score(X, y) == np.mean(PlKnnLearner(k=3).fit(X, y).predict(X) == y)


def test_scikit_learn_search_on_candidate_sets_gives_finite_scores():
    X, S_, _ = make_pl_data(n_samples=120, r=1)
    grid = GridSearchCV(PlKnnLearner(), {"k": [3, 10]}, cv=3).fit(X, S_)
    assert np.isfinite(grid.best_score_) and grid.best_params_["k"] in (3, 10)
    scores = cross_val_score(make_pipeline(StandardScaler(), PlKnnLearner()), X, S_, cv=3)
    assert np.isfinite(scores).all() and (scores > 0.5).all()
    rnd = RandomizedSearchCV(PlKnnLearner(), {"k": [3, 5, 10]}, n_iter=2, cv=3, random_state=0,
                             scoring=get_scorer("partial_log_likelihood")).fit(X, S_)
    assert np.isfinite(rnd.best_score_) and rnd.best_score_ <= 0


def _dataset():
    X, S_, y = make_pl_data(n_samples=90, r=2, n_classes=4, random_state=2, cluster_std=2.5)
    return PLDataset(X, S_, y)


def test_nested_grid_selection_logs_choices_and_matches_a_search_on_the_training_fold():
    ds = _dataset()
    select = {"method": "grid", "space": {"learner.k": [1, 3, 9]}, "cv": 3}
    res = kfold(Setup(learner=PlKnnLearner()), ds, n_splits=3, select=select, refit=False, progress=False)
    chosen = [s["selected.learner.k"] for s in res.steps]
    assert len(chosen) == 3 and set(chosen) <= {1, 3, 9}
    # fold 0 by hand: the same search on the training part only (never the test part, never y)
    train, _ = next(KFold(3, shuffle=True, random_state=0).split(ds.X))
    pipe = make_pipeline(StandardScaler(), PlKnnLearner())
    ref = GridSearchCV(pipe, {"plknnlearner__k": [1, 3, 9]}, scoring=covering_rate_scorer,
                       cv=KFold(3, shuffle=True, random_state=0)).fit(ds.X[train], ds.S[train])
    assert chosen[0] == ref.best_params_["plknnlearner__k"]


def test_nested_random_selection_and_holdout():
    ds = _dataset()
    select = {"method": "random", "space": {"learner.k": [1, 3, 5, 7, 9]}, "n_iter": 2, "cv": 2}
    res = holdout(Setup(learner=PlKnnLearner()), ds, n_repeats=2, select=select, progress=False)
    assert all(s["selected.learner.k"] in (1, 3, 5, 7, 9) for s in res.steps)
    assert res.model["pipeline"][-1].k in (1, 3, 5, 7, 9)  # the refit searched on all rows


def test_declared_space_is_used_when_none_is_given():
    res = kfold(Setup(learner=PlKnnLearner()), _dataset(), n_splits=2, select={"method": "grid"}, refit=False,
                progress=False)
    assert all(s["selected.learner.k"] in (3, 5, 10, 20) for s in res.steps)  # PL-KNN's declared grid


def test_missing_skip_drops_parameters_the_run_lacks():
    """A sweep over several learners names one learner's parameter: ``missing=skip`` searches it
    where the learner has it and runs the defaults elsewhere (``error``, the default, refuses)."""
    space = {"learner.C": [0.1, 10.0], "learner.k": [1, 9]}
    select = {"method": "grid", "space": space, "missing": "skip", "cv": 2}
    res = kfold(Setup(learner=PlKnnLearner()), _dataset(), n_splits=2, select=select, refit=False,
                progress=False)
    assert all(set(k for k in s if k.startswith("selected.")) == {"selected.learner.k"} for s in res.steps)
    none_left = {"method": "grid", "space": {"learner.C": [0.1, 10.0]}, "missing": "skip"}
    plain = kfold(Setup(learner=PlKnnLearner()), _dataset(), n_splits=2, refit=False, progress=False)
    res = kfold(Setup(learner=PlKnnLearner()), _dataset(), n_splits=2, select=none_left, refit=False,
                progress=False)
    assert [s["accuracy"] for s in res.steps] == [s["accuracy"] for s in plain.steps]
    assert not any(k.startswith("selected.") for s in res.steps for k in s)
    with pytest.raises(ConfigError, match="has no parameter 'C'"):
        kfold(Setup(learner=PlKnnLearner()), _dataset(), n_splits=2, select={**none_left, "missing": "error"},
              progress=False)
    # a component that declares no grid (k-means beside PLC in a sweep): skip runs it untuned
    class Untuned(PlKnnLearner):
        """Not registered: no declared search space."""

    declared = {"method": "grid", "missing": "skip", "cv": 2}
    res = kfold(Setup(learner=Untuned()), _dataset(), n_splits=2, select=declared, refit=False, progress=False)
    assert [s["accuracy"] for s in res.steps] == [s["accuracy"] for s in plain.steps]
    with pytest.raises(ConfigError, match="declare no search space"):
        kfold(Setup(learner=Untuned()), _dataset(), n_splits=2, select={**declared, "missing": "error"},
              progress=False)


@pytest.mark.parametrize("select, match", [
    ({"method": "best"}, "method must be none, grid, random or oracle"),
    ({"method": "grid", "space": {"k": [1]}}, "must be learner.<param>"),
    ({"method": "grid", "space": {"learner.kk": [1]}}, "has no parameter 'kk'"),
    ({"method": "grid", "space": {"learner.k": []}}, "non-empty list"),
    ({"method": "grid", "cv": 1}, "cv must be an integer >= 2"),
    ({"method": "grid", "scoring": "no_such_score"}, "scoring 'no_such_score' is unknown"),
    ({"method": "grid", "folds": 3}, "has no key"),
    ({"method": "grid", "missing": "ignore"}, "missing must be error or skip"),
])
def test_bad_selection_settings_are_one_line_errors(select, match):
    with pytest.raises(ConfigError, match=match):
        kfold(Setup(learner=PlKnnLearner()), _dataset(), n_splits=2, select=select, progress=False)


def test_selection_refuses_exact_label_baselines_and_transductive_reducers():
    class Exact(PlKnnLearner):
        def __sklearn_tags__(self):
            tags = super().__sklearn_tags__()
            tags.pll_tags.exact_label_baseline = True
            return tags

    grid = {"method": "grid", "space": {"learner.k": [1, 3]}}
    with pytest.raises(ConfigError, match="exact-label baseline"):
        kfold(Setup(learner=Exact()), _dataset(), n_splits=2, select=grid, progress=False)
    with pytest.raises(ConfigError, match="fit_reducer_on=all"):
        kfold(Setup(reducer=Identity(), learner=PlKnnLearner()), _dataset(), n_splits=2, select=grid,
              fit_reducer_on="all", progress=False)


class Identity(BaseReducer):
    """Identity reducer (test helper)."""

    def _fit(self, X, S):
        self.n_components_ = X.shape[1]
        self.confidences_ = S / S.sum(axis=1, keepdims=True)

    def _transform(self, X):
        return X


def test_clustering_selects_by_the_labelled_candidate_sets_only():
    from sklearn.cluster import KMeans

    from plcore.base import BaseClusterer
    from plcore.run.protocols import clustering
    from plcore.validation import Integral, Interval

    class Km(BaseClusterer):
        _parameter_constraints = {"n_clusters": [Interval(Integral, 1, None, closed="left")],
                                  "random_state": ["random_state"]}

        def __init__(self, n_clusters=2, random_state=0):
            self.n_clusters = n_clusters
            self.random_state = random_state

        def _fit(self, X, S):
            self.labels_ = KMeans(self.n_clusters, n_init=3, random_state=self.random_state).fit_predict(X)

    X, S_, y = make_pl_data(n_samples=120, n_classes=3, r=1, cluster_std=0.5)
    ds = PLDataset(X, S_, y)
    select = {"method": "grid", "space": {"clusterer.n_clusters": [2, 3, 6]}}
    res = clustering(Setup(clusterer=Km()), ds, rho=0.3, n_partitions=2, select=select, progress=False)
    # three well-separated blobs: the candidate sets of 30% of the rows suffice to pick 3 clusters
    assert [s["selected.clusterer.n_clusters"] for s in res.steps] == [3, 3]
    assert res.summary["acc_mean"] > 0.9
    # every candidate's ACC on the evaluated rows is reported (never used to select)
    assert res.extra["candidates"] == [{"n_clusters": 2}, {"n_clusters": 3}, {"n_clusters": 6}]
    acc = res.extra["candidate_acc"]
    assert acc.shape == (2, 3) and np.allclose(acc[:, 1], [s["acc"] for s in res.steps])
    rnd = clustering(Setup(clusterer=Km()), ds, rho=0.3, n_partitions=2, progress=False,
                     select={**select, "method": "random", "n_iter": 2})
    assert len(rnd.extra["candidates"]) == 2   # the same two draws on every partition
    assert all(s["selected.clusterer.n_clusters"] in [c["n_clusters"] for c in rnd.extra["candidates"]]
               for s in rnd.steps)
    with pytest.raises(ConfigError, match="not available for clusterers"):
        clustering(Setup(clusterer=Km()), ds, n_partitions=1, progress=False,
                   select={**select, "scoring": "partial_log_likelihood"})


def test_oracle_picks_the_best_test_accuracy_and_is_labelled_so(capsys):
    ds = _dataset()
    space = {"learner.k": [1, 9]}
    each = {k: kfold(Setup(learner=PlKnnLearner(k=k)), ds, n_splits=3, refit=False, progress=False)
            for k in (1, 9)}
    best_k = max(each, key=lambda k: each[k].summary["accuracy_mean"])
    logged = []
    res = kfold(Setup(learner=PlKnnLearner()), ds, n_splits=3, select={"method": "oracle", "space": space},
                refit=False, progress=False, callback=logged.append)
    assert res.tags["selection"] == "oracle" and "not a result" in res.tags["selection.note"]
    assert res.summary["accuracy_mean"] == each[best_k].summary["accuracy_mean"]
    assert [s["selected.learner.k"] for s in logged] == [best_k] * 3
    assert "ORACLE" in capsys.readouterr().out


def test_reproduction_table_never_calls_an_oracle_run_ours():
    from plcore.run.report import RunRecord, reproduction_table

    params = {"paper.source": "P", "paper.setting": "lost", "paper.metric": "accuracy_mean", "paper.value": "0.5"}
    run = RunRecord("r", "n", params, {"accuracy_mean": 0.6, "accuracy_std": 0.1}, {"selection": "oracle"})
    assert "ORACLE: tuned on the test labels, not ours" in reproduction_table([run])


def test_nested_selection_by_approximated_accuracy_matches_a_search_with_its_scorer():
    """PLENCH's AA as the inner criterion: the protocol's choice is a GridSearchCV scored by
    ``approximated_accuracy`` on the training part's candidate sets."""
    ds = _dataset()
    select = {"method": "grid", "space": {"learner.k": [1, 3, 9]}, "cv": 3, "scoring": "approximated_accuracy"}
    res = kfold(Setup(learner=PlKnnLearner()), ds, n_splits=3, select=select, refit=False, progress=False)
    train, _ = next(KFold(3, shuffle=True, random_state=0).split(ds.X))
    ref = GridSearchCV(make_pipeline(StandardScaler(), PlKnnLearner()), {"plknnlearner__k": [1, 3, 9]},
                       scoring=get_scorer("approximated_accuracy"),
                       cv=KFold(3, shuffle=True, random_state=0)).fit(ds.X[train], ds.S[train])
    assert res.steps[0]["selected.learner.k"] == ref.best_params_["plknnlearner__k"]
    scores = ref.cv_results_["mean_test_score"]
    assert np.all((scores > 0) & (scores <= 1)) and len(set(np.round(scores, 12))) > 1   # AA in (0, 1], informative
