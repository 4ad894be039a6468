"""PL-KNN: partial-label k-nearest neighbours (Hüllermeier & Beringer, 2006).

The score of class ``l`` for a query ``x`` is the weighted vote of its ``k`` nearest
training examples ``j``,

    score_l(x) = sum_j w_j * S[j, l],     w_j = 1 - d_j / sum_{j'} d_{j'},

(DESIGN.md "PL-KNN"); weights are uniform when all ``k`` distances are ~0 (or ``k = 1``).
The prediction is the argmax; ``predict_proba`` is the vote normalised to sum to one.
Votes are one sparse (n_query x n_train, k entries a row) by candidate-matrix product.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.utils.validation import check_is_fitted

from plcore.base import BaseLearner
from plcore.neighbors import METRIC_CONSTRAINT, NeighborIndex, SharedQueries
from plcore.utils import dense_candidates, vote_confidences
from plcore.validation import Integral, Interval, StrOptions

_WEIGHTS = ("linear", "uniform")


def neighbour_weights(distances: np.ndarray, weights: str = "linear") -> np.ndarray:
    """Vote weights ``w_j = 1 - d_j / sum(d)`` per row; uniform where that is degenerate."""
    distances = np.asarray(distances, dtype=np.float64)
    k = distances.shape[1]
    w = np.ones_like(distances)
    if weights == "uniform" or k == 1:
        return w
    total = distances.sum(axis=1, keepdims=True)
    ok = total[:, 0] > 1e-12 * max(1.0, float(np.max(total, initial=0.0)))
    w[ok] = 1.0 - distances[ok] / total[ok]
    return w


def weighted_votes(distances, indices, S, weights="linear") -> np.ndarray:
    """Dense (n_query, q) votes ``sum_j w_j S_j`` over the neighbours given by ``indices``."""
    n_query, k = indices.shape
    w = neighbour_weights(distances, weights)
    W = sp.csr_matrix(
        (w.ravel(), indices.ravel(), np.arange(0, n_query * k + 1, k)),
        shape=(n_query, S.shape[0]),
    )
    votes = W @ (S if sp.issparse(S) else S.astype(np.float64))
    return votes.toarray() if sp.issparse(votes) else np.asarray(votes)


def _warn_capped(k, n, stacklevel):
    """The one warning of a ``k`` above the training set's ``n`` rows (``k = n`` is used)."""
    warnings.warn(f"PlKnnLearner: k={k} is larger than the training set (n={n}); using k={n} neighbours",
                  UserWarning, stacklevel=stacklevel)


class PlKnnLearner(BaseLearner):
    """Partial-label k-nearest neighbours (PL-KNN).

    Parameters
    ----------
    k : int, default=10
        Number of neighbours (capped at the training-set size, with a ``UserWarning``).
    weights : {"linear", "uniform"}, default="linear"
        ``"linear"``: ``w_j = 1 - d_j / sum of the k distances`` (Hüllermeier & Beringer);
        ``"uniform"``: every neighbour votes 1.
    metric : str, default="euclidean"
        Any metric accepted by :class:`sklearn.neighbors.NearestNeighbors`; the search
        runs through :mod:`plcore.neighbors` (exact, algorithm by its measured rule).
    n_jobs : int, optional
        Parallel jobs of the neighbour search.

    Attributes
    ----------
    classes_ : ndarray of shape (q,)
    confidences_ : ndarray of shape (n_train, q)
        Leave-one-out votes of each training example's neighbours restricted to its
        own candidate set and normalised to sum to 1 (uniform over the candidates when
        no neighbour votes for any of them): the disambiguated training labels.
    n_features_in_ : int
    """

    def __init__(self, k=10, weights="linear", metric="euclidean", n_jobs=None):
        self.k = k
        self.weights = weights
        self.metric = metric
        self.n_jobs = n_jobs

    _parameter_constraints = {
        "k": [Interval(Integral, 1, None, closed="left")],
        "weights": [StrOptions(set(_WEIGHTS))],
        "metric": METRIC_CONSTRAINT,
        "n_jobs": [Integral, None],
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.pll_tags.accepts_sparse_candidates = True
        tags.pll_tags.path_params = ("k", "weights")
        return tags

    def _fit(self, X, S):
        self.n_neighbors_ = min(int(self.k), X.shape[0])
        if self.n_neighbors_ < self.k:  # capped (scikit-learn's checks fit tiny data), but said once per fit
            _warn_capped(self.k, X.shape[0], stacklevel=4)
        self._S = S.tocsr() if sp.issparse(S) else S
        self._nn = NeighborIndex(X, metric=self.metric, n_jobs=self.n_jobs)
        self.confidences_ = self._loo_confidences()

    def fit_path(self, X, y, points):
        """One fitted learner per ``{k, weights}`` dict of ``points`` (tag ``path_params``), each
        predicting as ``clone(self).set_params(**point).fit(X, y)``: one index and one
        leave-one-out search at the largest ``k`` serve them all, and they share their query
        searches (:class:`plcore.neighbors.SharedQueries`)."""
        unknown = sorted({p for point in points for p in point} - {"k", "weights"})
        if unknown:
            raise ValueError(f"PlKnnLearner.fit_path searches k and weights only, got {', '.join(unknown)}")
        k_max = max(int(point.get("k", self.k)) for point in points)
        base = clone(self).set_params(k=k_max)
        with warnings.catch_warnings():  # the cap is said by each learner below, as its own fit would
            warnings.simplefilter("ignore", UserWarning)
            base.fit(X, y)
        shared = SharedQueries(base._nn, base.n_neighbors_)
        fitted = []
        for point in points:
            learner = copy.copy(base).set_params(**{"k": self.k, "weights": self.weights, **point})
            learner.n_neighbors_ = min(int(learner.k), base._S.shape[0])
            if learner.n_neighbors_ < learner.k:
                _warn_capped(learner.k, base._S.shape[0], stacklevel=3)
            learner._nn = shared
            del learner.confidences_   # computed when first read (__getattr__): a search reads predictions only
            fitted.append(learner)
        return fitted

    def __getattr__(self, name):
        """A :meth:`fit_path` learner's ``confidences_``, computed when first read."""
        if name == "confidences_" and "_nn" in self.__dict__:
            self.confidences_ = self._loo_confidences()
            return self.confidences_
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _loo_confidences(self):
        S = self._S
        k = min(self.n_neighbors_, S.shape[0] - 1)
        if k >= 1:
            dist, ind = self._nn.kneighbors(None, n_neighbors=k)
            votes = weighted_votes(dist, ind, S, self.weights)
        else:
            votes = np.zeros(S.shape)
        return vote_confidences(votes, dense_candidates(S))

    def _scores(self, X):
        dist, ind = self._nn.kneighbors(X, self.n_neighbors_)
        return weighted_votes(dist, ind, self._S, self.weights)

    def predict_proba(self, X):
        """Normalised weighted votes, shape (n, q), columns in ``classes_`` order."""
        check_is_fitted(self)
        votes = self._scores(self._validate_predict(X))
        return votes / votes.sum(axis=1, keepdims=True)
