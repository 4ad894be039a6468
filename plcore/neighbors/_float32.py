"""Certified float32 brute force (``plcore.neighbors`` algorithm ``"brute32"``) and the
float64 re-rank it shares with ``"faiss_brute"``.

``"brute32"`` computes, for a tile of queries at a time, ``v_j = |x_j|^2 - 2 q.x_j`` for
every training point in one float32 GEMM (the norms ride along as an extra column, the data
centred on the training mean first so that float32 keeps more digits), and a compiled
kernel (numba) keeps the ``k + EXTRA`` smallest ``v`` of each row (:func:`_select_smallest`):
about ``sqrt(n (k + EXTRA) / 2)`` interleaved blocks' minima by halving the row on order-preserving
int32 keys, a value with ``k + EXTRA`` block minima at or below it as an upper bound on the answer, and
only the blocks within it scanned; every step branch-free where its outcome is
data-dependent. The tile (about 1 MB) is selected right after its GEMM, and no full
``(m, n)`` matrix is ever held.

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

import math
import threading
from contextlib import contextmanager

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
#: float32 cells of one GEMM tile (1 MB, selected while still in cache)
_TILE_CELLS = 1 << 18


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
    """The ``kth`` smallest (0-based) of ``a``, reordering ``a``: quickselect with a
    branch-free partition (the comparisons' outcomes are data-dependent, so branches on them
    mispredict), pivot the median of three, elements equal to the pivot gathered after it."""
    lo, hi = 0, a.shape[0] - 1
    while lo < hi:
        x, y, z = a[lo], a[(lo + hi) // 2], a[hi]
        pivot = max(min(x, y), min(max(x, y), z))
        store = lo
        for i in range(lo, hi + 1):                # a[lo:store] < pivot
            t = a[i]
            s = a[store]
            below = t < pivot
            a[i] = s if below else t
            a[store] = t if below else s
            store += below
        if kth < store:
            hi = store - 1
            continue
        equal = store
        for i in range(store, hi + 1):             # a[store:equal] == pivot (at least one)
            t = a[i]
            s = a[equal]
            same = t == pivot
            a[i] = s if same else t
            a[equal] = t if same else s
            equal += same
        if kth < equal:
            return pivot
        lo = equal
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


@register_jitable
def _key(i):
    """Order-preserving int32 key of a float32's bits (``a < b`` iff ``key(a) < key(b)``, NaN
    aside; -0.0 sorts just below +0.0). Integer ``min`` loops vectorise where float ones do
    not (numba's float ``min`` is a select without fast-math flags)."""
    return i ^ ((i >> 31) & np.int32(0x7FFFFFFF))


def block_shape(n, kk):
    """``(levels, width)`` of the selection's blocks for rows of ``n`` values and ``kk`` kept:
    blocks of ``2**levels`` columns, about ``sqrt(n kk / 2)`` of them and at least ``kk`` (the
    bound costs O(blocks), the gather O(kk n / blocks)), and the tile width
    ``blocks * 2**levels >= n`` (the columns past ``n`` hold ``+inf``)."""
    most = max(0, (n // kk).bit_length() - 1)                  # 2**most <= n / kk
    levels = min(most, max(0, int(round(0.5 * math.log2(n / kk) + 0.5))))
    n_blocks = -(-n // (1 << levels))
    return levels, n_blocks << levels


#: bisection steps of the selection's bound (:func:`_block_bound`)
_BISECTIONS = 10


@register_jitable
def _block_bound(half, n_blocks, kk, block_min, one_bits, one_val):
    """A key ``bound`` with at least ``kk`` of the block minima ``half[:n_blocks]`` (int32 keys)
    at or below it, at most ``(max - min) / 2**_BISECTIONS`` (in value) above the ``kk``-th
    smallest: bisection on the float32 values, each step one vectorised count of the keys at or
    below the midpoint's key (a quickselect's swaps cost more, and any bound with ``kk`` minima
    at or below it is correct; counting keys, not floats, keeps -0.0 and +0.0 apart as the
    gather does). Non-finite minima (overflow): the exact ``kk``-th smallest by quickselect."""
    low_key = half[0]
    high_key = half[0]
    for c in range(n_blocks):
        x = half[c]
        low_key = x if x < low_key else low_key
        high_key = x if x > high_key else high_key
    one_bits[0] = _key(low_key)                    # the key is its own inverse: float32 bits
    low = one_val[0]
    one_bits[0] = _key(high_key)
    high = one_val[0]
    if not (np.isfinite(low) and np.isfinite(high)):
        block_min[:] = half[:n_blocks]
        return _kth_smallest(block_min, kk - 1)
    bound = high_key                               # count(minima <= bound) >= kk throughout
    for _ in range(_BISECTIONS):
        mid = np.float32(0.5 * (np.float64(low) + np.float64(high)))
        if not (low < mid < high):
            break
        one_val[0] = mid
        mid_key = _key(one_bits[0])
        count = 0
        for c in range(n_blocks):
            count += half[c] <= mid_key
        if count >= kk:
            high = mid
            bound = mid_key
        else:
            low = mid
    return bound


def _select_smallest(T, T_bits, n, levels, kk, out_ind, out_val):
    """Per row of the tile ``T`` (b, w) float32 (``T_bits``: the same memory as int32; columns
    from ``n`` on hold ``+inf``): the ``kk`` smallest of the first ``n`` values by (key,
    column), ascending (value order, -0.0 before +0.0, ties by column), and their columns.

    Block ``c`` is the columns ``c, c + nb, c + 2 nb, ...`` (``nb = w >> levels``): halving the
    row ``levels`` times (``min(a[:h], a[h:])``, on int32 keys so that it vectorises) leaves
    the block minima. A value with at least ``kk`` block minima at or below it (just above the
    ``kk``-th smallest, :func:`_block_bound`) bounds the ``kk``-th smallest of the row from
    above, and only blocks whose minimum is within it can hold one of the ``kk`` smallest: a
    branch-free gather over about ``kk`` blocks. The gathered columns (about ``kk + 4`` on the benchmark of
    ``benchmarks/aknn.py``) are ranked by (key, column) with one vectorised count each, or,
    when ties make them many, inserted into the sorted ``kk`` best (the same order).
    """
    b, w = T.shape
    n_blocks = w >> levels
    half = np.empty(w, np.int32)
    block_min = np.empty(n_blocks, np.int32)
    one_bits = np.empty(1, np.int32)
    one_val = one_bits.view(np.float32)
    qual = np.empty(n_blocks, np.int64)
    cand = np.empty(n, np.int64)
    ranked = np.empty(kk, np.int64)
    for r in range(b):
        bits = T_bits[r]
        if levels == 0:
            for c in range(w):
                half[c] = _key(bits[c])
        else:
            h = w >> 1
            for c in range(h):
                x = _key(bits[c])
                y = _key(bits[c + h])
                half[c] = x if x < y else y
            for _ in range(1, levels):
                h >>= 1
                for c in range(h):
                    x = half[c]
                    y = half[c + h]
                    half[c] = x if x < y else y
        bound = _block_bound(half, n_blocks, kk, block_min, one_bits, one_val)
        n_qual = 0
        for c in range(n_blocks):                          # the blocks within the bound
            qual[n_qual] = c
            n_qual += half[c] <= bound
        n_cand = 0
        for t in range(n_qual):
            for j in range(qual[t], n, n_blocks):
                cand[n_cand] = j
                n_cand += _key(bits[j]) <= bound          # branch-free gather of the columns <= bound
        if n_cand < kk:                                    # only with NaN in the row: every column
            for j in range(n):
                cand[j] = j
            n_cand = n
        for a in range(n_cand):                            # (key, column) as one int64
            j = cand[a]
            cand[a] = (np.int64(_key(bits[j])) << 32) | j
        if n_cand <= 4 * kk:
            # rank, branch-free and vectorised: O(n_cand^2), n_cand ~ kk
            for a in range(n_cand):
                this = cand[a]
                rank = 0
                for other in range(n_cand):
                    rank += cand[other] < this
                if rank < kk:
                    ranked[rank] = this
        else:                                              # many ties: insertion, O(n_cand kk)
            filled = 0
            for a in range(n_cand):
                v = cand[a]
                if filled < kk:
                    p = filled
                    filled += 1
                elif v < ranked[kk - 1]:
                    p = kk - 1
                else:
                    continue
                while p > 0 and ranked[p - 1] > v:
                    ranked[p] = ranked[p - 1]
                    p -= 1
                ranked[p] = v
        for a in range(kk):
            j = ranked[a] & 0xFFFFFFFF
            out_ind[r, a] = j
            out_val[r, a] = T[r, j]


#: a search of fewer (query, point) pairs runs its tiles on the calling thread: threads would cost
#: more than they save
_PARALLEL_CELLS = 1 << 22
_PARALLEL = threading.Lock()   # one search at a time runs its tiles on several workers
_BLAS = []   # threadpoolctl's controller of the BLAS libraries, made once (finding them takes ~5 ms)


def _controllers():
    if not _BLAS:
        from threadpoolctl import ThreadpoolController

        _BLAS.append(ThreadpoolController().select(user_api="blas"))
    return _BLAS[0]


@contextmanager
def _one_blas_thread():
    """The BLAS held to one thread for the search, for every thread that calls it (yields True), or
    nothing changed (False): threadpoolctl's limit is process-wide only for OpenBLAS's own
    (pthreads) pool, and there only from the thread that controls it; MKL's and OpenMP builds'
    limits are per calling thread, which would leave every worker all the BLAS's threads."""
    blas = _controllers()
    if not blas.lib_controllers or any(lib.internal_api != "openblas" or lib.threading_layer != "pthreads"
                                       for lib in blas.lib_controllers):
        yield False
        return
    with blas.limit(limits=1):
        yield blas_threads() == 1


def blas_threads() -> int:
    """The threads the loaded BLAS uses now (``OMP_NUM_THREADS``, ``threadpoolctl`` limits), at least 1."""
    counts = [int(lib.num_threads or 1) for lib in _controllers().lib_controllers]
    return max(1, min(counts)) if counts else 1


class Float32Search:
    """Certified float32 brute force over ``X`` (float64, ``(n, d)``); see the module docstring.

    With ``n_threads`` workers (default: as many as the BLAS has threads; one below
    :data:`_PARALLEL_CELLS` pairs) the query tiles are dealt to the workers, each computing its
    tiles' products on one BLAS thread and selecting them in the compiled kernel, which releases
    the GIL: the selection runs on every core too, not only the product (CENDA at m = 100k,
    docs/performance.md). Where the BLAS cannot be held to one thread for every worker
    (:func:`_one_blas_thread`), or another search in the process is already running on workers,
    the tiles run on the calling thread. The candidates are those of a one-thread BLAS."""

    def __init__(self, X, n_threads=None):
        self.X = X
        self.n_threads = n_threads
        self.center = X.mean(axis=0)
        Xc = X - self.center
        self.sqnorm = np.einsum("ij,ij->i", Xc, Xc)
        # [x_c^T; |x_c|^2] so that [-2 q_c, 1] @ it = |x_c|^2 - 2 q_c.x_c in one GEMM
        self.XT_aug = np.ascontiguousarray(np.vstack([Xc.T, self.sqnorm[None, :]]), dtype=np.float32)
        self._select = compiled(_select_smallest)

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
        levels, width = block_shape(n, kk)
        tile_rows = int(np.clip(_TILE_CELLS // max(width, 1), 8, 256))
        starts = list(range(0, m, tile_rows))

        def run(my_starts):
            tile = np.empty((min(tile_rows, m), width), dtype=np.float32)
            tile[:, n:] = np.inf
            for start in my_starts:
                stop = min(start + tile_rows, m)
                out = tile[:stop - start]
                np.matmul(Q_aug[start:stop], self.XT_aug, out=out[:, :n])
                self._select(out, out.view(np.int32), n, levels, kk, I[start:stop], V[start:stop])

        workers = min(self.n_threads or (blas_threads() if m * n >= _PARALLEL_CELLS else 1), len(starts))
        if workers <= 1 or not _PARALLEL.acquire(blocking=False):
            run(starts)
        else:
            try:
                with _one_blas_thread() as single:
                    if not single:           # the BLAS could not be held to one thread here
                        run(starts)
                    else:
                        from concurrent.futures import ThreadPoolExecutor

                        with ThreadPoolExecutor(workers) as pool:
                            list(pool.map(run, [starts[w::workers] for w in range(workers)]))
            finally:
                _PARALLEL.release()
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
