"""Feature preprocessing of the PL A-kNN paper (Appendix D.2), as an sklearn transformer.

Steps (all statistics from the training set only):

1. ``first="cube_root"``: signed cube root ``x <- sign(x) |x|^(1/3)`` element-wise
   (Eq. 15; the paper's pipeline for real PLL data), or ``first="center"``: subtract the
   training mean (vision pipeline), or ``"none"``;
2. L2 normalisation of every row;
3. Gaussian-weighted kNN smoothing (Eq. 13): ``x <- (1 - alpha) x + alpha sum_j w_j x_j``
   over the ``mix_k`` nearest training rows, ``w_j ∝ exp(-d_j^2 / (2 sigma^2))`` with the
   local bandwidth ``sigma`` = ``smooth_temp`` times the median of the ``mix_k``
   distances; then L2 re-normalisation. Training rows are smoothed with their
   neighbours among the (unsmoothed) training rows, themselves excluded; new rows with
   their neighbours among the *smoothed* training rows;
4. local density transform (Eq. 14): every row is divided by its mean distance to its
   ``density_k`` nearest smoothed training rows (training rows: themselves excluded).
   No re-normalisation afterwards.

Defaults follow the authors' public code for the real-data pipeline
(``mix_k=10, mix_alpha=0.1, smooth_temp=1, density_k=50``; the vision pipeline uses
``mix_alpha=0.25`` and centering).

``fit_transform(X)`` returns the *training* version of step 3-4 (self excluded), while
``fit(X).transform(X)`` treats ``X`` as new rows: they differ by design (this is how the
paper processes the training and the test set), and :class:`sklearn.pipeline.Pipeline`
uses ``fit_transform`` while fitting, so ``make_pipeline(AknnPreprocessor(), learner)``
reproduces the paper.

Registered as the preprocessor ``aknn`` (``python -m plcore ... protocol.preprocessing=aknn``:
the defaults, i.e. the real-data pipeline, in place of the protocol's z-scoring).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted, validate_data

from plcore.neighbors import NeighborIndex
from plcore.validation import Integral, Interval, Real, StrOptions, validate_params

__all__ = ["AknnPreprocessor"]

_FIRST = ("cube_root", "center", "none")
_EPS = 1e-12


def _l2(X):
    return X / (np.sqrt((X ** 2).sum(axis=1, keepdims=True)) + _EPS)


def _gauss_mix(X, neigh_X, dist, ind, alpha, temp):
    """``(1 - alpha) X + alpha * W @ neigh_X[ind]`` with local Gaussian weights, then L2."""
    sigma = np.median(dist, axis=1, keepdims=True) * temp + _EPS
    W = np.exp(-dist ** 2 / (2.0 * sigma ** 2))
    W /= W.sum(axis=1, keepdims=True) + _EPS
    mixed = (1.0 - alpha) * X + alpha * np.einsum("ij,ijd->id", W, neigh_X[ind])
    return _l2(mixed)


class AknnPreprocessor(TransformerMixin, BaseEstimator):
    """Appendix D.2 preprocessing: cube root / centering, L2, kNN smoothing, density scaling.

    Parameters
    ----------
    first : {"cube_root", "center", "none"}, default="cube_root"
        First step: signed cube root (real PLL data, Eq. 15), centering (vision data).
    mix_k : int, default=10
        Neighbours of the Gaussian-weighted smoothing (Eq. 13); 0 skips the smoothing.
    mix_alpha : float, default=0.1
        Weight of the neighbour mean in the smoothing, in [0, 1].
    smooth_temp : float, default=1.0
        Bandwidth multiplier of the median neighbour distance.
    density_k : int, default=50
        Neighbours of the local density transform (Eq. 14); 0 skips it.

    Attributes
    ----------
    mean_ : ndarray of shape (d,) or None
        Training mean (``first="center"``).
    train_smoothed_ : ndarray of shape (n_train, d)
        The smoothed, L2-normalised training rows (neighbours for new rows).
    train_transformed_ : ndarray of shape (n_train, d)
        What ``fit_transform`` returned.
    n_features_in_ : int
    """

    def __init__(self, first="cube_root", mix_k=10, mix_alpha=0.1, smooth_temp=1.0, density_k=50):
        self.first = first
        self.mix_k = mix_k
        self.mix_alpha = mix_alpha
        self.smooth_temp = smooth_temp
        self.density_k = density_k

    _parameter_constraints = {
        "first": [StrOptions(set(_FIRST))],
        "mix_k": [Interval(Integral, 0, None, closed="left")],
        "mix_alpha": [Interval(Real, 0, 1, closed="both")],
        "smooth_temp": [Interval(Real, 0, np.inf, closed="neither")],
        "density_k": [Interval(Integral, 0, None, closed="left")],
    }

    def _first(self, X):
        if self.first == "cube_root":
            return np.cbrt(X)
        if self.first == "center":
            return X - self.mean_
        return X

    def fit(self, X, y=None):
        """Learn the training statistics; ``y`` is ignored."""
        self.fit_transform(X, y)
        return self

    def fit_transform(self, X, y=None, **fit_params):
        """Fit and return the transformed *training* rows (neighbours exclude the row itself)."""
        validate_params(self)
        X = validate_data(self, X, reset=True, dtype=np.float64)
        n = X.shape[0]
        self.mean_ = X.mean(axis=0) if self.first == "center" else None
        Z = _l2(self._first(X))
        k = min(int(self.mix_k), n - 1)
        if k >= 1 and self.mix_alpha > 0:
            dist, ind = NeighborIndex(Z).kneighbors(None, n_neighbors=k)
            Zs = _gauss_mix(Z, Z, dist, ind, self.mix_alpha, self.smooth_temp)
        else:
            Zs = Z
        self.train_smoothed_ = Zs
        self._mix_nn = NeighborIndex(Zs)
        kd = min(int(self.density_k), n - 1)
        if kd >= 1:
            dist, _ = self._mix_nn.kneighbors(None, n_neighbors=kd)
            out = Zs / (dist.mean(axis=1, keepdims=True) + _EPS)
        else:
            out = Zs
        self.train_transformed_ = out
        return out

    def transform(self, X):
        """Transform new rows with the training statistics and smoothed training rows."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        n = self.train_smoothed_.shape[0]
        Z = _l2(self._first(X))
        k = min(int(self.mix_k), n)
        if k >= 1 and self.mix_alpha > 0:
            dist, ind = self._mix_nn.kneighbors(Z, n_neighbors=k)
            Z = _gauss_mix(Z, self.train_smoothed_, dist, ind, self.mix_alpha, self.smooth_temp)
        kd = min(int(self.density_k), n - 1)   # as for the training rows (authors' code)
        if kd >= 1:
            dist, _ = self._mix_nn.kneighbors(Z, n_neighbors=kd)
            Z = Z / (dist.mean(axis=1, keepdims=True) + _EPS)
        return Z
