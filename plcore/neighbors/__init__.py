"""Exact k-nearest-neighbour search shared by every plcore method.

One entry point, :class:`NeighborIndex` (and the one-shot :func:`kneighbors`), replaces
the direct :class:`sklearn.neighbors.NearestNeighbors` calls of PL-KNN, A-kNN, CENDA,
SAUTE, IPAL, PLC and DELIN. It returns exactly what a brute-force search returns (up to
ties, below), picks the algorithm by a *measured* rule instead of scikit-learn's
``d > 15`` heuristic, searches a training set against itself without the query point,
keeps memory bounded by chunking, and offers a staged search (:func:`staged_search`) for
rules that usually stop after a few neighbours.

Algorithms
----------
``"brute"``, ``"kd_tree"`` and ``"ball_tree"`` are scikit-learn's (any metric it accepts;
brute force is its chunked GEMM ``ArgKmin`` reduction: O(chunk x n) memory, never an
``n x n`` matrix). ``"brute32"`` is plcore's certified float32 brute force
(:mod:`plcore.neighbors._float32`: a float32 GEMM per tile of ~1 MB, a compiled blocked top-k
selection, the candidates re-ranked in float64 and certified, uncertain rows redone by
scikit-learn in float64), ``"faiss_brute"`` the same certificate around faiss's float32 brute
force. plcore adds the choice, the ordering, self-exclusion and staging.

The rule (``algorithm="auto"``)
-------------------------------
Measured by ``benchmarks/neighbors.py --full`` (one thread, k = 10, 2000 queries against n
training points from a mixture of 20 Gaussian classes, the shape of the data the methods
search after z-scoring or projection; seconds per 1000 queries, build included, best of 2,
on a shared 2-core machine, so single cells are noisy; a selection of its 48 rows):

======  ===  =====  =======  =======  =========  ===========  ===========
n       d    brute  brute32  kd_tree  ball_tree  faiss_brute  fastest
======  ===  =====  =======  =======  =========  ===========  ===========
1000    2    0.007  0.002    0.004    0.006      0.011        brute32
1000    20   0.007  0.002    0.018    0.017      0.010        brute32
10000   3    0.033  0.008    0.007    0.015      0.059        kd_tree
10000   4    0.033  0.009    0.013    0.030      0.048        brute32
10000   15   0.037  0.012    0.053    0.091      0.066        brute32
10000   100  0.079  0.041    0.407    0.597      0.040        tie
30000   3    0.089  0.019    0.012    0.036      0.135        kd_tree
30000   4    0.094  0.021    0.020    0.064      0.133        tie
30000   5    0.094  0.022    0.024    0.070      0.137        brute32
30000   20   0.126  0.039    0.144    0.241      0.174        brute32
30000   100  0.228  0.178    1.186    3.737      0.124        faiss_brute
100000  3    0.302  0.059    0.040    0.067      0.481        kd_tree
100000  4    0.314  0.059    0.049    0.129      0.459        kd_tree
100000  5    0.305  0.064    0.063    0.177      0.531        tie
100000  8    0.391  0.102    0.447    1.195      0.572        brute32
100000  15   0.357  0.113    0.723    1.190      0.644        brute32
100000  50   0.593  0.468    2.177    6.247      1.563        brute32
100000  200  1.296  1.439    5.871    16.317     0.695        faiss_brute
======  ===  =====  =======  =======  =========  ===========  ===========

* Euclidean metric, ``n >= 5000`` (numba installed): ``"faiss_brute"`` when ``d >= 64`` and
  ``n >= 10000``; a KD-tree when ``d <= 3``; otherwise ``"brute32"`` (1.3-5.3x scikit-learn's
  brute force where the rule picks it in the full table, n >= 10000 and 4 <= d <= 50; the gain
  shrinks at large n and d, where the GEMM dominates). At d = 4-5 the KD-tree and
  ``"brute32"`` are within the run-to-run noise of each other (at n = 100k, d = 4 the KD-tree
  was 1.2x faster in this run and 1.2x slower in the run before).
* ``n < 5000`` (or no numba): a KD-tree when ``d <= 4``, scikit-learn's brute force otherwise
  (loading numba costs ~0.5 s once per process, more than such searches save: brute32 is
  faster from n = 1000 in the table, but with the threshold at 2000 the 2-iteration CENDA fit
  of ``benchmarks/cenda.py`` at m = 2000, in a fresh process, took 1.27 s instead of 0.18 s).
  scikit-learn's ``"auto"`` keeps a KD-tree up to ``d = 15``, which at d = 12-15 (CENDA's
  d' on lost and msrc-v2, SAUTE's selected features) was 1.4-9x slower than brute force;
  ball trees never won clearly.
* other metrics: scikit-learn's own ``"auto"`` choice (delegated unchanged).

``"brute32"`` was written after the A-kNN predict figure of docs/performance.md had been
seen (that figure's goal was not met with scikit-learn's search), and its selection kernel
was made faster after the next figures (20.0x and 17.7x against a goal of 20x) had been seen:
its constants were measured on that benchmark's data (3000 x 5000, d = 20) and on the
mixtures above (the number of blocks, about ``sqrt(n kk / 2)``, at n = 5000-100000). The table was
measured again after that change (``benchmarks/neighbors.py --full`` at commit ``9200dfd``;
the crossovers were set from the same command at ``b629a9d`` and hold in both runs).

Ties and self-exclusion
-----------------------
Rows are ordered by distance, ties by training index (scikit-learn's heaps leave tied
neighbours in no defined order). ``"brute32"`` and ``"faiss_brute"`` return
``sqrt(sum((q - x)^2))`` computed directly in float64; scikit-learn's brute force computes them
in the GEMM form ``|x|^2 - 2 x.y + |y|^2`` (rounding ~1e-8 of the norms; a duplicate
may come back at 6e-8 instead of 0), the trees directly. *Which* of several points at
(numerically) the same distance ends up at the ``k``-th place can therefore differ
between algorithms, as it does within scikit-learn.

``kneighbors(None, k)`` queries the training set against itself and never returns a
point as its own neighbour. Duplicates of a point are other points and are returned
(at distance 0), as scikit-learn's ``kneighbors(None)`` does. (scikit-learn drops
the query's own index when it is among the ``k + 1`` found and otherwise the first
column, i.e. a duplicate; the distances are the same.)

Staged search
-------------
:func:`staged_search` searches ``k_start`` neighbours for all queries, lets a decision
function settle the queries it can, and searches only the unsettled ones again with
more neighbours (``k_start * 4``, ... up to ``k_max``). Since results are ordered by
distance then index, a decision that depends only on the first ``k`` neighbours is the
same as with one search to ``k_max`` (up to ties at the ``k``-th place). PL A-kNN
decides after ~11 neighbours on average but may need ``k_max = 50``.

faiss (exact and approximate)
-----------------------------
``"faiss_brute"`` runs faiss's brute force (``faiss.knn``: float32 GEMM with a fused top-k)
for ``k + 8`` candidates, recomputes their distances in float64 and certifies the result: a
row whose ``k``-th distance is not below every other point's float32 distance by the float32
rounding bound is searched again with scikit-learn in float64, so the neighbours are exact.
Measured (2000 queries, k = 10, one thread, seconds; brute / faiss_brute): d <= 30 at n = 2k,
10k, 50k: 0.02-0.42 / 0.03-0.70 (scikit-learn faster); d = 100: n = 10k 0.163 / 0.102,
n = 50k 0.782 / 0.367. The rule takes it from d >= 64 and n >= 10000.

``"hnsw"`` is the **approximate** backend (faiss ``IndexHNSWFlat``, M = 32,
efConstruction 200, efSearch max(256, 2 k)); never chosen by ``"auto"``. Measured on the same
mixtures (``benchmarks/neighbors.py``): at n = 50k, d = 15 it builds in ~10 s and reaches
recall@10 = 0.96 (0.99 with M = 48, efSearch 512), where exact brute force answers 2000
queries in 0.35 s; with the faster defaults (efConstruction 80, efSearch 64) recall fell to
0.77 at d = 15 and 0.55 at d = 100. On data of this kind and size exact search is both faster
and exact, so exact stays the default everywhere; the graph pays off only for far more
points than plcore's data sets have, at low intrinsic dimension. Its accuracy effect on a
method (CENDA + PL-KNN) is one row of ``benchmarks/neighbors.py``'s table.

This module imports only numpy at import time (scikit-learn and scipy are imported when
a search runs), so estimator modules can import it freely.
"""

from __future__ import annotations

import numpy as np

from plcore.validation import StrOptions

__all__ = ["NeighborIndex", "SharedQueries", "LastQueryCache", "kneighbors", "choose_algorithm", "staged_search", "ALGORITHMS",
           "METRICS", "METRIC_CONSTRAINT"]

ALGORITHMS = ("auto", "brute", "brute32", "kd_tree", "ball_tree", "faiss_brute", "hnsw")
#: the exact algorithms (every one but the approximate ``"hnsw"``)
EXACT_ALGORITHMS = ("brute", "brute32", "kd_tree", "ball_tree", "faiss_brute")

#: Measured crossovers (benchmarks/neighbors.py): see the module docstring.
#: plcore's certified float32 brute force (numba) from this size; below it scikit-learn's
#: brute force or a KD-tree (loading numba costs ~0.5 s once per process; see the module docstring)
BRUTE32_MIN_N = 5000
#: where a KD-tree beats ``"brute32"``: ``(d_max, n_min)`` pairs, any one suffices
KD_TREE_OVER_BRUTE32 = ((3, 0),)
#: where a KD-tree beats scikit-learn's brute force (without ``"brute32"``)
KD_TREE_MAX_DIM = 4
KD_TREE_MAX_DIM_LARGE = 8
KD_TREE_LARGE_N = 5000
#: faiss's float32 brute force (certified exact, see plcore.neighbors._faiss) from this dimension and size
FAISS_MIN_DIM = 64
FAISS_MIN_N = 10000

_EUCLIDEAN = ("euclidean", "l2", "minkowski")

#: metric names a neighbour search accepts on feature vectors: scikit-learn's brute-force
#: metrics less those that need more than the features (``precomputed`` distances,
#: ``mahalanobis`` / ``seuclidean`` with their matrices, 2-D ``haversine``)
METRICS = frozenset({"braycurtis", "canberra", "chebyshev", "cityblock", "correlation", "cosine", "dice",
                     "euclidean", "hamming", "jaccard", "l1", "l2", "manhattan", "minkowski", "nan_euclidean",
                     "rogerstanimoto", "russellrao", "sokalsneath", "sqeuclidean", "yule"})
#: the ``_parameter_constraints`` entry of a ``metric`` parameter: one of :data:`METRICS` or a callable,
#: so that a misspelled name fails before any fit, in one line
METRIC_CONSTRAINT = [StrOptions(set(METRICS)), callable]


def _is_euclidean(metric, p=2) -> bool:
    return isinstance(metric, str) and metric in _EUCLIDEAN and (metric != "minkowski" or p == 2)


def _has_numba() -> bool:
    from importlib.util import find_spec

    return find_spec("numba") is not None


def choose_algorithm(n_train: int, n_features: int, metric="euclidean") -> str:
    """The algorithm ``algorithm="auto"`` runs for ``n_train`` points in ``n_features`` dimensions.

    Returns ``"kd_tree"``, ``"brute32"``, ``"brute"`` or ``"faiss_brute"`` for the Euclidean
    metric (the measured rule of the module docstring) and ``"auto"`` (scikit-learn decides)
    for any other metric.
    """
    if not _is_euclidean(metric):
        return "auto"
    if n_features >= FAISS_MIN_DIM and n_train >= FAISS_MIN_N:
        return "faiss_brute"
    if n_train >= BRUTE32_MIN_N and _has_numba():
        if any(n_features <= d_max and n_train >= n_min for d_max, n_min in KD_TREE_OVER_BRUTE32):
            return "kd_tree"
        return "brute32"
    if n_features <= KD_TREE_MAX_DIM or (n_features <= KD_TREE_MAX_DIM_LARGE and n_train >= KD_TREE_LARGE_N):
        return "kd_tree"
    return "brute"


class NeighborIndex:
    """An exact k-nearest-neighbour index over training points.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Training points (float64; validated by the calling estimator).
    metric : str or callable, default="euclidean"
        Any metric accepted by :class:`sklearn.neighbors.NearestNeighbors`; the measured
        rule applies to the Euclidean metric (``"euclidean"``, ``"l2"``, ``"minkowski"``).
    algorithm : {"auto", "brute", "brute32", "kd_tree", "ball_tree", "faiss_brute", "hnsw"}, default="auto"
        ``"auto"`` applies :func:`choose_algorithm`. ``"brute32"``: plcore's float32 brute force,
        certified exact (:mod:`plcore.neighbors._float32`; Euclidean only); ``"faiss_brute"``:
        faiss's float32 brute force, certified exact (:mod:`plcore.neighbors._faiss`); ``"hnsw"``:
        faiss's HNSW graph, **approximate** (opt-in only; Euclidean only).
    n_jobs : int, optional
        Parallel jobs of scikit-learn's search.

    Attributes
    ----------
    algorithm_ : str
        The algorithm used (after the ``"auto"`` rule).
    n_samples_ : int
    """

    def __init__(self, X, metric="euclidean", algorithm="auto", n_jobs=None):
        if algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
        X = np.asarray(X, dtype=np.float64)
        self._X = X
        self.n_samples_ = X.shape[0]
        self.metric = metric
        self.n_jobs = n_jobs
        self._euclidean = _is_euclidean(metric)
        if algorithm == "auto":
            algorithm = choose_algorithm(X.shape[0], X.shape[1], metric)
        self.algorithm_ = algorithm
        from sklearn.neighbors import NearestNeighbors

        if algorithm in ("brute32", "faiss_brute", "hnsw"):
            if not self._euclidean:
                raise ValueError(f"algorithm={algorithm!r} searches the Euclidean metric only, got metric={metric!r}")
            if algorithm == "brute32":
                from plcore.neighbors._float32 import Float32Search

                self._float32 = Float32Search(X)
            else:
                from plcore.neighbors._faiss import FaissSearch

                self._float32 = FaissSearch(X, approximate=algorithm == "hnsw")
            self._nn = None
        else:
            self._float32 = None
            self._nn = NearestNeighbors(metric=metric, algorithm=algorithm, n_jobs=n_jobs).fit(X)

    def _exact_rows(self, Xq, rows, k, self_query):
        """scikit-learn's exact float64 brute force for ``rows`` of the queries (the float32
        path's fallback where float32 rounding could change the neighbours)."""
        from sklearn.neighbors import NearestNeighbors

        nn = getattr(self, "_fallback_nn", None)
        if nn is None:
            nn = self._fallback_nn = NearestNeighbors(algorithm="brute").fit(self._X)
        if self_query:
            dist, ind = nn.kneighbors(self._X[rows], n_neighbors=min(k + 1, self.n_samples_))
            return _drop_own(dist, ind, rows, k)
        return nn.kneighbors(Xq[rows], n_neighbors=k)

    def kneighbors(self, X=None, n_neighbors=None, return_distance=True):
        """The ``n_neighbors`` nearest training points of each query, nearest first.

        Parameters
        ----------
        X : array-like of shape (m, d), optional
            Queries. ``None`` queries every training point against the others (itself
            excluded; its duplicates are not excluded).
        n_neighbors : int
            At most ``n`` (``n - 1`` when ``X`` is None).
        return_distance : bool, default=True

        Returns
        -------
        distances : ndarray of shape (m, n_neighbors)
            Only when ``return_distance``.
        indices : ndarray of int, shape (m, n_neighbors)
        """
        if n_neighbors is None:
            raise TypeError("kneighbors() needs n_neighbors")
        k = int(n_neighbors)
        self_query = X is None
        n_avail = self.n_samples_ - (1 if self_query else 0)
        if k < 0 or k > n_avail:
            raise ValueError(f"n_neighbors={k} must be in [0, {n_avail}] (n_samples={self.n_samples_}"
                             f"{', the query itself excluded' if self_query else ''})")
        Xq = self._X if self_query else np.asarray(X, dtype=np.float64)
        m = Xq.shape[0]
        if k == 0:
            ind = np.empty((m, 0), dtype=np.intp)
            return (np.empty((m, 0)), ind) if return_distance else ind
        if self._float32 is not None:   # rows come ordered by (distance, index); redone rows are sorted
            dist, ind, uncertain = self._float32.kneighbors(Xq, k, self_query=self_query)
            if uncertain.any():
                rows = np.flatnonzero(uncertain)
                dist[rows], ind[rows] = _sort_rows(*self._exact_rows(Xq, rows, k, self_query))
        else:
            dist, ind = _sort_rows(*self._nn.kneighbors(None if self_query else Xq, n_neighbors=k))
        ind = ind.astype(np.intp, copy=False)
        return (dist, ind) if return_distance else ind


class SharedQueries:
    """A :class:`NeighborIndex` whose searches several fitted learners share (one per ``k`` of a
    grid, :func:`plcore.learners.plknn.PlKnnLearner.fit_path`).

    Each new query set (``None``: the training points against themselves) is searched once, at
    ``max(k_max, n_neighbors)``; a search of the same queries for fewer neighbours is its prefix.
    Rows come ordered by (distance, index), so the prefix is what a search for ``k`` returns
    (up to exact distance ties at the ``k``-th neighbour, which any two searches may break
    differently). The last query set is kept (compared by value: a learner's input validation
    may copy it), so memory is one ``(m, k_max)`` result.
    """

    def __init__(self, index: NeighborIndex, k_max: int):
        self.index = index
        self.k_max = int(k_max)
        self._key = self._dist = self._ind = None

    def __getattr__(self, name):  # n_samples_, algorithm_, metric: the wrapped index's
        if name == "index":
            raise AttributeError(name)
        return getattr(self.index, name)

    def kneighbors(self, X=None, n_neighbors=None, return_distance=True):
        """As :meth:`NeighborIndex.kneighbors`, from the shared search where it covers the query."""
        if n_neighbors is None:
            raise TypeError("kneighbors() needs n_neighbors")
        k = int(n_neighbors)
        query = None if X is None else np.asarray(X, dtype=np.float64)
        if not (self._ind is not None and k <= self._ind.shape[1] and self._same(query)):
            n_avail = self.index.n_samples_ - (1 if X is None else 0)
            k_search = min(max(self.k_max, k), n_avail) if k <= n_avail else k   # too many: index's error
            self._dist, self._ind = self.index.kneighbors(query, n_neighbors=k_search)
            self._key = None if query is None else query.copy()
        dist, ind = self._dist[:, :k], self._ind[:, :k]
        return (dist, ind) if return_distance else ind

    def _same(self, query) -> bool:
        if query is None or self._key is None:
            return query is None and self._key is None
        return query.shape == self._key.shape and np.array_equal(query, self._key)


class LastQueryCache:
    """What several fitted learners compute alike from one query set (IPAL's neighbours and
    reconstruction weights of the queries, shared by its ``fit_path`` learners): the result for
    the last query set, kept and compared by value."""

    def __init__(self):
        self._key = self._value = None

    def get(self, X, compute):
        """``compute(X)``, or its kept result when ``X`` equals the last query set."""
        X = np.asarray(X)
        if not (self._key is not None and X.shape == self._key.shape and np.array_equal(X, self._key)):
            self._value, self._key = compute(X), X.copy()
        return self._value


def kneighbors(X_train, X=None, n_neighbors=None, *, return_distance=True, metric="euclidean",
               algorithm="auto", n_jobs=None):
    """One-shot search: ``NeighborIndex(X_train, ...).kneighbors(X, n_neighbors, return_distance)``."""
    index = NeighborIndex(X_train, metric=metric, algorithm=algorithm, n_jobs=n_jobs)
    return index.kneighbors(X, n_neighbors=n_neighbors, return_distance=return_distance)


def staged_search(index: NeighborIndex, X, k_max: int, decide, k_start: int = 16, growth: int = 4):
    """Search few neighbours first and more only for the queries that need them.

    Parameters
    ----------
    index : NeighborIndex
    X : array-like of shape (m, d) or None
        Queries (``None``: the training points, themselves excluded).
    k_max : int
        The most neighbours any query may use.
    decide : callable ``(rows, distances, indices, final) -> (outputs, settled)``
        Called with the queries ``rows`` (int array into ``X``) still open and their
        ``k`` nearest neighbours. Returns a tuple of per-query arrays (first axis
        ``len(rows)``) and a boolean mask of the queries settled with these neighbours;
        with ``final=True`` (``k = k_max``) every query must be settled.
    k_start : int, default=16
    growth : int, default=4
        ``k`` is multiplied by it at each stage (capped at ``k_max``).

    Returns
    -------
    outputs : tuple of ndarray
        The per-query outputs of ``decide`` for all ``m`` queries.
    k_searched : ndarray of int, shape (m,)
        The number of neighbours searched for each query.
    """
    m = index.n_samples_ if X is None else np.asarray(X).shape[0]
    Xq = None if X is None else np.asarray(X, dtype=np.float64)
    k_max = int(k_max)
    k = max(1, min(int(k_start), k_max))
    rows = np.arange(m)
    outputs = None
    k_searched = np.zeros(m, dtype=np.int64)
    while rows.size:
        final = k >= k_max
        if Xq is None and rows.size < m:
            # a subset of the training points: query them as external points, then drop self
            dist, ind = index.kneighbors(index._X[rows], n_neighbors=min(k + 1, index.n_samples_))
            dist, ind = _drop_own(dist, ind, rows, k)
        else:
            dist, ind = index.kneighbors(None if Xq is None else Xq[rows], n_neighbors=k)
        out, settled = decide(rows, dist, ind, final)
        settled = np.ones(rows.size, dtype=bool) if final else np.asarray(settled, dtype=bool)
        if outputs is None:
            outputs = tuple(np.empty((m,) + np.asarray(o).shape[1:], dtype=np.asarray(o).dtype) for o in out)
        for full, part in zip(outputs, out):
            full[rows[settled]] = np.asarray(part)[settled]
        k_searched[rows] = k
        rows = rows[~settled]
        k = min(k * max(2, int(growth)), k_max)
    if outputs is None:
        outputs = ()
    return outputs, k_searched


def _drop_own(dist, ind, own, k):
    """Remove each row's own index (present: nearest first by construction) from ``k + 1`` neighbours."""
    m = ind.shape[0]
    is_self = ind == own[:, None]
    missing = ~is_self.any(axis=1)
    is_self[missing, -1] = True           # not among them (k + 1 duplicates at distance 0): drop the last
    first = np.argmax(is_self, axis=1)
    keep = np.ones_like(is_self)
    keep[np.arange(m), first] = False
    return dist[keep].reshape(m, -1)[:, :k], ind[keep].reshape(m, -1)[:, :k]


# --------------------------------------------------------------------------- helpers
def _sort_rows(dist, ind):
    """Rows ordered by (distance, index): by index first, then a stable sort by distance."""
    if ind.shape[1] < 2:
        return dist, ind
    o = np.argsort(ind, axis=1)
    dist, ind = np.take_along_axis(dist, o, 1), np.take_along_axis(ind, o, 1)
    o = np.argsort(dist, axis=1, kind="stable")
    return np.take_along_axis(dist, o, 1), np.take_along_axis(ind, o, 1)
