"""Euclidean k-nearest-neighbour search on faiss (``plcore.neighbors`` algorithms
``"faiss_brute"`` and ``"hnsw"``).

``"faiss_brute"`` is exact: faiss's brute force (``faiss.knn``: blocked float32 GEMM with a
fused top-k, 3-5x scikit-learn's float64 brute force here) returns ``k + extra`` candidates
per query; their distances are recomputed in float64 and the ``k`` nearest kept. The result is
certified: a point outside the candidates has float32 distance at least the last candidate's,
so its float64 distance is at least that minus the float32 rounding bound ``err``; where the
``k``-th float64 distance is not below that by the bound, the row is flagged ``uncertain`` and
:class:`plcore.neighbors.NeighborIndex` searches it again with scikit-learn in float64 (ties
and near-ties, e.g. many duplicates). So the neighbours are those of a float64 brute force.

``"hnsw"`` is approximate: faiss's HNSW graph (``IndexHNSWFlat``, M = 32, efConstruction 200,
efSearch max(256, 2 k)); its candidates are re-ranked in float64 but points it missed stay
missed (recall measured in ``benchmarks/neighbors.py``, documented in docs/api/neighbors.md).
"""

from __future__ import annotations

import numpy as np

from plcore.neighbors._float32 import EXTRA, rerank_certified, rounding_bound


class FaissSearch:
    """Search ``X`` (float64, ``(n, d)``) with faiss; see the module docstring."""

    def __init__(self, X, approximate: bool = False, M: int = 32, ef_construction: int = 200):
        import faiss

        self._faiss = faiss
        self.X = X
        self.X32 = np.ascontiguousarray(X, dtype=np.float32)
        self.sqnorm = np.einsum("ij,ij->i", X, X)
        self.approximate = approximate
        self.index = None
        if approximate:
            self.index = faiss.IndexHNSWFlat(X.shape[1], M)
            self.index.hnsw.efConstruction = ef_construction
            self.index.add(self.X32)

    def _search(self, Q32, kk):
        if self.index is None:
            D, I = self._faiss.knn(Q32, self.X32, kk)
        else:
            self.index.hnsw.efSearch = max(256, 2 * kk)
            D, I = self.index.search(Q32, kk)
        return D, I

    def kneighbors(self, Xq, k: int, self_query: bool = False):
        """``(distances, indices, uncertain)`` of the ``k`` nearest (float64 Euclidean
        distances, rows nearest first); ``self_query``: ``Xq`` is the training set and each
        row's own index is excluded. ``uncertain`` flags rows the exact path must redo (always
        False for ``"hnsw"``)."""
        n = self.X.shape[0]
        m = Xq.shape[0]
        kk = min(k + (1 if self_query else 0) + (0 if self.approximate else EXTRA), n)
        Q32 = self.X32 if self_query else np.ascontiguousarray(Xq, dtype=np.float32)
        D32, I = self._search(Q32, kk)
        valid = I >= 0                                          # HNSW may return fewer than kk
        if self_query:
            valid &= I != np.arange(m)[:, None]
        outside = None
        if not self.approximate and kk < n:                     # a lower bound for every point not returned
            q_sqnorm = self.sqnorm if self_query else np.einsum("ij,ij->i", Xq, Xq)
            outside = D32[:, -1] - rounding_bound(q_sqnorm, self.sqnorm.max(), Xq.shape[1])
        return rerank_certified(self.X, Xq, I, valid, outside, k)
