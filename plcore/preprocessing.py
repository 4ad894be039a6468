"""Transformers of the evaluated pipelines: :class:`IsotropicScaler` (``preprocessing=isotropic``)
and :class:`RescaledReducer` (a reducer whose output is scaled, ``protocol.reduced_preprocessing``)."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin, clone
from sklearn.utils.validation import check_is_fitted, validate_data

__all__ = ["IsotropicScaler", "RescaledReducer", "fitted_reducer"]


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
