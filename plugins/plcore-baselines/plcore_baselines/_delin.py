"""DELIN's kernels (private): confidence-weighted LDA and the kNN disambiguation.

The numerics of :class:`plcore_baselines.delin.DelinReducer` (Wu & Zhang, KDD 2019; see
:mod:`plcore_baselines.delin` for the method): step 1, the confidence-weighted LDA
(:func:`weighted_lda`, with the dense reference :func:`weighted_scatter`), and step 2, the
kNN update of the confidences (:func:`knn_disambiguation`).
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.linalg as sla

from plcore.neighbors import NeighborIndex
from plcore.utils import flip_signs

__all__ = ["weighted_scatter", "weighted_lda", "knn_disambiguation"]


def weighted_scatter(X, F):
    """Confidence-weighted ``(S_t, S_b, S_w)`` (d x d each, divided by ``sum F = n``).

    Dense reference formulas (O(n d^2)); :func:`weighted_lda` never forms ``S_b`` or ``S_w``.
    """
    mass = F.sum(axis=0)
    total = mass.sum()
    mu = F.sum(axis=1) @ X / total
    Xc = X - mu
    St = (Xc * F.sum(axis=1)[:, None]).T @ Xc / total
    C = Xc.T @ F                                     # column c: m_c (mu_c - mu)
    inv = np.divide(1.0, mass, out=np.zeros_like(mass), where=mass > 0)
    Sb = (C * inv) @ C.T / total
    return St, Sb, St - Sb


def _factor_total(X, F, reg):
    """Cholesky factor ``L`` of ``S_t + r I`` (``r = reg * trace(S_t) / d``), centred data."""
    d = X.shape[1]
    total = F.sum()
    mu = F.sum(axis=1) @ X / total
    Xc = X - mu
    St = (Xc * F.sum(axis=1)[:, None]).T @ Xc / total
    scale = float(np.trace(St)) / d if d else 1.0
    scale = scale if scale > 0 else 1.0
    ridge = float(reg) * scale
    for extra in [0.0] + [10.0 ** e for e in range(-12, 1)]:
        r = ridge + extra * scale
        try:
            L = sla.cholesky(St + r * np.eye(d), lower=True)
        except sla.LinAlgError:
            continue
        if extra > 0:
            warnings.warn(
                f"DELIN: the total scatter matrix is singular (collinear or constant features, or "
                f"d > n); added a ridge {r:.3g} (reg={reg} was not enough)", UserWarning,
                stacklevel=4)
        return L, r, Xc
    raise np.linalg.LinAlgError("DELIN: could not factor the total scatter matrix")


def weighted_lda(X, F, n_components, reg=1e-6, factor=None):
    """Confidence-weighted LDA projection (step 1 of DELIN).

    Parameters
    ----------
    X : ndarray of shape (n, d)
    F : ndarray of shape (n, q)
        Labelling confidences (non-negative, rows sum to 1).
    n_components : int
        ``d'`` (at most ``d``; beyond the rank of ``S_b`` the eigenvalues are 0).
    reg : float
        Relative ridge: ``S_w`` is regularised by ``reg * trace(S_t) / d * I``.
    factor : tuple, optional
        ``(L, ridge, Xc)`` from a previous call with the same ``X`` (``S_t`` does not depend on
        ``F`` when rows of ``F`` sum to one).

    Returns
    -------
    P : ndarray of shape (d, n_components)
        Generalised eigenvectors of ``S_b p = lambda (S_w + r I) p``, eigenvalues decreasing,
        ``P^T (S_w + r I) P = I``.
    eigenvalues : ndarray of shape (n_components,)
    factor : tuple
        ``(L, ridge, Xc)`` for reuse.
    """
    if factor is None:
        factor = _factor_total(X, F, reg)
    L, ridge, Xc = factor
    d = X.shape[1]
    n = F.sum()
    mass = F.sum(axis=0)
    keep = mass > 0
    C = (Xc.T @ F[:, keep]) / np.sqrt(mass[keep] * n)       # S_b = C C^T
    Gm = sla.solve_triangular(L, C, lower=True)             # L^-1 C
    U, s, _ = np.linalg.svd(Gm, full_matrices=False)
    mu = s ** 2                                             # S_b p = mu (S_t + r I) p
    if U.shape[1] < n_components:                           # complete with zero-eigenvalue directions
        Q, _ = np.linalg.qr(np.hstack([U, np.eye(d)]))
        U = np.hstack([U, Q[:, U.shape[1]:n_components]])
        mu = np.concatenate([mu, np.zeros(n_components - mu.size)])
    U, mu = U[:, :n_components], np.clip(mu[:n_components], 0.0, None)
    V = sla.solve_triangular(L.T, U, lower=False)           # V^T (S_t + r I) V = I
    one_minus = np.maximum(1.0 - mu, 1e-12)
    P = V / np.sqrt(one_minus)                              # P^T (S_w + r I) P = I
    return flip_signs(P), mu / one_minus, factor


def knn_disambiguation(Z, F, S, k, n_jobs=None, update="vote"):
    """Step 2 of DELIN (``DELIN.m``): kNN update of the confidences in the projected space.

    Parameters
    ----------
    Z : ndarray of shape (n, d')
        Projected training data.
    F : ndarray of shape (n, q)
        Current confidences.
    S : ndarray of bool, shape (n, q)
        Candidate matrix.
    k : int
        Neighbours (capped at ``n - 1``).
    n_jobs : int, optional
        Parallel jobs of the neighbour search (a KD-tree up to 8 projected dimensions,
        scikit-learn's chunked brute force above: trees are slow at d' ~ 15).
    update : {"vote", "aggregate"}
        ``"vote"``: the rule of ``DELIN.m`` (module docstring); ``"aggregate"``: the kNN
        aggregation of CENDA (Eqs. 13-14 with alpha = 1), ``F_i + sum_a F_{n_a(i)}``
        restricted to the candidates and renormalised.

    Returns
    -------
    ndarray of shape (n, q)
        Updated confidences (zero off the candidates, rows sum to 1).
    """
    n, q = F.shape
    k = min(int(k), n - 1)
    if k < 1:
        return F.copy()
    nbr = NeighborIndex(Z, n_jobs=n_jobs).kneighbors(None, k, return_distance=False)   # measured rule
    Fn = F[nbr]                                              # (n, k, q), nearest first
    if update == "aggregate":
        B = np.where(S, F + Fn.sum(axis=1), 0.0)
        return B / B.sum(axis=1, keepdims=True)
    omega = np.arange(k, 0, -1, dtype=np.float64)            # k - a + 1
    score = np.where(S, np.einsum("nkq,k->nq", Fn, omega), -np.inf)
    count = np.where(S, (Fn > 0).sum(axis=1), -1)
    top = score.max(axis=1, keepdims=True)
    best = S & (score >= top - 1e-12 * np.maximum(1.0, np.abs(top)))
    votes = np.where(best, count, -1).max(axis=1)
    best &= count == votes[:, None]
    n_best = best.sum(axis=1)
    over = votes * n_best > k                                # cannot give each v/k: keep the first
    if over.any():
        first = np.zeros_like(best)
        first[np.arange(n), np.argmax(best, axis=1)] = True
        best[over] = first[over]
        n_best = best.sum(axis=1)
    n_cand = S.sum(axis=1)
    unchanged = (top[:, 0] <= 0) | (n_best == n_cand)
    rest = np.maximum(1.0 - votes * n_best / k, 0.0) / np.maximum(n_cand - n_best, 1)
    G = np.where(best, (votes / k)[:, None], np.where(S, rest[:, None], 0.0))
    sums = G.sum(axis=1, keepdims=True)
    G = np.divide(G, sums, out=np.zeros_like(G), where=sums > 0)
    return np.where(unchanged[:, None], F, G)
