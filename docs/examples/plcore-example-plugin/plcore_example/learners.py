"""A candidate-weighted nearest-centroid learner: the example plugin's one component.

Each training example ``i`` spreads a unit of weight over its candidate set ``S_i``;
class ``l``'s centroid is the weighted mean of the rows,

    c_l = sum_i W[i, l] x_i / sum_i W[i, l],     W[i, l] = S[i, l] / |S_i|  (to start).

The weights are then refined ``n_iter`` times: each row's weight moves to the candidates
whose centroids are close to it, by a softmax of the squared distances restricted to
the candidates,

    W[i, l] ∝ S[i, l] * exp(-||x_i - c_l||^2 / (temperature * scale)),

where ``scale`` is the mean squared distance of the training rows to their mean (so that
``temperature`` does not depend on the units of ``X``), and the centroids are
recomputed. A query is assigned to the nearest centroid. The final weights are the
disambiguated training labels, ``confidences_``.
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np

from plcore.base import BaseLearner
from plcore.validation import Interval


def _sq_distances(X, centroids):
    """Squared Euclidean distances, shape (n, q); ``inf`` for NaN (absent) centroids."""
    present = ~np.isnan(centroids[:, 0])
    d = np.full((X.shape[0], centroids.shape[0]), np.inf)
    C = centroids[present]
    d[:, present] = np.maximum(
        (X**2).sum(axis=1)[:, None] - 2.0 * X @ C.T + (C**2).sum(axis=1)[None, :], 0.0)
    return d


class CandidateCentroidLearner(BaseLearner):
    """Nearest class centroid, with centroids estimated from the candidate sets.

    Parameters
    ----------
    n_iter : int, default=5
        Re-weighting rounds after the first, uniform-over-candidates estimate. ``0``
        gives plain candidate-weighted class means.
    temperature : float, default=0.1
        Softness of the re-weighting, relative to the mean squared distance of the
        training rows to their mean: small values move each row's weight to its
        closest candidate centroid, large values keep it uniform over the candidates.

    Attributes
    ----------
    classes_ : ndarray of shape (q,)
    centroids_ : ndarray of shape (q, n_features)
        Class centroids; a row of NaN for a class that is in no candidate set (it is
        never predicted).
    confidences_ : ndarray of shape (n_train, q)
        The final weights ``W``: zero outside each candidate set, rows sum to 1.
    scale_ : float
        Mean squared distance of the training rows to their mean (the distance unit).
    n_features_in_ : int
    """

    # checked by the base class at the start of every fit (scikit-learn's mechanism)
    _parameter_constraints = {
        "n_iter": [Interval(Integral, 0, None, closed="left")],
        "temperature": [Interval(Real, 0, np.inf, closed="neither")],
    }

    def __init__(self, n_iter=5, temperature=0.1):
        self.n_iter = n_iter
        self.temperature = temperature

    def __sklearn_tags__(self):
        # capability tags (plcore.tags.PLLTags); this learner needs none of the non-defaults:
        # _fit receives a dense boolean candidate matrix (accepts_sparse_candidates=False)
        tags = super().__sklearn_tags__()
        tags.pll_tags.accepts_sparse_candidates = False
        return tags

    def _fit(self, X, S):
        scale = float(np.mean(((X - X.mean(axis=0)) ** 2).sum(axis=1)))
        self.scale_ = scale if np.isfinite(scale) and scale > 0 else 1.0
        W = S / S.sum(axis=1, keepdims=True)
        for _ in range(int(self.n_iter)):
            W = self._reweight(X, S, self._centroids(X, W))
        self.centroids_ = self._centroids(X, W)
        self.confidences_ = W

    @staticmethod
    def _centroids(X, W):
        mass = W.sum(axis=0)
        C = np.full((W.shape[1], X.shape[1]), np.nan)
        present = mass > 0
        C[present] = (W[:, present].T @ X) / mass[present, None]
        return C

    def _reweight(self, X, S, centroids):
        # Every row keeps a present candidate (its own weight makes that class present),
        # so each row has a finite maximum and the softmax is well defined.
        logits = np.where(S, -_sq_distances(X, centroids) / (self.temperature * self.scale_), -np.inf)
        logits -= logits.max(axis=1, keepdims=True)
        W = np.exp(logits)
        return W / W.sum(axis=1, keepdims=True)

    def _scores(self, X):
        """Negative squared distances to the centroids (``-inf`` for absent classes)."""
        return -_sq_distances(X, self.centroids_)
