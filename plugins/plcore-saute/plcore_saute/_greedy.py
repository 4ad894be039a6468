"""Greedy selection (Eq. 5 / Eq. 7) and the kNN confidence update (Eq. 12-14) of SAUTE."""

from __future__ import annotations

import numpy as np

from plcore.neighbors import NeighborIndex
from plcore.utils import uniform_confidences

from plcore_saute._info import bin_counts, mutual_info_with

__all__ = ["greedy_select", "knn_update", "initial_confidences"]

# Eq. (1): ``Y(i, j) = 1/|S_i|`` on the candidates, 0 elsewhere -- the shared kernel of
# plcore.utils, kept importable here under the paper's name.
initial_confidences = uniform_confidences


def greedy_select(H, B, n_select, redundancy=True, marginals=None, cache=None):
    """Pick ``n_select`` features greedily, in order.

    Step ``p`` (1-based) takes, among the features not yet selected,

        argmax_f  -H(c|f) - (1/|A_{p-1}|) sum_{f_i in A_{p-1}} I(f; f_i)        (Eq. 7)

    with no redundancy term at ``p = 1`` (``A_0`` empty); ``redundancy=False`` drops the
    term at every step (Eq. 5, the MR baseline). ``H(c|f)`` does not depend on the greedy
    state, and the redundancy sums ``R_f = sum_{f_i in A} I(f; f_i)`` are updated
    incrementally: after each pick ``f_p``, ``R += I(., f_p)`` for all features in one
    O(m d) ``bincount``. Ties go to the lowest feature index.

    ``I(., f_j)`` depends on ``B`` alone, not on ``H``: a ``cache`` dict (feature -> that
    column) kept across calls on the same ``B`` computes it once per distinct pick.
    :class:`~plcore_saute.reducers.SauteReducer` keeps one per fit, whose outer iterations
    pick mostly the same features (memory: one d-vector per distinct pick, at most d x d).

    Parameters
    ----------
    H : ndarray (d,)
        Conditional entropies ``H(c|f)``.
    B : ndarray (m, d) of int
        Discretised features (:func:`plcore_saute._info.discretize`).
    n_select : int
    redundancy : bool
    marginals : ndarray (d, 5), optional
        :func:`~plcore_saute._info.bin_counts` of ``B``.
    cache : dict, optional
        ``I(., f_j)`` columns already computed on this ``B``; filled in place.

    Returns
    -------
    list of int
        Selected feature indices in the order they were picked.
    """
    d = H.shape[0]
    relevance = -np.asarray(H, dtype=np.float64)
    if not redundancy:
        # Eq. (5) alone: the n_select most relevant features (stable: ties -> lower index)
        return [int(j) for j in np.argsort(-relevance, kind="stable")[:n_select]]
    if marginals is None:
        marginals = bin_counts(B)
    R = np.zeros(d)
    available = np.ones(d, dtype=bool)
    selected = []
    for p in range(n_select):
        crit = relevance - R / p if p else relevance.copy()
        crit[~available] = -np.inf
        j = int(np.argmax(crit))
        selected.append(j)
        available[j] = False
        if p + 1 < n_select:
            if cache is None:
                R += mutual_info_with(B, j, marginals)
            else:
                if j not in cache:
                    cache[j] = mutual_info_with(B, j, marginals)
                R += cache[j]
    return selected


def knn_update(X_sel, Y, S, k, alpha):
    """One confidence update in the selected feature space, Eq. (12)-(14).

    ``L(i, j) = sum_{a=1..k} omega_a Y(i_a, j)`` over the k nearest neighbours
    ``i_1..i_k`` of ``x'_i`` (itself excluded, nearest first; Euclidean), with
    ``omega_a = k - a + 1`` (Eq. 12). ``L`` is not normalised, exactly as in the paper;
    ``Y' = (1 - alpha) Y + alpha L`` (Eq. 13), then renormalised over the candidates
    (Eq. 14). ``k`` is capped at ``m - 1``; with fewer than 2 examples ``Y`` is unchanged.
    """
    m = X_sel.shape[0]
    k = min(int(k), m - 1)
    if k < 1:
        return Y.copy()
    ind = NeighborIndex(X_sel).kneighbors(None, k, return_distance=False)   # (m, k), self excluded
    omega = np.arange(k, 0, -1, dtype=np.float64)                # k, k-1, ..., 1
    L = np.einsum("a,iaj->ij", omega, Y[ind])
    Yp = ((1.0 - alpha) * Y + alpha * L) * S
    total = Yp.sum(axis=1, keepdims=True)
    # (1 - alpha) Y > 0 on every candidate, so total > 0; guard against underflow anyway
    bad = ~(total[:, 0] > 0)
    if bad.any():
        Yp[bad] = S[bad]
        total[bad] = S[bad].sum(axis=1, keepdims=True)
    return Yp / total
