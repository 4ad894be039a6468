"""Adversarial pairwise-constraint propagation: S and D by Eqs. (14), (16), (17).

With the must-link / cannot-link indicators ``M``, ``C`` from the pseudo-labels
``argmax F`` over all samples, the position matrix ``P`` is all ones, so the penalty
``||P o (S - M)||_F^2`` is the plain ``||S - M||_F^2``; general ``P`` is supported.
Products with the (sparse, symmetric) weight matrix cost O(n^2 k); S and D are dense
n x n (memory grows as O(n^2): about ``8 * 6 * n^2`` bytes in float64 at the peak,
1.2 GB at n = 5000).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["laplacian_quad", "sd_objective", "sd_multiplicative_step", "propagate_constraints"]


def _dense_times_sparse(M, W):
    """``M @ W`` for dense M (n, n) and sparse W, as a C-ordered ndarray."""
    return np.ascontiguousarray((W.T @ M.T).T)


def laplacian_quad(M, W, degree, MW=None):
    """``Tr(M L M')`` with ``L = diag(degree) - W``, using the sparsity of W."""
    if MW is None:
        MW = _dense_times_sparse(M, W)
    return float(np.einsum("ij,ij->", M * M, np.broadcast_to(degree, M.shape)) - np.vdot(M, MW))


def sd_objective(S, D, W, Mml, Ccl, alpha, beta, gamma, P=None, SW=None, DW=None):
    """Eq. (14): ``||D o S||_1 + a Tr(DLD') + b Tr(SLS') + g(||P o (S-M)||^2 + ||P o (D-C)||^2)``."""
    degree = np.asarray(W.sum(axis=1)).ravel()
    if P is None:
        fit = np.sum((S - Mml) ** 2) + np.sum((D - Ccl) ** 2)
    else:
        fit = np.sum((P * (S - Mml)) ** 2) + np.sum((P * (D - Ccl)) ** 2)
    return float(np.vdot(D, S) + alpha * laplacian_quad(D, W, degree, DW)
                 + beta * laplacian_quad(S, W, degree, SW) + gamma * fit)


def _update(X, Y, XW, degree, target, coef, gamma, P):
    """One multiplicative update of X (S with Y = D, or D with Y = S); Eq. (16)/(17).

    ``X <- X o (2g P o target + 2c X W) / (Y + 2c X A + 2g P o X)``.
    """
    num = 2.0 * coef * XW
    den = 2.0 * coef * X * degree[None, :]
    if P is None:
        num += 2.0 * gamma * target
        den += 2.0 * gamma * X
    else:
        num += 2.0 * gamma * (P * target)
        den += 2.0 * gamma * (P * X)
    den += Y
    np.divide(num, den, out=num, where=den > 0)
    num[den <= 0] = 0.0
    return X * num


def sd_multiplicative_step(S, D, W, Mml, Ccl, alpha, beta, gamma, P=None, SW=None):
    """S by Eq. (16), then D by Eq. (17) with the new S. Returns ``(S, D)`` (not symmetrised)."""
    degree = np.asarray(W.sum(axis=1)).ravel()
    if SW is None:
        SW = _dense_times_sparse(S, W)
    S = _update(S, D, SW, degree, Mml, beta, gamma, P)
    D = _update(D, S, _dense_times_sparse(D, W), degree, Ccl, alpha, gamma, P)
    return S, D


def propagate_constraints(W, Mml, Ccl, alpha, beta, gamma, *, max_iter=10, rng, P=None,
                          tol=0.0, dtype=np.float64):
    """Solve Eq. (14) for S and D from a seeded random symmetric start.

    Each iteration applies Eq. (16) then Eq. (17) and symmetrises ``(X + X')/2``.
    A step is kept only if it lowers the objective; the first step that does not
    (by more than ``tol``) ends the loop with the previous iterate, so the returned
    objective never exceeds the start's. Returns ``(S, D, objectives)``.
    """
    n = W.shape[0]
    W = sp.csr_matrix(W)
    R = rng.random_sample((n, n)).astype(dtype)
    S = 0.5 * (R + R.T)
    R = rng.random_sample((n, n)).astype(dtype)
    D = 0.5 * (R + R.T)
    del R
    obj = [sd_objective(S, D, W, Mml, Ccl, alpha, beta, gamma, P)]
    for _ in range(int(max_iter)):
        S_new, D_new = sd_multiplicative_step(S, D, W, Mml, Ccl, alpha, beta, gamma, P)
        S_new += S_new.T.copy()
        S_new *= 0.5
        D_new += D_new.T.copy()
        D_new *= 0.5
        val = sd_objective(S_new, D_new, W, Mml, Ccl, alpha, beta, gamma, P)
        if not val < obj[-1] - tol:
            break
        S, D = S_new, D_new
        obj.append(val)
    return S, D, np.asarray(obj)
