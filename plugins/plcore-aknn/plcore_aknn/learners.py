"""PL A-kNN and its kNN baselines as plcore learners.

* :class:`AknnLearner` (``+learner=aknn``): PL A-kNN (Errandonea, Mazuelas, Lozano and
  Dasgupta, "Learnability with partial labels and adaptive nearest neighbors",
  Algorithm 1 with the disambiguation of Appendix D.3).
* :class:`AknnMulticlassLearner` (``+learner=aknn_multiclass``): the multiclass
  extension of A-kNN (Balsubramani et al. 2019) the paper compares with.
* :class:`KnnOracleLearner` (``+learner=knn_oracle``): PL-kNN whose ``k`` is chosen by
  leave-one-out validation on the training candidates, standing in for the paper's
  "ideal kNN with the optimal number of neighbours".

All three search the neighbours once per chunk of queries up to ``k_max`` and decide
every ``k`` from cumulative candidate counts (:mod:`plcore_aknn._rules`).
"""

from __future__ import annotations

import copy

import numpy as np
from sklearn.base import clone
from sklearn.utils.validation import check_is_fitted

from plcore.base import BaseLearner
from plcore.learners.plknn import weighted_votes
from plcore.neighbors import METRIC_CONSTRAINT, NeighborIndex, SharedQueries, staged_search
from plcore.utils import uniform_confidences, vote_confidences
from plcore.validation import Integral, Interval, Real, StrOptions

from plcore_aknn._rules import aknn_rule_compiled, chunk_rows, fixed_k_votes, multiclass_rule_compiled

__all__ = ["AknnLearner", "AknnMulticlassLearner", "KnnOracleLearner"]

_WEIGHTS = ("linear", "uniform")
_K_MAX = [Interval(Integral, 1, None, closed="left")]
_SEARCH = {"metric": METRIC_CONSTRAINT, "n_jobs": [Integral, None]}


class _AdaptiveKnnBase(BaseLearner):
    """Shared fit / chunked predict of the two adaptive rules."""

    _rule = None  # staticmethod(S, indices, n_train, c, delta) -> (pred, k_used)
    #: neighbours searched for every query before the staged search extends to ``k_max``: above
    #: the ~13-15 the rules use on average, so that few queries need the second search
    #: (benchmarks/aknn.py data, 3000 queries, "brute32" search and compiled rules at e6780c3, best of 5:
    #: predict 70 / 52 / 46 / 44 / 46 ms for 12 / 16 / 20 / 24 / 32, multiclass 74 / 59 / 48 /
    #: 43 / 43 ms; the predictions do not depend on it)
    STAGE_K = 24

    _parameter_constraints = {
        "c": [Interval(Real, 0, np.inf, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "k_max": _K_MAX,
        **_SEARCH,
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.pll_tags.path_params = ("c", "delta", "k_max")
        return tags

    def _fit(self, X, S):
        n = X.shape[0]
        self.n_train_ = n
        self.n_neighbors_ = min(int(self.k_max), n)
        self._S = S
        self._nn = NeighborIndex(X, metric=self.metric, n_jobs=self.n_jobs)
        self._loo_confidences()

    def fit_path(self, X, y, points):
        """One fitted learner per ``{c, delta, k_max}`` dict of ``points`` (tag ``path_params``),
        each predicting as ``clone(self).set_params(**point).fit(X, y)``: one index serves them
        all, and each query set is searched once, to the largest ``k_max``
        (:class:`plcore.neighbors.SharedQueries`; the rules at ``k`` read the ``k`` nearest)."""
        unknown = sorted({p for point in points for p in point} - {"c", "delta", "k_max"})
        if unknown:
            raise ValueError(f"{type(self).__name__}.fit_path searches c, delta and k_max only, "
                             f"got {', '.join(unknown)}")
        base = clone(self).set_params(k_max=max(int(point.get("k_max", self.k_max)) for point in points))
        base.fit(X, y)
        shared = SharedQueries(base._nn, base.n_neighbors_)
        fitted = []
        for point in points:
            learner = copy.copy(base).set_params(**{"c": self.c, "delta": self.delta, "k_max": self.k_max, **point})
            learner.n_neighbors_ = min(int(learner.k_max), base.n_train_)
            learner._nn = shared
            learner.STAGE_K = learner.n_neighbors_   # one search per query set, the shared one
            learner._loo_confidences()
            fitted.append(learner)
        return fitted

    def _loo_confidences(self):
        """``confidences_``: the candidate counts of each training row's nearest other rows."""
        n = self.n_train_
        k_loo = min(self.n_neighbors_, n - 1)
        if k_loo >= 1:
            ind = self._nn.kneighbors(None, n_neighbors=k_loo, return_distance=False)
            loo_counts = self._S[ind].sum(axis=1)
        else:
            loo_counts = np.zeros(self._S.shape)
        self.confidences_ = vote_confidences(loo_counts, self._S)

    def _decide(self, X):
        """Predicted label indices and the number of neighbours used, for validated ``X``.

        Returns ``(pred, k_used)``, both of shape ``(n_queries,)``; ``pred`` indexes
        ``classes_``. Queries are processed in chunks of at most
        ``CHUNK_ELEMENTS / (k_max q)`` rows. Within a chunk the search is staged
        (:func:`plcore.neighbors.staged_search`): ``STAGE_K`` neighbours for every query
        first, the rule decides the queries it can with them, and only the others are
        searched again up to ``k_max``. The rule at ``k`` depends only on the ``k``
        nearest neighbours, so this equals one search to ``k_max`` (up to distance ties).
        Within a stage the cumulative counts grow one neighbour at a time for the
        queries still undecided.
        """
        K, q = self.n_neighbors_, self._S.shape[1]
        pred = np.empty(X.shape[0], dtype=np.int64)
        k_used = np.empty(X.shape[0], dtype=np.int64)
        rule = type(self)._rule

        def decide(rows, dist, ind, final):
            p, k = rule(self._S, ind, self.n_train_, self.c, self.delta)
            return (p, k), final | (k < ind.shape[1])   # k == stage size: maybe undecided

        for rows in chunk_rows(X.shape[0], K, q):
            (pred[rows], k_used[rows]), _ = staged_search(self._nn, X[rows], K, decide, k_start=self.STAGE_K)
        return pred, k_used

    def _scores(self, X):
        """One-hot scores of the decided labels."""
        pred, _ = self._decide(X)
        scores = np.zeros((X.shape[0], self._S.shape[1]))
        scores[np.arange(X.shape[0]), pred] = 1.0
        return scores

    def predict_with_k(self, X):
        """``(labels, n_neighbors_used)``: ``predict(X)`` and the ``k`` at which each query was decided.

        ``n_neighbors_used[i]`` is the number of neighbours after which one label remained
        (``n_neighbors_`` when the disambiguation decided).
        """
        check_is_fitted(self)
        pred, k_used = self._decide(self._validate_predict(X))
        return self.classes_[pred], k_used


class AknnLearner(_AdaptiveKnnBase):
    """PL A-kNN: adaptive nearest neighbours for partial labels (Errandonea et al., Alg. 1).

    For a query, all labels start as potential labels. For ``k = 1 .. k_max`` the
    frequency ``f_k(l)`` of label ``l`` among the bags of the ``k`` nearest training
    examples is computed and every potential label with

        f_k(l) < max_{l' potential} f_k(l') - Delta(n, k, delta),
        Delta(n, k, delta) = c * sqrt((log n + log(1/delta)) / k),

    is dropped (for good). The prediction is made as soon as one label remains. If
    several remain after ``k_max`` steps, the remaining label maximising
    ``max_k sqrt(k) (f_k(l) - f_k^(2))`` (``f_k^(2)`` the second largest frequency among
    the labels potential at step ``k``) is predicted (Appendix D.3).

    Parameters
    ----------
    c : float, default=0.5
        Threshold constant (chosen by inner validation, see the README; the authors'
        code also uses 0.5).
    delta : float, default=0.5
        Confidence parameter in ``(0, 1)`` (inner validation; it only enters through
        ``log(1/delta)`` next to ``log n``).
    k_max : int, default=50
        Maximum number of neighbours (iterations), capped at the training-set size.
    metric : str, default="euclidean"
        Any metric of :class:`sklearn.neighbors.NearestNeighbors` (searched through
        :mod:`plcore.neighbors`).
    n_jobs : int, optional
        Parallel jobs of the neighbour search.

    Attributes
    ----------
    classes_ : ndarray of shape (q,)
    n_train_ : int
        ``n`` in the threshold.
    n_neighbors_ : int
        ``min(k_max, n_train_)``.
    confidences_ : ndarray of shape (n_train, q)
        Candidate counts of each training example's ``n_neighbors_`` nearest other
        training examples, restricted to its own bag and normalised (uniform over the
        bag when none of them votes for it).
    n_features_in_ : int

    Notes
    -----
    ``predict_with_k(X)`` returns the predictions together with the ``k`` at which each
    query was decided.
    """

    _rule = staticmethod(aknn_rule_compiled)

    def __init__(self, c=0.5, delta=0.5, k_max=50, metric="euclidean", n_jobs=None):
        self.c = c
        self.delta = delta
        self.k_max = k_max
        self.metric = metric
        self.n_jobs = n_jobs


class AknnMulticlassLearner(_AdaptiveKnnBase):
    """Multiclass A-kNN extension (Balsubramani et al. 2019) on partial labels.

    Grows ``k = 1 .. k_max`` until the most frequent label among the ``k`` nearest bags
    leads the second by more than ``Delta(n, k, delta) = c * sqrt((log n +
    log(1/delta)) / k)`` and predicts it; otherwise predicts the most frequent label at
    ``k_max``. This is the baseline the PL A-kNN paper calls the multiclass extension of
    A-kNN: it looks only at the top label's lead, PL A-kNN at all the margins.

    Parameters and attributes are those of :class:`AknnLearner`, with defaults chosen for
    this rule by the same inner validation on development data that no figure is reported
    on (semeion, ecoli, wine; see the README): ``c=0.5, delta=0.1, k_max=20``.
    """

    _rule = staticmethod(multiclass_rule_compiled)

    def __init__(self, c=0.5, delta=0.1, k_max=20, metric="euclidean", n_jobs=None):
        self.c = c
        self.delta = delta
        self.k_max = k_max
        self.metric = metric
        self.n_jobs = n_jobs


class KnnOracleLearner(BaseLearner):
    """PL-kNN with ``k`` chosen by leave-one-out validation on the training candidates.

    For every ``k = 1 .. k_max``, each training example is predicted by the PL-kNN vote
    of its ``k`` nearest *other* training examples (Hüllermeier & Beringer weights, as
    the built-in ``plknn``); the *candidate-hit rate* is the share of predictions that
    fall inside the example's own bag. The ``k`` with the highest hit rate (the smallest
    on ties) is used for prediction. This uses no true labels, so it is a fair stand-in
    for the paper's ideal kNN (optimal ``k``) -- which would be chosen on the test set.

    Parameters
    ----------
    k_max : int, default=50
        Largest ``k`` searched (capped at ``n_train - 1``).
    weights : {"linear", "uniform"}, default="linear"
        Neighbour weights, as in ``plknn``.
    metric : str, default="euclidean"
    n_jobs : int, optional

    Attributes
    ----------
    classes_ : ndarray of shape (q,)
    n_neighbors_ : int
        The chosen ``k``.
    cv_hit_rate_ : ndarray of shape (k_max,)
        Leave-one-out candidate-hit rate of each ``k = 1 ..``.
    confidences_ : ndarray of shape (n_train, q)
        Leave-one-out votes at the chosen ``k`` restricted to each bag, normalised.
    n_features_in_ : int

    Notes
    -----
    ``predict_with_k(X)`` returns the predictions with ``n_neighbors_`` for every query
    (the interface of the adaptive learners).
    """

    def __init__(self, k_max=50, weights="linear", metric="euclidean", n_jobs=None):
        self.k_max = k_max
        self.weights = weights
        self.metric = metric
        self.n_jobs = n_jobs

    _parameter_constraints = {
        "k_max": _K_MAX,
        "weights": [StrOptions(set(_WEIGHTS))],
        **_SEARCH,
    }

    def _fit(self, X, S):
        n = X.shape[0]
        self._S = S
        K = min(int(self.k_max), n - 1)
        if K < 1:  # a single training example: nothing to validate
            self.cv_hit_rate_ = np.ones(1)
            self.n_neighbors_ = 1
            self.confidences_ = uniform_confidences(S)
        else:
            nn = NeighborIndex(X, metric=self.metric, n_jobs=self.n_jobs)
            hits = np.zeros(K)
            q = S.shape[1]
            for rows in chunk_rows(n, K, q):
                # leave-one-out: the training rows of this chunk, each without itself
                dist, ind = nn.kneighbors(X[rows], n_neighbors=K + 1)
                dist, ind = _drop_self(dist, ind, np.arange(n)[rows])
                votes = fixed_k_votes(dist, S[ind], self.weights)              # (m, K, q)
                guess = np.argmax(votes, axis=2)                               # (m, K)
                hits += S[np.arange(n)[rows][:, None], guess].sum(axis=0)
            self.cv_hit_rate_ = hits / n
            self.n_neighbors_ = int(np.argmax(self.cv_hit_rate_)) + 1
            dist, ind = nn.kneighbors(None, n_neighbors=self.n_neighbors_)
            self.confidences_ = vote_confidences(weighted_votes(dist, ind, S, self.weights), S)
        self._nn = nn if K >= 1 else NeighborIndex(X, metric=self.metric, n_jobs=self.n_jobs)

    def _scores(self, X):
        dist, ind = self._nn.kneighbors(X, self.n_neighbors_)
        return weighted_votes(dist, ind, self._S, self.weights)

    def predict_with_k(self, X):
        """``(labels, n_neighbors_used)``: ``predict(X)`` and ``n_neighbors_`` for every query."""
        labels = BaseLearner.predict(self, X)  # not self.predict: a subclass may build predict on this
        return labels, np.full(labels.shape[0], self.n_neighbors_, dtype=np.int64)

    def predict_proba(self, X):
        """Normalised weighted votes at the chosen ``k``, columns in ``classes_`` order."""
        check_is_fitted(self)
        dist, ind = self._nn.kneighbors(self._validate_predict(X), self.n_neighbors_)
        votes = weighted_votes(dist, ind, self._S, self.weights)
        return votes / votes.sum(axis=1, keepdims=True)


def _drop_self(dist, ind, own):
    """Remove each row's own index from ``K + 1`` neighbours (or the farthest if absent)."""
    m, K1 = ind.shape
    is_self = ind == own[:, None]
    # rows where the point itself is not among its K+1 neighbours (duplicates): drop the last
    missing = ~is_self.any(axis=1)
    is_self[missing, K1 - 1] = True
    # keep only the first self-match per row
    first = np.argmax(is_self, axis=1)
    keep = np.ones_like(is_self)
    keep[np.arange(m), first] = False
    return dist[keep].reshape(m, K1 - 1), ind[keep].reshape(m, K1 - 1)
