"""The public conformance suite on the built-in components, and on broken ones."""

import numpy as np
import pytest
from sklearn.cluster import KMeans
from sklearn.decomposition import PCA
from sklearn.linear_model import LinearRegression

from plcore.base import BaseClusterer, BaseLearner, BaseReducer  # noqa: F401
from plcore.datasets import ClusterNoisyBags, DropTrueBags, FixedSizeBags, NoisyBags, UniformBags
from plcore.learners import PlKnnLearner
from plcore.testing import check_component, parametrize_with_checks, yield_pll_checks
from plcore.validation import Integral, Interval


# --- minimal correct reducer / clusterer, to exercise those branches of the suite -----
class PcaReducer(BaseReducer):
    """Unsupervised PCA with uniform-over-candidates confidences (test helper)."""

    _parameter_constraints = {"n_components": [Interval(Integral, 1, None, closed="left")],
                              "random_state": ["random_state"]}

    def __init__(self, n_components=2, random_state=None):
        self.n_components = n_components
        self.random_state = random_state

    def _fit(self, X, S):
        self.pca_ = PCA(self.n_components, random_state=self.random_state).fit(X)
        self.n_components_ = self.n_components
        S = S.toarray() if hasattr(S, "toarray") else np.asarray(S, dtype=float)
        self.confidences_ = S / S.sum(axis=1, keepdims=True)

    def _transform(self, X):
        return self.pca_.transform(X)


class KMeansClusterer(BaseClusterer):
    """k-means ignoring the candidate sets (test helper)."""

    _parameter_constraints = {"n_clusters": [Interval(Integral, 1, None, closed="left")],
                              "random_state": ["random_state"]}

    def __init__(self, n_clusters=3, random_state=None):
        self.n_clusters = n_clusters
        self.random_state = random_state

    def _fit(self, X, S):
        self.labels_ = KMeans(self.n_clusters, n_init=3, random_state=self.random_state).fit_predict(X)


COMPONENTS = [
    PlKnnLearner(k=3),
    PlKnnLearner(k=10, weights="uniform"),
    PcaReducer(),
    KMeansClusterer(),
    UniformBags(r=1),
    FixedSizeBags(s=2),
    ClusterNoisyBags(n_clusters=3, eta=0.2),
    DropTrueBags(eta=0.3),
    NoisyBags(q=0.2, eta=0.3),
]


@parametrize_with_checks(COMPONENTS)
def test_conformance(estimator, check):
    check(estimator)


# --- broken components: each must be caught by the named check --------------------------
class OffCandidateConfidences(PlKnnLearner):
    """Puts confidence mass outside the candidate sets."""

    def _fit(self, X, S):
        super()._fit(X, S)
        self.confidences_ = np.full(self.confidences_.shape, 1.0 / self.confidences_.shape[1])


class UnnormalisedConfidences(PlKnnLearner):
    def _fit(self, X, S):
        super()._fit(X, S)
        self.confidences_ = self.confidences_ * 2


class PredictsOutsideClasses(PlKnnLearner):
    def predict(self, X):
        return np.full(len(X), 99)


class IgnoresSparse(PlKnnLearner):
    """Mishandles sparse candidate matrices (treats them as all-candidate)."""

    def _fit(self, X, S):
        if hasattr(S, "toarray"):
            S = np.ones(S.shape, dtype=bool)
        super()._fit(X, S)


class AcceptsEmptyRows(BaseLearner):
    """Skips validation of the candidate matrix and learns nothing."""

    def __init__(self):
        pass

    def fit(self, X, y):
        self.classes_ = np.arange(np.shape(y)[1]) if np.ndim(y) == 2 else np.unique(y)
        self.n_features_in_ = np.shape(X)[1]
        return self

    def _fit(self, X, S):  # pragma: no cover - never called
        pass

    def _scores(self, X):
        return np.zeros((len(X), len(self.classes_)))


class DropsRowsReducer(PcaReducer):
    def _transform(self, X):
        return super()._transform(X)[:-1]


class ShufflesRowsReducer(PcaReducer):
    def _transform(self, X):
        Z = super()._transform(X)
        return Z[np.argsort(Z[:, 0])]


class UnseededReducer(PcaReducer):
    """Random projection that ignores random_state."""

    def _fit(self, X, S):
        super()._fit(X, S)
        self.P_ = np.random.default_rng().normal(size=(X.shape[1], self.n_components))

    def _transform(self, X):
        return X @ self.P_


class RunningMeans(BaseLearner):
    """Tiny online learner: running candidate-weighted class means."""

    def __init__(self):
        pass

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.pll_tags.online = True
        return tags

    def partial_fit(self, X, y, classes=None):
        X = np.asarray(X, dtype=float)
        S = np.asarray(y, dtype=float)
        if not hasattr(self, "sums_"):
            self.classes_ = np.asarray(classes)
            self.sums_ = np.zeros((len(classes), X.shape[1]))
            self.counts_ = np.zeros(len(classes))
            self.n_features_in_ = X.shape[1]
        if len(X):
            w = S / S.sum(axis=1, keepdims=True)
            self.sums_ += w.T @ X
            self.counts_ += w.sum(axis=0)
        return self

    def _fit(self, X, S):  # pragma: no cover - unused here
        pass

    def predict(self, X):
        means = self.sums_ / np.maximum(self.counts_, 1e-12)[:, None]
        d = ((np.asarray(X)[:, None, :] - means[None]) ** 2).sum(-1)
        return self.classes_[np.argmin(np.where(self.counts_ > 0, d, np.inf), axis=1)]

    def _scores(self, X):  # pragma: no cover - unused here
        pass


class WrongFastPath(RunningMeans):
    """Registered with a prequential kernel that updates before predicting (see BROKEN_SPECS)."""


def _update_then_predict(learner, X, S, classes):
    learner.partial_fit(X, S, classes=classes)  # updates before predicting: not prequential
    return learner.predict(X)


#: broken components that are only broken through what they register
BROKEN_SPECS = {WrongFastPath: dict(prequential=_update_then_predict)}


class ChunkDependent(RunningMeans):
    def partial_fit(self, X, y, classes=None):
        first = not hasattr(self, "sums_")
        super().partial_fit(X, y, classes=classes)
        if not first:
            self.sums_ *= 0.5  # forgets earlier chunks: chunking changes the model
        return self


class EmptyBags(UniformBags):
    def _generate(self, y, n_classes, rng, X=None, S=None):
        out = super()._generate(y, n_classes, rng)
        out[::7] = False
        return out


class UndeclaredNoiseBags(UniformBags):
    """Leaves true labels out without the tag noisy_candidates."""

    def _generate(self, y, n_classes, rng, X=None, S=None):
        out = super()._generate(y, n_classes, rng)
        out[::9] = ~out[::9]
        return out


class UnseededBags(UniformBags):
    def _generate(self, y, n_classes, rng, X=None, S=None):
        return super()._generate(y, n_classes, np.random.RandomState())


BROKEN = [
    (OffCandidateConfidences(k=3), "check_confidences"),
    (UnnormalisedConfidences(k=3), "check_confidences"),
    (PredictsOutsideClasses(k=3), "check_predictions_in_classes"),
    (IgnoresSparse(k=3), "check_candidate_matrix_dense_and_sparse"),
    (AcceptsEmptyRows(), "check_bad_input_raises"),
    (DropsRowsReducer(), "check_reducer_keeps_rows"),
    (ShufflesRowsReducer(), "check_reducer_keeps_rows"),
    (UnseededReducer(), "check_deterministic_under_seed"),
    (EmptyBags(r=1), "check_bags_valid"),
    (UndeclaredNoiseBags(r=1), "check_bags_valid"),
    (WrongFastPath(), "check_partial_fit_stream"),
    (ChunkDependent(), "check_partial_fit_stream"),
    (UnseededBags(r=1), "check_deterministic_under_seed"),
]


@pytest.mark.parametrize("estimator, check_name", BROKEN, ids=[type(e).__name__ for e, _ in BROKEN])
def test_suite_catches_broken_component(estimator, check_name, monkeypatch):
    if type(estimator) in BROKEN_SPECS:
        from plcore.registry import Component, ComponentSpec, get_registry

        spec = ComponentSpec("learner", "broken", type(estimator), **BROKEN_SPECS[type(estimator)])
        monkeypatch.setitem(get_registry().components, ("learner", "broken"),
                            Component(spec, "tests", "tests", "0"))
    checks = {c.func.__name__: c for c in yield_pll_checks(estimator)}
    with pytest.raises(AssertionError):
        checks[check_name](estimator)
    with pytest.raises(Exception):  # the first failing check (AssertionError or a crash)
        check_component(estimator, sklearn_checks=False)


def test_check_component_passes_good_learner():
    check_component(PlKnnLearner(k=5))


def test_suite_rejects_non_component():
    with pytest.raises(TypeError, match="not a plcore component"):
        list(yield_pll_checks(LinearRegression()))  # neither a plcore base class nor a transformer


def test_transformers_get_the_preprocessor_checks():
    names = [c.func.__name__ for c in yield_pll_checks(PCA())]
    assert names == ["check_parameter_constraints", "check_param_validation"]


def test_expected_failed_checks_are_skipped():
    # The broken learner passes when its failing check is declared as expected to fail.
    check_component(OffCandidateConfidences(k=3), sklearn_checks=False,
                    expected_failed_checks={"check_confidences": "known"})


def test_clusterer_fit_predict_passes_candidate_sets():
    class FirstCandidate(BaseClusterer):
        def __init__(self):
            pass

        def _fit(self, X, S):
            self.labels_ = np.zeros(len(X), int) if S is None else np.argmax(np.asarray(S), axis=1)

    X = np.random.RandomState(0).normal(size=(6, 2))
    S = np.eye(3, dtype=bool)[[2, 1, 0, 2, 1, 0]]
    np.testing.assert_array_equal(FirstCandidate().fit_predict(X, S), [2, 1, 0, 2, 1, 0])


class BadGrid(PlKnnLearner):
    """Registered below with a search space holding an invalid value (k=0)."""


@pytest.mark.parametrize("field, space, match", [
    ("search_space", {"k": [3, 0]}, "'k' parameter"), ("search_space", {"kk": [3]}, "not a constructor"),
    ("search_distributions", {"k": {"uniform": [1, 20]}}, "'k' parameter"),  # draws floats; k is an int
    ("search_distributions", {"kk": {"pow2_int": [1, 4]}}, "search_distributions names 'kk'"),
])
def test_search_space_check_catches_bad_grids(field, space, match, monkeypatch):
    from plcore.registry import Component, ComponentSpec, get_registry
    from plcore.testing import check_search_space

    spec = ComponentSpec("learner", "bad_grid", BadGrid, **{field: space})
    monkeypatch.setitem(get_registry().components, ("learner", "bad_grid"), Component(spec, "t", "t", "0"))
    with pytest.raises(Exception, match=match):
        check_search_space("BadGrid", BadGrid())


# ----------------------------------------------------------------------------- one source for defaults
def _plknn_spec():
    from plcore.registry import get_registry

    return get_registry().get("learner", "plknn").spec


def test_declared_config_differing_from_the_constructor_is_refused(monkeypatch):
    from plcore.testing import check_declared_config

    spec = _plknn_spec()
    check_declared_config("plknn", PlKnnLearner())  # as registered: equal value by value
    monkeypatch.setattr(spec, "config", {**spec.config, "k": 7})  # a default changed in one place only
    with pytest.raises(AssertionError, match=r"differs from the constructor's defaults \{'k': \(7, 10\)\}"):
        check_declared_config("plknn", PlKnnLearner())


def test_a_deliberate_difference_is_declared_once_and_composed(monkeypatch):
    from plcore.registry import get_registry
    from plcore.testing import check_declared_config

    spec = _plknn_spec()
    monkeypatch.setattr(spec, "config_overrides", {"k": 7})
    check_declared_config("plknn", PlKnnLearner())
    assert get_registry().get("learner", "plknn").config()["k"] == 7
    monkeypatch.setattr(spec, "config_overrides", {"k": 10})  # no difference: nothing to declare
    with pytest.raises(AssertionError, match="the constructor's default already"):
        check_declared_config("plknn", PlKnnLearner())
    monkeypatch.setattr(spec, "config_overrides", {"kk": 3})
    with pytest.raises(AssertionError, match="not a constructor parameter"):
        check_declared_config("plknn", PlKnnLearner())


def test_uniform_bags_compose_the_papers_r_declared_as_an_override():
    from plcore.registry import get_registry

    comp = get_registry().get("bags", "uniform")
    assert comp.spec.config["r"] == UniformBags().r == 1 and comp.spec.config_overrides == {"r": 3}
    assert comp.config()["r"] == 3
