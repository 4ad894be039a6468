"""The paper's baseline clusterers on the same features: k-means and spectral clustering.

Both ignore the candidate sets except for the default number of clusters
(``S.shape[1]``, the number of classes).
"""

from __future__ import annotations

import numpy as np
from sklearn.cluster import KMeans, SpectralClustering

from plcore.base import BaseClusterer
from plcore.validation import Integral, Interval, Real, StrOptions

__all__ = ["KMeansClusterer", "SpectralClusterer"]

_POSITIVE_INT = Interval(Integral, 1, None, closed="left")


def _n_clusters(est, S, n):
    if est.n_clusters is not None:
        q = int(est.n_clusters)
    else:
        q = S.shape[1] if S is not None else 8
    return min(q, n)


class KMeansClusterer(BaseClusterer):
    """k-means baseline (scikit-learn ``KMeans``); ``n_clusters`` defaults to the number of classes.

    Parameters
    ----------
    n_clusters : int, optional
        Default ``S.shape[1]`` (8 when ``y`` is None).
    n_init : int or "auto", default=10
        Seeded restarts (as :class:`sklearn.cluster.KMeans`).
    random_state : int, RandomState or None
    """

    def __init__(self, n_clusters=None, n_init=10, random_state=None):
        self.n_clusters = n_clusters
        self.n_init = n_init
        self.random_state = random_state

    _parameter_constraints = {
        "n_clusters": [_POSITIVE_INT, None],
        "n_init": [_POSITIVE_INT, StrOptions({"auto"})],
        "random_state": ["random_state"],
    }

    def _fit(self, X, S):
        self.n_clusters_ = _n_clusters(self, S, X.shape[0])
        km = KMeans(n_clusters=self.n_clusters_, n_init=self.n_init, random_state=self.random_state)
        self.labels_ = km.fit_predict(X)
        self.cluster_centers_ = km.cluster_centers_


class SpectralClusterer(BaseClusterer):
    """Spectral clustering baseline (scikit-learn ``SpectralClustering``, NJW normalisation).

    Parameters
    ----------
    n_clusters : int, optional
        Default ``S.shape[1]`` (8 when ``y`` is None).
    affinity : str, default="nearest_neighbors"
        ``"nearest_neighbors"`` (symmetrised kNN graph) or ``"rbf"``.
    n_neighbors : int, default=10
        Neighbours of the kNN affinity (same k as PLC).
    gamma : float, optional
        RBF width; default ``1 / n_features``.
    n_init : int, default=20
        k-means restarts on the embedding.
    random_state : int, RandomState or None
    """

    def __init__(self, n_clusters=None, affinity="nearest_neighbors", n_neighbors=10, gamma=None,
                 n_init=20, random_state=None):
        self.n_clusters = n_clusters
        self.affinity = affinity
        self.n_neighbors = n_neighbors
        self.gamma = gamma
        self.n_init = n_init
        self.random_state = random_state

    _parameter_constraints = {
        "n_clusters": [_POSITIVE_INT, None],
        "affinity": [StrOptions({"nearest_neighbors", "rbf"})],
        "n_neighbors": [_POSITIVE_INT],
        "gamma": [Interval(Real, 0, None, closed="left"), None],
        "n_init": [_POSITIVE_INT],
        "random_state": ["random_state"],
    }

    def _fit(self, X, S):
        n = X.shape[0]
        self.n_clusters_ = _n_clusters(self, S, n)
        if n < 2 or self.n_clusters_ < 2:
            self.labels_ = np.zeros(n, dtype=np.int64)
            return
        gamma = self.gamma if self.gamma is not None else 1.0 / X.shape[1]
        sc = SpectralClustering(n_clusters=self.n_clusters_, affinity=self.affinity,
                                n_neighbors=min(int(self.n_neighbors), n - 1), gamma=gamma,
                                n_init=self.n_init, random_state=self.random_state,
                                assign_labels="kmeans")
        self.labels_ = sc.fit_predict(X)
