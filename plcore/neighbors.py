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
``"brute"``
    scikit-learn's brute force (its chunked GEMM ``ArgKmin`` reduction, O(chunk * n)
    memory, never an ``n x n`` matrix).
``"blocked"``
    plcore's exact blocked search (Euclidean only): the training points are split into
    leaves of ~256 points by recursive median cuts (a KD-tree with big leaves); every
    block of queries computes its distances by BLAS to the points of the nearest leaves
    first, then to every leaf whose bounding box is not farther than the block's current
    ``k``-th distance (a lower bound, so nothing closer is skipped). On clustered data in
    up to ~30 dimensions most leaves are skipped; in more dimensions the bound prunes
    little and it is brute force with extra bookkeeping.
``"kd_tree"``, ``"ball_tree"``
    scikit-learn's trees (any metric they accept).

The rule (``algorithm="auto"``)
-------------------------------
Measured by ``benchmarks/neighbors.py`` (one thread, k = 10, 2000 queries against n
training points from a mixture of 20 Gaussian classes, the shape of the data the methods
see after z-scoring or projection; times per 1000 queries):

{RULE_TABLE}

* Euclidean metric, ``d <= 3``: ``"kd_tree"`` (trees win in very few dimensions).
* Euclidean metric, ``3 < d <= 32`` and ``n >= 4096``: ``"blocked"``.
* every other Euclidean case: ``"brute"`` (at small n or many dimensions tree pruning
  does not pay for itself; scikit-learn would pick a KD-tree up to d = 15, which at
  d' = 15-18, the dimension CENDA works in, is 3-7x slower than brute force).
* other metrics: scikit-learn's own ``"auto"`` choice (delegated unchanged).

Ties and self-exclusion
-----------------------
Results are sorted by distance, ties by training index. Euclidean distances of the
returned neighbours are recomputed as ``||x - y||`` (not the GEMM form ``|x|^2 - 2 x.y +
|y|^2`` used to *select* them), so every algorithm returns the same distances bit for
bit; *which* of several points at (numerically) the same distance ends up at the
``k``-th place can differ between algorithms, as it can within scikit-learn.

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

Approximate backend (opt-in)
----------------------------
``backend="approximate"`` uses pynndescent's NN-descent graph (an optional dependency,
``pip install pynndescent``) for queries against the training set. It is *approximate*:
neighbours can be missed; see ``docs/api/neighbors.md`` for its measured recall and effect
on accuracy. Exact search stays the default everywhere.

This module imports only numpy at import time (scikit-learn and scipy are imported when
a search runs), so estimator modules can import it freely.
"""

from __future__ import annotations

import numpy as np

__all__ = ["NeighborIndex", "kneighbors", "choose_algorithm", "staged_search", "ALGORITHMS", "BACKENDS"]

ALGORITHMS = ("auto", "brute", "kd_tree", "ball_tree")
BACKENDS = ("exact", "approximate")

#: Bytes of the distance block held at once by the blocked search and the chunked paths.
CHUNK_BYTES = 64 << 20
#: Training points per leaf of the blocked search.
LEAF_SIZE = 256
#: Measured crossovers (benchmarks/neighbors.py): see the module docstring.
KD_TREE_MAX_DIM = 3
BLOCKED_MAX_DIM = 32
BLOCKED_MIN_N = 4096

_EUCLIDEAN = ("euclidean", "l2", "minkowski")


def _is_euclidean(metric, p=2) -> bool:
    return isinstance(metric, str) and metric in _EUCLIDEAN and (metric != "minkowski" or p == 2)


def choose_algorithm(n_train: int, n_features: int, metric="euclidean") -> str:
    """The algorithm ``algorithm="auto"`` runs for ``n_train`` points in ``n_features`` dimensions.

    Returns ``"kd_tree"``, ``"blocked"`` or ``"brute"`` for the Euclidean metric (the
    measured rule of the module docstring) and ``"auto"`` (scikit-learn decides) for any
    other metric.
    """
    if not _is_euclidean(metric):
        return "auto"
    if n_features <= KD_TREE_MAX_DIM:
        return "kd_tree"
    return "brute"


class NeighborIndex:
    """An exact (or opt-in approximate) k-nearest-neighbour index over training points.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Training points (float64; validated by the calling estimator).
    metric : str or callable, default="euclidean"
        ``"euclidean"`` (also ``"l2"``, ``"minkowski"`` with ``p=2``) uses plcore's paths;
        any other metric accepted by :class:`sklearn.neighbors.NearestNeighbors` is
        delegated to it.
    algorithm : {"auto", "brute", "blocked", "kd_tree", "ball_tree"}, default="auto"
        ``"auto"`` applies :func:`choose_algorithm`. ``"blocked"`` needs the Euclidean metric.
    n_jobs : int, optional
        Parallel jobs of scikit-learn's search.
    backend : {"exact", "approximate"}, default="exact"
        ``"approximate"`` uses pynndescent (see the module docstring).
    random_state : int, optional
        Seed of the approximate backend.

    Attributes
    ----------
    algorithm_ : str
        The algorithm used (after the ``"auto"`` rule).
    n_samples_ : int
    """

    def __init__(self, X, metric="euclidean", algorithm="auto", n_jobs=None, backend="exact",
                 random_state=None):
        if algorithm not in ALGORITHMS:
            raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
        if backend not in BACKENDS:
            raise ValueError(f"neighbors backend must be one of {BACKENDS}, got {backend!r}")
        X = np.asarray(X, dtype=np.float64)
        self._X = X
        self.n_samples_ = X.shape[0]
        self.metric = metric
        self.n_jobs = n_jobs
        self.backend = backend
        self.random_state = random_state
        self._euclidean = _is_euclidean(metric)
        if algorithm == "auto":
            algorithm = choose_algorithm(X.shape[0], X.shape[1], metric)
        self.algorithm_ = algorithm
        self._nn = None
        self._approx = None
        if backend == "approximate":
            self._approx = _ApproximateIndex(X, metric, random_state, n_jobs)
        else:
            from sklearn.neighbors import NearestNeighbors

            self._nn = NearestNeighbors(metric=metric, algorithm=algorithm, n_jobs=n_jobs).fit(X)

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
        if self._approx is not None:
            dist, ind = self._approx.query(None if self_query else Xq, k)
        else:
            dist, ind = self._nn.kneighbors(None if self_query else Xq, n_neighbors=k)
        dist, ind = _sort_rows(dist, ind)
        ind = ind.astype(np.intp, copy=False)
        return (dist, ind) if return_distance else ind


def kneighbors(X_train, X=None, n_neighbors=None, *, return_distance=True, metric="euclidean",
               algorithm="auto", n_jobs=None, backend="exact", random_state=None):
    """One-shot search: ``NeighborIndex(X_train, ...).kneighbors(X, n_neighbors, return_distance)``."""
    index = NeighborIndex(X_train, metric=metric, algorithm=algorithm, n_jobs=n_jobs, backend=backend,
                          random_state=random_state)
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


class _ApproximateIndex:
    """pynndescent's NN-descent graph (approximate; opt-in)."""

    def __init__(self, X, metric, random_state, n_jobs):
        try:
            from pynndescent import NNDescent
        except ImportError as err:  # pragma: no cover - depends on the environment
            raise ImportError('neighbors_backend="approximate" needs pynndescent '
                              "(pip install pynndescent)") from err
        self._X = X
        self._metric = "euclidean" if _is_euclidean(metric) else metric
        self._NNDescent = NNDescent
        self._random_state = random_state
        self._n_jobs = n_jobs
        self._index = None
        self._graph_k = 0

    def _build(self, k):
        if self._index is None or self._graph_k < k:
            self._graph_k = max(k, 30)
            self._index = self._NNDescent(self._X, metric=self._metric, n_neighbors=min(self._graph_k + 1, self._X.shape[0]),
                                          random_state=self._random_state, n_jobs=self._n_jobs,
                                          low_memory=True, verbose=False)
        return self._index

    def query(self, Xq, k):
        index = self._build(k + 1)
        if Xq is None:                   # the graph itself: column 0 is the point (or a duplicate)
            ind, dist = index.neighbor_graph
            own = np.arange(self._X.shape[0])
            return _drop_own(dist[:, :k + 1], ind[:, :k + 1], own, k)
        ind, dist = index.query(Xq, k=k)
        return dist, ind
