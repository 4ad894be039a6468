"""Interfaces every plcore component implements (DESIGN.md section 2).

Each base class is a template: the public methods validate their input once, with the
same checks and messages everywhere, then call a private step that implementers write.

=================  ===============================  ====================================
kind               implement                        you get
=================  ===============================  ====================================
``Learner``        ``_fit(X, S)``, ``_scores(X)``   ``fit``, ``predict``, ``score``
``Reducer``        ``_fit(X, S)``, ``_transform``   ``fit``, ``transform``, ``fit_transform``
``Clusterer``      ``_fit(X, S)`` setting labels_   ``fit``, ``fit_predict``
``BagGenerator``   ``_generate(y, q, rng, X, S)``   ``generate``
=================  ===============================  ====================================

``S`` reaching a private step is a validated candidate matrix (``S.shape == (n, q)``) in
the representation the estimator's tags ask for (:mod:`plcore.tags`): a dense boolean
ndarray, or -- with ``accepts_sparse_candidates`` -- a CSR matrix of ones when the input
was sparse. ``y`` in a public signature may be 1-D labels (singleton candidate sets) or
that candidate matrix. Constructor parameters are checked once per ``fit`` against the
class's ``_parameter_constraints`` (:mod:`plcore.validation`).
"""

from __future__ import annotations

from abc import ABCMeta, abstractmethod

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, ClusterMixin, TransformerMixin
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted, validate_data

from plcore.data import candidates_from_target, check_candidates, check_features
from plcore.exceptions import DataValidationError
from plcore.tags import Tags, get_pll_tags
from plcore.utils import dense_candidates
from plcore.validation import check_data_limits, validate_params

__all__ = ["BaseLearner", "BaseReducer", "BaseClusterer", "BaseBagGenerator", "KINDS"]


def _validate_X(estimator, X, *, reset: bool):
    """Shared X validation: dense float64, finite (rows named), feature count tracked."""
    X = validate_data(estimator, X, reset=reset, dtype=np.float64, ensure_all_finite=False,
                      accept_sparse=False)
    return check_features(X)


class _PLLTagsMixin:
    """Adds the partial-label tags (:class:`plcore.tags.PLLTags`) to scikit-learn's tags.

    Also the default of ``_parameter_constraints`` (none declared: nothing checked); every
    component declares its own, and the conformance suite requires one per parameter.
    """

    _parameter_constraints: dict = {}

    def __sklearn_tags__(self):
        return Tags.from_sklearn(super().__sklearn_tags__())


def _candidate_input(estimator, S):
    """``S`` (validated, bool ndarray or CSR) in the representation the estimator's tags ask for."""
    if sp.issparse(S) and not get_pll_tags(estimator).accepts_sparse_candidates:
        return dense_candidates(S)
    return S


class _PLLFitMixin(_PLLTagsMixin):
    """``fit(X, y)`` for estimators that learn from candidate sets."""

    def _validate_fit(self, X, y):
        """Check the parameters, ``X`` and ``y``; set ``classes_``; return ``X, S``."""
        validate_params(self)
        X = _validate_X(self, X, reset=True)
        S, classes, _ = candidates_from_target(y, n_samples=X.shape[0])
        check_data_limits(self, n_samples=X.shape[0], n_features=X.shape[1], n_classes=S.shape[1])
        self.classes_ = classes
        return X, _candidate_input(self, S)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags


def _finite_scores(estimator, scores):
    """``scores``, unless a row has a NaN or no finite maximum (an overflow or a failure inside
    the method): such a row would become an arbitrary prediction, so it raises instead."""
    scores = np.asarray(scores)
    bad = np.isnan(scores).any(axis=1) | ~np.isfinite(np.max(scores, axis=1))
    if bad.any():
        raise DataValidationError(f"{type(estimator).__name__}: non-finite scores for rows "
                                  f"{np.flatnonzero(bad)[:10].tolist()} (an overflow or NaN inside the method); "
                                  "scale the features or check the data")
    return scores


class BaseLearner(_PLLFitMixin, ClassifierMixin, BaseEstimator, metaclass=ABCMeta):
    """A partial-label classifier.

    ``fit(X, y)`` takes 1-D labels or an ``(n, q)`` candidate matrix and returns self;
    ``predict(X)`` returns labels from ``classes_``. Implement ``_fit(X, S)`` and
    ``_scores(X)`` (an ``(n, q)`` array whose argmax is the prediction). Learners that
    disambiguate their training data set ``confidences_`` (rows on candidates, sum 1).
    """

    def fit(self, X, y):
        """Fit on features ``X`` and labels / candidate matrix ``y``; return self."""
        X, S = self._validate_fit(X, y)
        self._fit(X, S)
        return self

    def predict(self, X):
        """Predicted labels, one per row of ``X``, taken from ``classes_``."""
        check_is_fitted(self)
        scores = _finite_scores(self, self._scores(self._validate_predict(X)))
        return self.classes_[np.argmax(scores, axis=1)]

    def _validate_predict(self, X):
        return _validate_X(self, X, reset=False)

    def score(self, X, y, sample_weight=None):
        """Accuracy for 1-D labels; for an ``(n, q)`` candidate matrix the covering rate (the
        fraction of predictions inside their candidate sets), so that scikit-learn's
        ``cross_val_score`` and search classes work on ``(X, S)`` without true labels."""
        if sp.issparse(y) or np.ndim(y) == 2:
            from plcore.metrics import covering_rate

            if sample_weight is not None:
                raise DataValidationError("sample_weight is not supported with a candidate matrix")
            return covering_rate(y, self.predict(X), self.classes_)
        return super().score(X, y, sample_weight=sample_weight)

    @abstractmethod
    def _fit(self, X, S):
        """Learn from validated ``X`` (n, d) and candidate matrix ``S`` (n, q)."""

    @abstractmethod
    def _scores(self, X):
        """Return an (n, q) score array for validated ``X``; argmax = prediction."""


class BaseReducer(_PLLFitMixin, TransformerMixin, BaseEstimator, metaclass=ABCMeta):
    """A supervised dimensionality reducer / feature selector for partial labels.

    Implement ``_fit(X, S)`` (setting ``n_components_`` and ``confidences_``) and
    ``_transform(X)``. Works as the first step of ``make_pipeline(reducer, learner)``.
    """

    def fit(self, X, y):
        """Fit on ``X`` and labels / candidate matrix ``y``; return self."""
        X, S = self._validate_fit(X, y)
        self._fit(X, S)
        return self

    def transform(self, X):
        """Reduced features, one row per row of ``X`` in the same order."""
        check_is_fitted(self)
        return self._transform(_validate_X(self, X, reset=False))

    @abstractmethod
    def _fit(self, X, S):
        """Learn the reduction from validated ``X`` and ``S``."""

    @abstractmethod
    def _transform(self, X):
        """Map validated ``X`` (n, d) to (n, n_components_)."""


class BaseClusterer(_PLLTagsMixin, ClusterMixin, BaseEstimator, metaclass=ABCMeta):
    """A clusterer guided by partial labels.

    ``fit(X, y=None)``: ``y`` is an ``(n, q)`` candidate matrix in which unlabelled rows
    are all ones, or 1-D labels, or None (nothing labelled). Sets ``labels_`` for every
    row. Implement ``_fit(X, S)``; ``S`` is None when ``y`` is None.
    """

    def fit(self, X, y=None):
        """Cluster all rows of ``X`` using candidate sets ``y``; return self."""
        validate_params(self)
        X = _validate_X(self, X, reset=True)
        S = None
        if y is not None:
            S, classes, _ = candidates_from_target(y, n_samples=X.shape[0])
            self.classes_ = classes
            S = _candidate_input(self, S)
        check_data_limits(self, n_samples=X.shape[0], n_features=X.shape[1],
                          n_classes=None if S is None else S.shape[1])
        self._fit(X, S)
        return self

    def fit_predict(self, X, y=None, **kwargs):
        """Fit on ``X`` and candidate sets ``y``; return ``labels_``.

        (scikit-learn's ``ClusterMixin.fit_predict`` calls ``fit(X)`` and would drop ``y``.)
        """
        return self.fit(X, y, **kwargs).labels_

    @abstractmethod
    def _fit(self, X, S):
        """Set ``self.labels_`` (n,) from validated ``X`` and ``S`` (or None)."""


class BaseBagGenerator(_PLLTagsMixin, BaseEstimator, metaclass=ABCMeta):
    """Turns exact labels into candidate sets (controlled synthetic PLL, DESIGN.md section 6).

    ``generate(y, X=None, random_state=None)`` returns a boolean ``(n, q)`` candidate
    matrix; ``random_state`` given to ``generate`` overrides the constructor's. Implement
    ``_generate(y, n_classes, rng, X, S)``. Tags: ``needs_features`` (``X`` required),
    ``corrupts_existing_labels`` (applied to real partial-label data too).
    """

    def generate(self, y, X=None, random_state=None, *, n_classes=None, S=None, fit_rows=None):
        """Candidate sets for exact labels ``y`` (ints ``0..q-1``).

        Parameters
        ----------
        y : array-like of shape (n,)
            True labels.
        X : array-like of shape (n, d), optional
            Features (needed by instance-dependent generators).
        random_state : int, RandomState or None
            Overrides ``self.random_state`` when given.
        n_classes : int, optional
            Number of classes q (default ``max(y) + 1``).
        S : array-like of shape (n, q), optional
            Existing candidate sets, for generators that corrupt real PLL data.
        fit_rows : array-like of int or bool, optional
            The rows whose features and true labels a generator that learns from them (tag
            ``learns_from_labels``) may fit to (default all); the others only receive candidates.
        """
        validate_params(self)
        y = np.asarray(y)
        if y.ndim != 1 or y.shape[0] == 0:
            raise DataValidationError(f"y must be a non-empty 1-D label array, got shape {y.shape}")
        if not np.issubdtype(y.dtype, np.integer):
            if np.issubdtype(y.dtype, np.floating) and np.all(np.mod(y, 1) == 0):
                y = y.astype(np.int64)
            else:
                raise DataValidationError(f"y must hold integer labels 0..q-1, got dtype {y.dtype}")
        if np.any(y < 0):
            raise DataValidationError("y must hold labels 0..q-1; negative labels found")
        q = int(y.max()) + 1 if n_classes is None else int(n_classes)
        if q < 2:
            raise DataValidationError(f"need at least 2 classes (q >= 2), got q={q}")
        if y.max() >= q:
            raise DataValidationError(f"labels reach {int(y.max())} but n_classes={q}")
        if X is not None:
            X = check_features(X)
            if X.shape[0] != y.shape[0]:
                raise DataValidationError(f"X has {X.shape[0]} rows but y has {y.shape[0]}")
        elif get_pll_tags(self).needs_features:
            raise DataValidationError(f"{type(self).__name__} needs the features X")
        if S is not None:
            S = check_candidates(S, n_samples=y.shape[0])
            if S.shape[1] != q:
                raise DataValidationError(f"S has {S.shape[1]} columns but n_classes={q}")
        seed = self.random_state if random_state is None else random_state
        rng = check_random_state(seed)
        if get_pll_tags(self).learns_from_labels:
            rows = np.arange(y.shape[0]) if fit_rows is None else np.arange(y.shape[0])[np.asarray(fit_rows)]
            if rows.size == 0:
                raise DataValidationError("fit_rows selects no row to learn from")
            return self._generate(y, q, rng, X=X, S=S, fit_rows=rows)
        return self._generate(y, q, rng, X=X, S=S)

    @abstractmethod
    def _generate(self, y, n_classes, rng, X=None, S=None):
        """Return a boolean (n, n_classes) candidate matrix."""


KINDS = {
    "learner": BaseLearner,
    "reducer": BaseReducer,
    "clusterer": BaseClusterer,
    "bags": BaseBagGenerator,
}
