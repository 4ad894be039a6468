"""Vectorised neighbour decision rules of PL A-kNN and its kNN baselines.

Everything here works on *cumulative candidate counts*: for queries ``i`` and their
``K`` nearest training examples in order, ``counts[i, k - 1, l]`` is the number of the
``k`` nearest bags holding label ``l``, so the frequency of the paper's Algorithm 1 is
``f_k(l) = counts[i, k - 1, l] / k``. One neighbour search up to ``K = k_max`` gives the
counts of every ``k`` at once (a cumulative sum over the neighbour axis).

Rules (DESIGN.md "PL A-kNN"; Errandonea et al., Algorithm 1 and Appendix D.3):

* :func:`aknn_rule` -- PL A-kNN: elimination with the threshold ``Delta(n, k, delta)``
  (:func:`threshold`), stop when one label remains, else the sqrt(k)-scaled
  disambiguation.
* :func:`multiclass_rule` -- the multiclass extension of A-kNN (Balsubramani et al.
  2019) the paper compares with: grow ``k`` until the top label's lead over the second
  exceeds ``Delta``.
* :func:`aknn_rule_compiled`, :func:`multiclass_rule_compiled` -- the same two rules
  from neighbour indices, one query at a time with early stopping, compiled (numba); what
  the learners run. The numpy versions above are their references in the tests.
* :func:`fixed_k_votes` -- distance-weighted PL-kNN votes for every ``k`` at once (used
  by the inner cross-validation of the kNN oracle).
"""

from __future__ import annotations

import numpy as np

from plcore.utils import compiled, dense_candidates  # noqa: F401 - re-exported (benchmarks/aknn_experiments.py)

__all__ = ["threshold", "dense_candidates", "neighbour_counts", "aknn_rule", "aknn_rule_neighbours",
           "aknn_rule_compiled", "multiclass_rule", "multiclass_rule_neighbours", "multiclass_rule_compiled",
           "fixed_k_votes", "chunk_rows", "CHUNK_ELEMENTS"]

#: Upper bound on the number of ``(query, k, label)`` cells held at once; queries are
#: processed in chunks of ``max(1, CHUNK_ELEMENTS // (K * q))`` rows.
CHUNK_ELEMENTS = 1 << 22


def threshold(n, k, c, delta):
    """Elimination threshold ``Delta(n, k, delta) = c * sqrt((log n + log(1/delta)) / k)``.

    The threshold of the paper's Algorithm 1 (its section 3, the confidence width of a
    frequency estimated from ``k`` bags); ``k`` may be an array.
    """
    k = np.asarray(k, dtype=np.float64)
    return c * np.sqrt((np.log(n) + np.log(1.0 / delta)) / k)


def neighbour_counts(S, indices) -> np.ndarray:
    """Cumulative candidate counts ``(m, K, q)`` (int32) of the neighbours in ``indices``.

    ``counts[i, k - 1, l] = sum_{j < k} S[indices[i, j], l]``.
    """
    return np.cumsum(S[indices], axis=1, dtype=np.int32)


def chunk_rows(n_rows: int, K: int, q: int, budget: int | None = None):
    """Yield slices of at most ``max(1, budget // (K q))`` rows covering ``range(n_rows)``.

    ``budget`` defaults to the module's ``CHUNK_ELEMENTS`` (read at call time).
    """
    budget = CHUNK_ELEMENTS if budget is None else budget
    step = max(1, int(budget) // max(1, K * q))
    for start in range(0, n_rows, step):
        yield slice(start, min(n_rows, start + step))


class _Counts:
    """Cumulative counts of step ``j`` for the active queries, from a ``(m, K, q)`` tensor."""

    def __init__(self, counts):
        self.counts = counts
        self.shape = counts.shape

    def step(self, act, j):
        return self.counts[act, j, :]

    def keep(self, mask):
        pass


class _Neighbours:
    """The same counts accumulated step by step from ``S`` and neighbour ``indices``.

    Only the still-undecided queries are updated, so no count beyond a query's stopping
    ``k`` is ever computed and only ``(m, q)`` counts are held.
    """

    def __init__(self, S, indices):
        self.S, self.ind = S, indices
        self.shape = (indices.shape[0], indices.shape[1], S.shape[1])
        self.run = np.zeros((indices.shape[0], S.shape[1]), dtype=np.int32)

    def step(self, act, j):
        self.run += self.S[self.ind[act, j]]
        return self.run

    def keep(self, mask):
        self.run = self.run[mask]


def _aknn(source, n_train, c, delta):
    m, K, q = source.shape
    deltas = threshold(n_train, np.arange(1, K + 1), c, delta)
    pred = np.empty(m, dtype=np.int64)
    k_used = np.full(m, K, dtype=np.int64)
    act = np.arange(m)                        # queries still undecided
    alive = np.ones((m, q), dtype=bool)       # potential labels of the active queries
    best = np.full((m, q), -np.inf)           # running max_k sqrt(k) (f_k(l) - f_k^(2))
    for j in range(K):
        if act.size == 0:
            break
        k = j + 1
        f = source.step(act, j) / k
        fa = np.where(alive, f, -np.inf)
        top2 = -np.partition(-fa, 1, axis=1)[:, :2] if q > 1 else np.repeat(fa, 2, axis=1)
        m1, m2 = top2[:, 0], top2[:, 1]
        np.maximum(best, np.where(alive, np.sqrt(k) * (f - m2[:, None]), -np.inf), out=best)
        alive &= ~((m1[:, None] - f) > deltas[j])
        single = alive.sum(axis=1) == 1
        if single.any():
            done = act[single]
            pred[done] = np.argmax(alive[single], axis=1)
            k_used[done] = k
            keep = ~single
            act, alive, best = act[keep], alive[keep], best[keep]
            source.keep(keep)
    if act.size:
        pred[act] = np.argmax(np.where(alive, best, -np.inf), axis=1)
    return pred, k_used


def aknn_rule(counts, n_train, c, delta):
    """PL A-kNN decisions from cumulative counts.

    For each query, with ``A_0`` = all labels (the *potential* labels) and
    ``k = 1 .. K``: ``f_k(l) = counts[k-1, l] / k``; ``m1_k`` the largest frequency among
    the labels still potential; every potential label with ``m1_k - f_k(l) > Delta(n,
    k, delta)`` is dropped (Algorithm 1). A dropped label stays dropped. The query is
    decided at the first ``k`` where one label remains. If several remain after ``K``
    steps, the prediction is the remaining label maximising

        max_k sqrt(k) * (f_k(l) - f_k^(2))                 (Appendix D.3)

    with ``f_k^(2)`` the second largest frequency among the labels that were potential
    at the start of step ``k`` (as in the authors' reference implementation; the label
    with the top frequency gets its lead over the runner-up, every other label a
    non-positive gap). Ties go to the lowest label index.

    Why the maximum is taken over the *potential* labels only: a label dropped early
    may later become the most frequent, and a maximum over all labels would then drop
    every potential label (an empty set). So step ``k`` depends on the potential set
    after step ``k - 1``: the loop runs over ``k`` (short), vectorised over the
    still-undecided queries and the labels (decided queries leave the arrays).

    Parameters
    ----------
    counts : ndarray of shape (m, K, q)
        Cumulative candidate counts (:func:`neighbour_counts`).
    n_train : int
        Number of training examples ``n`` in ``Delta(n, k, delta)``.
    c, delta : float
        Threshold constant and confidence parameter.

    Returns
    -------
    pred : ndarray of shape (m,)
        Predicted label indices (columns of ``counts``).
    k_used : ndarray of shape (m,)
        The ``k`` at which one label remained, or ``K`` when the disambiguation decided.
    """
    return _aknn(_Counts(counts), n_train, c, delta)


def aknn_rule_neighbours(S, indices, n_train, c, delta):
    """:func:`aknn_rule` on ``neighbour_counts(S, indices)``, without forming the tensor.

    The cumulative counts are accumulated one neighbour at a time for the undecided
    queries only (what :class:`AknnLearner` runs). Same result as
    ``aknn_rule(neighbour_counts(S, indices), ...)``.
    """
    return _aknn(_Neighbours(S, indices), n_train, c, delta)


def multiclass_rule(counts, n_train, c, delta):
    """Multiclass A-kNN extension (Balsubramani et al. 2019) from cumulative counts.

    For ``k = 1 .. K`` the top label's lead ``f_k^(1) - f_k^(2)`` over the runner-up is
    compared with ``Delta(n, k, delta)``; at the first ``k`` where it exceeds it the
    top label is predicted. Otherwise the most frequent label at ``k = K`` is
    predicted. Ties go to the lowest label index. Fully vectorised.

    Returns ``pred, k_used`` as :func:`aknn_rule`.
    """
    m, K, q = counts.shape
    ks = np.arange(1, K + 1)
    deltas = threshold(n_train, ks, c, delta)
    if q > 1:
        top2 = np.partition(counts, q - 2, axis=2)[:, :, q - 2:]
        lead = (top2[:, :, 1] - top2[:, :, 0]) / ks[None, :]
    else:
        lead = np.full((m, K), np.inf)         # one label: decided at k = 1 (as the incremental version)
    stop = lead > deltas[None, :]
    any_stop = stop.any(axis=1)
    j = np.where(any_stop, np.argmax(stop, axis=1), K - 1)
    pred = np.argmax(counts[np.arange(m), j, :], axis=1)
    return pred, j + 1


def fixed_k_votes(distances, S_nb, weights="linear"):
    """PL-kNN votes for every ``k = 1 .. K`` at once, shape ``(m, K, q)``.

    ``S_nb`` (m, K, q) holds the neighbours' candidate rows in distance order. With
    ``weights="linear"`` the vote of neighbour ``j`` among the ``k`` nearest is
    ``w_j = 1 - d_j / sum_{j' <= k} d_{j'}`` (Hüllermeier & Beringer), so

        votes_k = cumsum(S)_k - cumsum(d S)_k / cumsum(d)_k,

    uniform (``cumsum(S)_k``) where the ``k`` distances are all ~0 or ``k = 1``; with
    ``weights="uniform"`` every neighbour votes 1.
    """
    A = np.cumsum(S_nb, axis=1, dtype=np.float64)
    if weights == "uniform":
        return A
    d = np.asarray(distances, dtype=np.float64)
    D = np.cumsum(d, axis=1)
    B = np.cumsum(d[:, :, None] * S_nb, axis=1)
    ok = D > 1e-12 * max(1.0, float(np.max(D, initial=0.0)))
    ok[:, 0] = False
    safe = np.where(ok, D, 1.0)
    return np.where(ok[:, :, None], A - B / safe[:, :, None], A)


def multiclass_rule_neighbours(S, indices, n_train, c, delta):
    """:func:`multiclass_rule` with counts accumulated for the undecided queries only.

    Same result as ``multiclass_rule(neighbour_counts(S, indices), ...)``; no count
    beyond a query's stopping ``k`` is computed (what :class:`AknnMulticlassLearner` runs).
    """
    m, K = indices.shape
    q = S.shape[1]
    deltas = threshold(n_train, np.arange(1, K + 1), c, delta)
    pred = np.empty(m, dtype=np.int64)
    k_used = np.full(m, K, dtype=np.int64)
    act = np.arange(m)
    run = np.zeros((m, q), dtype=np.int32)
    for j in range(K):
        if act.size == 0:
            break
        k = j + 1
        run += S[indices[act, j]]
        if q > 1:
            top2 = np.partition(run, q - 2, axis=1)[:, q - 2:]
            stop = (top2[:, 1] - top2[:, 0]) / k > deltas[j]
        else:
            stop = np.ones(act.size, dtype=bool)
        if stop.any():
            done = act[stop]
            pred[done] = np.argmax(run[stop], axis=1)
            k_used[done] = k
            act, run = act[~stop], run[~stop]
    if act.size:
        pred[act] = np.argmax(run, axis=1)
    return pred, k_used


def _aknn_kernel(S, indices, deltas, pred, k_used):
    """Per query: Algorithm 1 + Appendix D.3 exactly as :func:`aknn_rule` (same arithmetic,
    same ties), stopping at the first ``k`` where one label remains. Only the potential
    labels (kept in index order) are counted: a dropped label never matters again."""
    m, K = indices.shape
    q = S.shape[1]
    run = np.zeros(q, np.int64)
    alive = np.empty(q, np.int64)             # the potential labels, ascending
    best = np.empty(q)
    f = np.empty(q)
    for i in range(m):
        n_alive = q
        for lab in range(q):
            alive[lab] = lab
            run[lab] = 0
            best[lab] = -np.inf
        pred[i] = -1
        for j in range(K):
            k = j + 1
            row = S[indices[i, j]]
            m1 = -np.inf
            m2 = -np.inf
            for a in range(n_alive):
                lab = alive[a]
                run[lab] += row[lab]
                f[lab] = run[lab] / k
                if f[lab] > m1:
                    m2 = m1
                    m1 = f[lab]
                elif f[lab] > m2:
                    m2 = f[lab]
            if q == 1:
                m2 = m1
            root = np.sqrt(k)
            kept = 0
            for a in range(n_alive):
                lab = alive[a]
                gap = root * (f[lab] - m2)
                if gap > best[lab]:
                    best[lab] = gap
                if not m1 - f[lab] > deltas[j]:
                    alive[kept] = lab
                    kept += 1
            n_alive = kept
            if n_alive == 1:
                pred[i] = alive[0]
                k_used[i] = k
                break
        if pred[i] < 0:
            top = -np.inf
            arg = 0
            for a in range(n_alive):
                lab = alive[a]
                if best[lab] > top:
                    top = best[lab]
                    arg = lab
            pred[i] = arg
            k_used[i] = K


def _multiclass_kernel(S, indices, deltas, pred, k_used):
    """Per query: the multiclass extension exactly as :func:`multiclass_rule`, stopping at
    the first ``k`` where the lead exceeds ``Delta``."""
    m, K = indices.shape
    q = S.shape[1]
    run = np.zeros(q, np.int64)
    for i in range(m):
        run[:] = 0
        k_used[i] = K
        for j in range(K):
            k = j + 1
            row = S[indices[i, j]]
            for lab in range(q):
                run[lab] += row[lab]
            if q == 1:
                k_used[i] = k
                break
            t1 = run[0]
            t2 = run[1]
            if t2 > t1:
                t1, t2 = t2, t1
            for lab in range(2, q):
                if run[lab] > t1:
                    t2 = t1
                    t1 = run[lab]
                elif run[lab] > t2:
                    t2 = run[lab]
            if (t1 - t2) / k > deltas[j]:
                k_used[i] = k
                break
        arg = 0
        for lab in range(1, q):
            if run[lab] > run[arg]:
                arg = lab
        pred[i] = arg


def _compiled_rule(kernel, S, indices, n_train, c, delta):
    m, K = indices.shape
    deltas = threshold(n_train, np.arange(1, K + 1), c, delta)
    pred = np.empty(m, dtype=np.int64)
    k_used = np.empty(m, dtype=np.int64)
    if m:
        compiled(kernel)(np.ascontiguousarray(S), np.ascontiguousarray(indices), deltas, pred, k_used)
    return pred, k_used


def aknn_rule_compiled(S, indices, n_train, c, delta):
    """:func:`aknn_rule_neighbours`, one query at a time, compiled: same ``(pred, k_used)``."""
    return _compiled_rule(_aknn_kernel, S, indices, n_train, c, delta)


def multiclass_rule_compiled(S, indices, n_train, c, delta):
    """:func:`multiclass_rule_neighbours`, one query at a time, compiled: same ``(pred, k_used)``."""
    return _compiled_rule(_multiclass_kernel, S, indices, n_train, c, delta)
