"""IPAL's kernels (private): the batched NNLS weights, the propagation and the decoding.

The numerics of :class:`plcore_baselines.ipal.IpalLearner` (Zhang & Yu, IJCAI 2015; see
:mod:`plcore_baselines.ipal` for the steps and equations): Eq. (1) for all rows as one OSQP
problem (:func:`batched_nnls`), Eqs. (4)-(5) (:func:`propagate`), Eqs. (6)-(7)
(:func:`class_mass_normalise`) and Eq. (8) (:func:`reconstruction_errors`).
"""

from __future__ import annotations

import numpy as np
import osqp
import scipy.sparse as sp

from plcore.utils import osqp_settings, osqp_solution, upper_block_pattern

__all__ = ["batched_nnls", "propagate", "class_mass_normalise", "reconstruction_errors", "DEFAULT_OSQP"]

#: OSQP defaults: with solution polishing the weights equal an exact NNLS solution (to ~1e-12)
#: when it is unique (d >= k in general position); otherwise accurate to ~1e-6.
_OSQP_EPS, _OSQP_MAX_ITER = 1e-6, 100_000
DEFAULT_OSQP = osqp_settings(_OSQP_EPS, max_iter=_OSQP_MAX_ITER)

_CHUNK_ELEMS = 4_000_000  # gathered neighbour blocks are built in row chunks of this size


def _gram_blocks(X, R, neighbours):
    """``G[i] = N_i N_i^T`` (n, k, k) and ``b[i] = N_i x_i`` (n, k), ``N_i = R[neighbours[i]]``."""
    n, k = neighbours.shape
    d = R.shape[1]
    G = np.empty((n, k, k))
    b = np.empty((n, k))
    step = max(1, _CHUNK_ELEMS // max(1, k * d))
    for a in range(0, n, step):
        z = min(n, a + step)
        N = R[neighbours[a:z]]                       # (chunk, k, d)
        G[a:z] = np.einsum("nkd,nld->nkl", N, N)
        b[a:z] = np.einsum("nkd,nd->nk", N, X[a:z])
    return G, b


def batched_nnls(X, R, neighbours, settings=None):
    """Non-negative reconstruction weights of Eq. (1) for every row of ``X``, one OSQP call.

    Solves ``min_{w_i >= 0} ||X[i] - sum_s w_i[s] R[neighbours[i, s]]||^2`` for all ``i`` at
    once: with ``G_i = N_i N_i^T`` and ``b_i = N_i x_i`` this is the QP
    ``min 0.5 w'(2 G_i / s_i) w - (2 b_i / s_i)' w, w >= 0``, stacked block-diagonally
    (``s_i = trace(G_i) / k`` equilibrates the blocks; it does not change the minimiser).

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Points to reconstruct.
    R : ndarray of shape (n_ref, d)
        Reference points (the training set).
    neighbours : ndarray of int, shape (n, k)
        Indices into ``R`` of each point's neighbours.
    settings : dict, optional
        OSQP settings overriding :data:`DEFAULT_OSQP`.

    Returns
    -------
    w : ndarray of shape (n, k)
        Non-negative weights (row ``i`` in the order of ``neighbours[i]``).
    G, b : ndarray
        The Gram blocks (n, k, k) and ``N_i x_i`` (n, k), reused by the prediction step.
    """
    neighbours = np.asarray(neighbours, dtype=np.intp)
    n, k = neighbours.shape
    G, b = _gram_blocks(X, R, neighbours)
    scale = np.trace(G, axis1=1, axis2=2) / k
    scale = np.where(scale > 0, scale, 1.0)
    indptr, indices, r, c = upper_block_pattern(n, k)
    Px = (2.0 * G[:, r, c] / scale[:, None]).ravel()
    P = sp.csc_matrix((Px, indices, indptr), shape=(n * k, n * k))
    q = (-2.0 * b / scale[:, None]).ravel()
    A = sp.identity(n * k, format="csc")
    solver = osqp.OSQP()
    solver.setup(P, q, A, np.zeros(n * k), np.full(n * k, np.inf),
                 **osqp_settings(_OSQP_EPS, max_iter=_OSQP_MAX_ITER, overrides=settings))
    res = solver.solve(raise_error=False)
    x = osqp_solution(res, "IPAL reconstruction-weight",
                      accept=("solved", "solved inaccurate", "maximum iterations reached"))
    w = np.clip(x.reshape(n, k), 0.0, None)
    return w, G, b


def propagate(HT, F0, S, alpha, n_iter):
    """Eqs. (4)-(5): ``n_iter`` times ``F~ = alpha H^T F + (1 - alpha) F0``, rescaled onto ``S``.

    ``HT`` is ``H^T`` (sparse or dense, (n, n)); ``F0`` (n, q) the initial confidences and ``S``
    the boolean candidate matrix. Rows stay on their candidates and sum to 1.
    """
    F = F0
    for _ in range(int(n_iter)):
        Ft = alpha * (HT @ F) + (1.0 - alpha) * F0
        Ft = np.where(S, Ft, 0.0)
        F = Ft / Ft.sum(axis=1, keepdims=True)
    return F


def propagate_path(HT, F0, S, alphas, n_iters):
    """:func:`propagate` for several ``(alpha, n_iter)`` at once: the confidences of every alpha
    stacked side by side, one sparse product per iteration for all of them, each ``F`` kept at
    its ``n_iter``. Each result equals ``propagate(HT, F0, S, alpha, n_iter)`` to the bit (the
    sparse product and the row sums treat every column block alike); returns them in order."""
    alphas = np.asarray(alphas, dtype=np.float64)
    n, q = F0.shape
    groups = sorted(set(alphas.tolist()))
    a = np.array(groups)[None, :, None]
    F = np.repeat(F0[:, None, :], len(groups), axis=1)                       # (n, A, q)
    mask = np.asarray(S, dtype=bool)[:, None, :]
    wanted = {(alpha, int(t)) for alpha, t in zip(alphas.tolist(), n_iters)}
    out = {(alpha, 0): F0 for alpha, t in wanted if t == 0}
    for it in range(1, max(int(t) for t in n_iters) + 1):
        HF = np.asarray(HT @ F.reshape(n, -1)).reshape(n, len(groups), q)
        Ft = np.where(mask, a * HF + (1.0 - a) * F0[:, None, :], 0.0)
        F = Ft / Ft.sum(axis=2, keepdims=True)
        for j, alpha in enumerate(groups):
            if (alpha, it) in wanted:
                out[(alpha, it)] = F[:, j, :].copy()
    return [out[(alpha, int(t))] for alpha, t in zip(alphas.tolist(), n_iters)]


def class_mass_normalise(F, F0):
    """Eqs. (6)-(7): scale class ``c`` by ``sum_i F0[i, c] / sum_i F[i, c]``; rows renormalised.

    Returns the normalised confidences (rows sum to 1, zero off the candidates); their row-wise
    argmax is IPAL's disambiguated label.
    """
    mass0, mass = F0.sum(axis=0), F.sum(axis=0)
    ratio = np.divide(mass0, mass, out=np.zeros_like(mass), where=mass > 0)
    Fc = F * ratio
    return Fc / Fc.sum(axis=1, keepdims=True)


def reconstruction_errors(X, w, G, b, neighbour_labels, n_classes):
    """Eq. (8): ``||x - sum_{j: y^_j = c} w_j x_j||`` for every row and class, (n, q).

    Uses ``||x - N_c' w_c||^2 = ||x||^2 - 2 w_c' b_c + w_c' G_cc w_c`` with the Gram blocks of
    the weight step, so no (n, q, d) array is formed. Classes without a neighbour get ``||x||``.
    """
    n, k = neighbour_labels.shape
    same = neighbour_labels[:, :, None] == neighbour_labels[:, None, :]
    quad = np.einsum("nk,nkl,nl->nk", w, np.where(same, G, 0.0), w)  # row s: w_s sum_t G_st w_t
    contrib = quad - 2.0 * w * b
    r2 = np.repeat(np.einsum("nd,nd->n", X, X)[:, None], n_classes, axis=1)
    np.add.at(r2, (np.repeat(np.arange(n), k), neighbour_labels.ravel()), contrib.ravel())
    return np.sqrt(np.maximum(r2, 0.0))
