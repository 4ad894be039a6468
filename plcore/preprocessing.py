"""Transformers of the evaluated pipelines: :class:`IsotropicScaler` (``preprocessing=isotropic``)
and :class:`RescaledReducer` (a reducer whose output is scaled, ``protocol.reduced_preprocessing``)."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin, clone
from sklearn.utils.validation import check_is_fitted, validate_data

from plcore.validation import Interval, Real, validate_params

__all__ = ["IsotropicScaler", "MinMaxNonConstant", "RescaledReducer", "fitted_reducer"]


class IsotropicScaler(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """Centre, then divide every column by ONE number: the root mean square of the centred
    data over all columns (``preprocessing="isotropic"``). Distances keep their ratios, so
    nearest neighbours do not change; only the overall scale becomes ~1."""

    _parameter_constraints: dict = {}

    def fit(self, X, y=None):
        """Learn the column means and the single scale from ``X``; return self."""
        X = validate_data(self, X, dtype=np.float64)
        self.mean_ = X.mean(axis=0)
        rms = float(np.sqrt(np.mean((X - self.mean_) ** 2)))
        self.scale_ = rms if rms > 0 else 1.0
        return self

    def transform(self, X):
        """``(X - mean_) / scale_``."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return (X - self.mean_) / self.scale_


class MinMaxNonConstant(TransformerMixin, BaseEstimator):
    """Drop the columns that are constant on the fitted rows (range at most ``tol``), scale the
    others to [0, 1] (``preprocessing="minmax_nonconstant"``: the deep-PLL tabular recipe of
    Fuchs & Kalinke, UAI 2025, fitted here on the training part only)."""

    _parameter_constraints: dict = {"tol": [Interval(Real, 0, None, closed="left")]}

    def __init__(self, tol=1e-10):
        self.tol = tol

    def fit(self, X, y=None):
        """Learn the kept columns, their minima and ranges from ``X``; return self."""
        validate_params(self)
        X = validate_data(self, X, dtype=np.float64)
        low, high = X.min(axis=0), X.max(axis=0)
        self.support_ = (high - low) > self.tol
        self.min_, self.range_ = low[self.support_], (high - low)[self.support_]
        return self

    def transform(self, X):
        """``(X[:, support_] - min_) / range_``."""
        check_is_fitted(self)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return (X[:, self.support_] - self.min_) / self.range_

    def get_feature_names_out(self, input_features=None):
        """The names of the kept columns."""
        check_is_fitted(self)
        names = np.asarray(input_features if input_features is not None else
                           [f"x{i}" for i in range(self.support_.size)], dtype=object)
        return names[self.support_]


class RescaledReducer(TransformerMixin, BaseEstimator):
    """A reducer followed by a scaler fitted on its output (``protocol.reduced_preprocessing``).

    Reducers such as CENDA return coordinates on an arbitrary scale (CENDA's ``P^T B P = I``
    gives every component a standard deviation of about ``1 / sqrt(mu n)``); distance-based
    learners do not care, but learners with a fixed regularisation grid (PL-SVM) do. The
    fitted reducer's attributes (``n_components_``, ``confidences_``, ...) stay readable
    on this wrapper.
    """

    def __init__(self, reducer=None, scaler=None):
        self.reducer = reducer
        self.scaler = scaler

    def fit(self, X, y=None):
        """Fit a clone of ``reducer`` on ``(X, y)``, then a clone of ``scaler`` (None: no scaling)
        on its output; return self."""
        self.reducer_ = clone(self.reducer).fit(X, y)
        self.scaler_ = None if self.scaler is None else clone(self.scaler)
        if self.scaler_ is not None:
            self.scaler_.fit(self.reducer_.transform(X))
        return self

    def transform(self, X):
        """The reducer's output, scaled."""
        check_is_fitted(self)
        Z = self.reducer_.transform(X)
        return Z if self.scaler_ is None else self.scaler_.transform(Z)


def fitted_reducer(step):
    """The fitted reducer of a pipeline step (unwraps :class:`RescaledReducer`)."""
    return step.reducer_ if isinstance(step, RescaledReducer) else step
