"""Adversarial pairwise-constraint propagation: S and D by Eqs. (14), (16), (17).

Two solvers of Eq. (14):

* :func:`propagate_classwise` (default, every n): with every pair constrained (P all ones,
  the pseudo-labels of ALL samples give M and C) Eq. (14) is a sum of independent problems,
  one per ROW r of (S, D), and the problem of row r depends on r only through its
  pseudo-label (``M_r`` = indicator of the samples sharing it, ``C_r = 1 - M_r``). Each is
  ``min_{s, d >= 0} d's + alpha d'Ld + beta s'Ls + gamma ||s - m||^2 + gamma ||d - c||^2``,
  whose Hessian ``[[2 beta L + 2 gamma I, I], [I, 2 alpha L + 2 gamma I]]`` is positive
  definite for ``gamma > 1/2`` (L is PSD): then the minimiser is unique and the exact
  solution of Eq. (14) is ``S = E Sigma``, ``D = E Delta`` with one row ``sigma_l``,
  ``delta_l`` per pseudo-label (E the one-hot pseudo-label matrix). We solve those q
  problems of size 2n (accelerated projected gradient, condition number about
  ``(2 max(alpha, beta) lambda_max(L) + 2 gamma + 1) / (2 gamma - 1)``) and never form an
  n x n matrix: O(q n k) time and O(q n) memory. The column distances that the W step needs
  (Eq. (11): ``H_ij = ||D_{., N_j(i)} - D_{., j}||^2``) are then
  ``sum_l n_l (delta_l[N_j(i)] - delta_l[j])^2`` (:func:`classwise_sqdist`).
* :func:`propagate_constraints`: the public demo's dense solver (a random symmetric start,
  the multiplicative updates Eqs. (16)-(17), ``(X + X')/2`` after each), which stops after
  ``inner_iter`` steps at an approximate solution; kept for comparison at n <= 5000.

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

__all__ = ["laplacian_quad", "sd_objective", "sd_multiplicative_step", "propagate_constraints",
           "propagate_classwise", "classwise_sqdist"]


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


def propagate_classwise(W, pseudo, n_labels, alpha, beta, gamma, *, tol=1e-9, max_iter=5000):
    """Eq. (14) solved exactly per pseudo-label class (module docstring; P all ones).

    Returns ``(Sigma, Delta, counts, objective)``: ``Sigma``, ``Delta`` of shape
    ``(n_labels, n)`` (row l = the rows of S, D of every sample with pseudo-label l),
    ``counts[l]`` = number of such samples and the Eq. (14) objective of ``S = Sigma[pseudo]``,
    ``D = Delta[pseudo]``. Accelerated projected gradient with gradient restarts, stopped when
    the projected-gradient step is below ``tol`` (max-norm) -- for ``gamma > 1/2`` the
    problem is strongly convex and this converges linearly.
    """
    W = sp.csr_matrix(W, dtype=np.float64)
    n = W.shape[0]
    pseudo = np.asarray(pseudo)
    counts = np.bincount(pseudo, minlength=n_labels).astype(np.float64)
    Mq = (np.arange(n_labels)[:, None] == pseudo[None, :]).astype(np.float64)  # rows m_l
    Cq = 1.0 - Mq
    degree = np.asarray(W.sum(axis=1)).ravel()
    lam_max = 2.0 * float(degree.max()) if n else 0.0  # Gershgorin bound on lambda_max(L)
    step = 1.0 / (2.0 * max(alpha, beta) * lam_max + 2.0 * gamma + 1.0)

    def grad(Sg, Dg):
        LS = Sg * degree - (W @ Sg.T).T
        LD = Dg * degree - (W @ Dg.T).T
        return (Dg + 2.0 * beta * LS + 2.0 * gamma * (Sg - Mq),
                Sg + 2.0 * alpha * LD + 2.0 * gamma * (Dg - Cq))

    Sg, Dg = Mq.copy(), Cq.copy()
    ys, yd, t = Sg.copy(), Dg.copy(), 1.0
    for _ in range(int(max_iter)):
        gs, gd = grad(ys, yd)
        S_new = np.maximum(ys - step * gs, 0.0)
        D_new = np.maximum(yd - step * gd, 0.0)
        moved = max(np.abs(S_new - Sg).max(initial=0.0), np.abs(D_new - Dg).max(initial=0.0))
        if np.vdot(gs, S_new - Sg) + np.vdot(gd, D_new - Dg) > 0.0:  # restart the momentum
            ys, yd, t = Sg.copy(), Dg.copy(), 1.0
            continue
        t_new = 0.5 * (1.0 + np.sqrt(1.0 + 4.0 * t * t))
        ys = S_new + ((t - 1.0) / t_new) * (S_new - Sg)
        yd = D_new + ((t - 1.0) / t_new) * (D_new - Dg)
        Sg, Dg, t = S_new, D_new, t_new
        if moved <= tol:
            break
    return Sg, Dg, counts, classwise_objective(Sg, Dg, counts, W, Mq, Cq, alpha, beta, gamma)


def classwise_objective(Sg, Dg, counts, W, Mq, Cq, alpha, beta, gamma) -> float:
    """Eq. (14) of ``S = Sigma[pseudo]``, ``D = Delta[pseudo]``: the class problems weighted by
    their sizes (equals :func:`sd_objective` of the dense matrices; tested)."""
    degree = np.asarray(W.sum(axis=1)).ravel()

    def quad(X):  # row-wise x'Lx
        return np.einsum("ln,ln->l", X * degree, X) - np.einsum("ln,ln->l", (W @ X.T).T, X)

    per_class = (np.einsum("ln,ln->l", Dg, Sg) + alpha * quad(Dg) + beta * quad(Sg)
                 + gamma * ((Sg - Mq) ** 2).sum(axis=1) + gamma * ((Dg - Cq) ** 2).sum(axis=1))
    return float(counts @ per_class)


def classwise_sqdist(X, counts, nbr):
    """``H[j, s] = ||M_{., nbr[j, s]} - M_{., j}||^2`` for ``M = X[pseudo]`` (``X`` of shape
    (n_labels, n), ``counts`` the class sizes): ``sum_l counts_l (X[l, nbr] - X[l, j])^2``."""
    diff = X[:, nbr] - X[:, :, None]  # (n_labels, n, k)
    return np.einsum("l,ljs->js", counts, diff * diff)
