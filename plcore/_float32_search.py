"""Certified float32 brute force (``plcore.neighbors`` algorithm ``"brute32"``) and the
float64 re-rank it shares with ``"faiss_brute"``.

``"brute32"`` computes, for a tile of queries at a time, ``v_j = |x_j|^2 - 2 q.x_j`` for
every training point in one float32 GEMM (the norms ride along as an extra column, the data
centred on the training mean first so that float32 keeps more digits), and a compiled
kernel (numba) keeps the ``k + EXTRA`` smallest ``v`` of each row: the row is cut into about
``4 (k + EXTRA)`` blocks, the ``(k + EXTRA)``-th smallest block minimum bounds the answer
from above, and only the blocks whose minimum is below that bound are scanned. The tile
(about 1 MB) stays in cache between the GEMM and the selection, and no full ``(m, n)``
matrix is ever held.

:func:`rerank_certified` then recomputes the candidates' squared distances in float64
(directly, ``sum((q - x)^2)``), orders them by (distance, index) and keeps ``k``. A point
outside the candidates has float32 value at least the last candidate's, so its float64
squared distance is at least that plus ``|q|^2`` minus the float32 rounding bound ``err``;
a row whose ``k``-th float64 distance is not below that by the bound (ties and near-ties,
e.g. many duplicates) is flagged ``uncertain`` and :class:`plcore.neighbors.NeighborIndex`
searches it again with scikit-learn in float64. So the neighbours are those of a float64
brute force.
"""

from __future__ import annotations

import numpy as np

from plcore.utils import compiled

try:
    from numba.extending import register_jitable
except ImportError:  # pragma: no cover - numba is a dependency
    def register_jitable(fn):
        return fn

#: extra float32 candidates per query, re-ranked in float64
EXTRA = 8
_EPS32 = float(np.finfo(np.float32).eps)
#: float32 cells of one GEMM tile (1 MB: the tile stays in cache for the selection)
_TILE_CELLS = 1 << 18
#: blocks per row, per candidate kept (measured: 2 / 4 / 8 cost 19 / 17 / 23 ms for 3000 x 5000, k = 32)
_BLOCKS_PER_CANDIDATE = 4


def rounding_bound(q_sqnorm, sqnorm_max, n_features):
    """Bound on ``|float32 GEMM squared distance - exact|`` per query, from the queries'
    squared norms (inputs rounded to float32, a ``d``-term dot product and the norms
    accumulated in float32), generous."""
    return 8.0 * (n_features + 2) * _EPS32 * (q_sqnorm + sqnorm_max)


def rerank_certified(X, Xq, I, valid, outside, k):
    """The ``k`` nearest of each row's candidates, re-ranked in float64.

    Parameters
    ----------
    X, Xq : ndarray
        Training points and queries (float64).
    I : ndarray of int, shape (m, kk)
        Candidate indices per query.
    valid : ndarray of bool, shape (m, kk)
        Usable candidates (False: padding, or the query's own index).
    outside : ndarray of shape (m,) or None
        A lower bound on the float64 squared distance of every point not among the
        candidates; ``None``: no certificate (every point is a candidate, or approximate).
    k : int

    Returns
    -------
    dist, ind, uncertain
        Rows nearest first (ties by index); ``uncertain`` flags rows whose ``k``-th
        distance is not certified below ``outside``.
    """
    m = Xq.shape[0]
    sq = np.empty((m, k))
    ind = np.empty((m, k), dtype=np.intp)
    compiled(_rerank_rows)(X, Xq, I, valid, sq, ind)
    dist = np.sqrt(sq)
    uncertain = np.zeros(m, dtype=bool)
    if outside is not None and k:
        uncertain = ~(sq[:, -1] < outside)
    uncertain |= ~np.isfinite(dist).all(axis=1)
    return dist, ind, uncertain


@register_jitable
def _kth_smallest(a, kth):
    """The ``kth`` smallest (0-based) of ``a``, partly reordering ``a`` (quickselect)."""
    lo, hi = 0, a.shape[0] - 1
    while lo < hi:
        pivot = a[(lo + hi) // 2]
        i, j = lo, hi
        while i <= j:
            while a[i] < pivot:
                i += 1
            while a[j] > pivot:
                j -= 1
            if i <= j:
                a[i], a[j] = a[j], a[i]
                i += 1
                j -= 1
        if kth <= j:
            hi = j
        elif kth >= i:
            lo = i
        else:
            break
    return a[kth]


def _rerank_rows(X, Xq, I, valid, out_sq, out_ind):
    """Per query: the float64 squared distances ``sum((q - x)^2)`` of its valid candidates,
    the ``k = out_sq.shape[1]`` smallest by (distance, index), ascending (invalid: ``inf``).
    Candidates arrive nearly in order (by their float32 value), so insertion sorts."""
    m, kk = I.shape
    k = out_sq.shape[1]
    d = X.shape[1]
    dist = np.empty(kk)
    idx = np.empty(kk, np.int64)
    for r in range(m):
        for a in range(kk):
            j = I[r, a]
            v = np.inf
            if valid[r, a]:
                v = 0.0
                for c in range(d):
                    t = Xq[r, c] - X[j, c]
                    v += t * t
            p = a
            while p > 0 and (dist[p - 1] > v or (dist[p - 1] == v and idx[p - 1] > j)):
                dist[p] = dist[p - 1]
                idx[p] = idx[p - 1]
                p -= 1
            dist[p] = v
            idx[p] = j
        for a in range(k):
            out_sq[r, a] = dist[a]
            out_ind[r, a] = idx[a] if dist[a] < np.inf else 0


def _select_smallest(V, kk, out_ind, out_val):
    """Per row of ``V`` (b, n): the ``kk`` smallest values and their columns, ascending.

    The row is cut into ``n_blocks`` contiguous blocks. At least ``kk`` blocks have a
    minimum at or below the ``kk``-th smallest block minimum, so that value bounds the
    ``kk``-th smallest of the row from above, and only blocks whose minimum is within it
    can hold one of the ``kk`` smallest: one vectorised pass over the row for the minima,
    then a branch-free gather over about ``kk`` blocks.
    """
    b, n = V.shape
    n_blocks = min(n, _BLOCKS_PER_CANDIDATE * kk)
    size = (n + n_blocks - 1) // n_blocks
    n_blocks = (n + size - 1) // size
    block_min = np.empty(n_blocks, V.dtype)
    scratch = np.empty(n_blocks, V.dtype)
    cand = np.empty(n, np.int64)
    for r in range(b):
        row = V[r]
        for blk in range(n_blocks):
            lo = blk * size
            low = row[lo]
            for j in range(lo + 1, min(lo + size, n)):
                low = min(low, row[j])
            block_min[blk] = low
        scratch[:] = block_min
        bound = _kth_smallest(scratch, kk - 1)
        n_cand = 0
        for blk in range(n_blocks):
            if block_min[blk] <= bound:
                for j in range(blk * size, min(blk * size + size, n)):
                    cand[n_cand] = j
                    n_cand += row[j] <= bound          # branch-free gather of the columns <= bound
        ind = out_ind[r]
        val = out_val[r]
        filled = 0
        for a in range(n_cand):                        # insertion into the sorted kk best
            j = cand[a]
            v = row[j]
            if filled < kk:
                p = filled
                filled += 1
            elif v < val[kk - 1]:
                p = kk - 1
            else:
                continue
            while p > 0 and val[p - 1] > v:
                val[p] = val[p - 1]
                ind[p] = ind[p - 1]
                p -= 1
            val[p] = v
            ind[p] = j


class Float32Search:
    """Certified float32 brute force over ``X`` (float64, ``(n, d)``); see the module docstring."""

    def __init__(self, X):
        self.X = X
        self.center = X.mean(axis=0)
        Xc = X - self.center
        self.sqnorm = np.einsum("ij,ij->i", Xc, Xc)
        # [x_c^T; |x_c|^2] so that [-2 q_c, 1] @ it = |x_c|^2 - 2 q_c.x_c in one GEMM
        self.XT_aug = np.ascontiguousarray(np.vstack([Xc.T, self.sqnorm[None, :]]), dtype=np.float32)
        self._select = compiled(_select_smallest, fastmath=True)

    def candidates(self, Xq, kk):
        """``(I, last, Qc)``: the ``kk`` smallest float32 ``|x_c|^2 - 2 q_c.x_c`` per query
        (indices, ascending), the ``kk``-th value per query (float64) and the centred queries."""
        n = self.X.shape[0]
        m = Xq.shape[0]
        Qc = Xq - self.center
        Q_aug = np.empty((m, Qc.shape[1] + 1), dtype=np.float32)
        Q_aug[:, :-1] = -2.0 * Qc
        Q_aug[:, -1] = 1.0
        I = np.empty((m, kk), dtype=np.int64)
        V = np.empty((m, kk), dtype=np.float32)
        tile_rows = int(np.clip(_TILE_CELLS // max(n, 1), 8, 256))
        tile = np.empty((min(tile_rows, m), n), dtype=np.float32)
        for start in range(0, m, tile_rows):
            stop = min(start + tile_rows, m)
            out = tile[:stop - start]
            np.matmul(Q_aug[start:stop], self.XT_aug, out=out)
            self._select(out, kk, I[start:stop], V[start:stop])
        return I, V[:, -1].astype(np.float64), Qc

    def kneighbors(self, Xq, k: int, self_query: bool = False):
        """``(distances, indices, uncertain)`` of the ``k`` nearest (float64 Euclidean
        distances, rows nearest first); ``self_query``: ``Xq`` is the training set and each
        row's own index is excluded. ``uncertain`` flags rows the exact path must redo."""
        n = self.X.shape[0]
        m = Xq.shape[0]
        kk = min(k + (1 if self_query else 0) + EXTRA, n)
        I, last, Qc = self.candidates(Xq, kk)
        valid = np.ones(I.shape, dtype=bool)
        if self_query:
            valid &= I != np.arange(m)[:, None]
        outside = None
        if kk < n:
            q_sqnorm = np.einsum("ij,ij->i", Qc, Qc)
            outside = last + q_sqnorm - rounding_bound(q_sqnorm, self.sqnorm.max(), Qc.shape[1])
        return rerank_certified(self.X, Xq, I, valid, outside, k)
