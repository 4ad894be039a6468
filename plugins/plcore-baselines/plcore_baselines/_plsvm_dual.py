"""Exact solver of PL-SVM's convex stage: a Crammer-Singer dual with per-example label sets.

With the "best candidate" ``p_i`` of every example fixed, the PL-SVM objective of Nguyen &
Caruana (2008) becomes the convex problem

    min_W  1/2 ||W||_F^2 + c * sum_i max(0, max_{m in N_i} (1 + w_m.x_i - w_{p_i}.x_i))      (P)

(``N_i`` = the non-candidates of example ``i``, ``c`` the per-example cost). This is the
multiclass SVM of Crammer & Singer (2001) in which example ``i`` only competes against the
labels ``N_i`` (with margin 1) and the other candidates ``S_i \\ {p_i}`` do not appear. Its
dual is solved exactly by the sequential dual method of Keerthi, Sundararajan, Chang, Hsieh
& Lin, "A sequential dual method for large scale multi-class linear SVMs" (KDD 2008) --
the algorithm of liblinear's ``Solver_MCSVM_CS`` (scikit-learn's
``LinearSVC(multi_class="crammer_singer")``) -- restricted to the allowed labels
``A_i = {p_i} u N_i``:

    min_alpha  1/2 sum_m ||sum_i alpha_im x_i||^2 + sum_i sum_{m in A_i} e_im alpha_im
    s.t.       alpha_im <= c [m = p_i],  sum_{m in A_i} alpha_im = 0,  alpha_im = 0 (m not in A_i)

with ``e_im = 1`` for ``m in N_i`` and 0 for ``m = p_i``; ``w_m = sum_i alpha_im x_i``.
One block ``alpha_i`` at a time is minimised in closed form (Crammer & Singer's fixed
point, liblinear's ``solve_sub_problem``); examples are visited in a fresh random order
every epoch; the run stops when the largest KKT violation ``max_m G_m - min_{m: alpha_im <
C_im} G_m`` of an epoch is below ``tol`` (liblinear's criterion, ``G_m = w_m.x_i + e_im``).

The loop is compiled with numba when it is importable (``cache=True``, compiled on first
use); otherwise the same Python function runs uncompiled (identical arithmetic, slow).
"""

from __future__ import annotations

import importlib.util

import numpy as np

from plcore.utils import compiled

__all__ = ["solve_dual", "primal_objective", "USE_JIT"]


def _cd_kernel(X, sqnorm, allowed, pos, cost_c, alpha, W, tol, max_epochs, seed):
    """Sequential dual coordinate descent, in place on ``alpha`` (n, q) and ``W`` (q, d).

    Returns ``(epochs, max_violation_of_last_epoch)``.
    """
    n, d = X.shape
    q = W.shape[0]
    order = np.arange(n)
    idx = np.empty(q, dtype=np.int64)
    G = np.empty(q)
    B = np.empty(q)
    D = np.empty(q)
    state = np.uint64(seed) | np.uint64(1)
    viol_max = np.inf
    epoch = 0
    while epoch < max_epochs:
        # Fisher-Yates shuffle with an xorshift64 stream
        for t in range(n - 1, 0, -1):
            state ^= state << np.uint64(13)
            state ^= state >> np.uint64(7)
            state ^= state << np.uint64(17)
            j = np.int64(state % np.uint64(t + 1))
            tmp = order[t]
            order[t] = order[j]
            order[j] = tmp
        viol_max = 0.0
        for t in range(n):
            i = order[t]
            A = sqnorm[i]
            k = 0
            for m in range(q):
                if allowed[i, m]:
                    idx[k] = m
                    k += 1
            if k <= 1 or A <= 0.0:
                continue
            p = pos[i]
            minG = np.inf
            maxG = -np.inf
            for r in range(k):
                m = idx[r]
                s = 0.0
                for j in range(d):
                    s += W[m, j] * X[i, j]
                g = s if m == p else s + 1.0
                G[r] = g
                upper = cost_c if m == p else 0.0
                if alpha[i, m] < upper and g < minG:
                    minG = g
                if g > maxG:
                    maxG = g
            viol = maxG - minG
            if viol > viol_max:
                viol_max = viol
            if viol <= 1e-12:
                continue
            # closed-form block minimisation (liblinear solve_sub_problem)
            for r in range(k):
                m = idx[r]
                B[r] = G[r] - A * alpha[i, m]
                D[r] = B[r] + A * cost_c if m == p else B[r]
            for r in range(1, k):  # insertion sort, descending
                v = D[r]
                u = r - 1
                while u >= 0 and D[u] < v:
                    D[u + 1] = D[u]
                    u -= 1
                D[u + 1] = v
            beta = D[0] - A * cost_c
            r = 1
            while r < k and beta < r * D[r]:
                beta += D[r]
                r += 1
            beta /= r
            for r in range(k):
                m = idx[r]
                upper = cost_c if m == p else 0.0
                new = (beta - B[r]) / A
                if new > upper:
                    new = upper
                delta = new - alpha[i, m]
                if delta != 0.0:
                    alpha[i, m] = new
                    for j in range(d):
                        W[m, j] += delta * X[i, j]
        epoch += 1
        if viol_max < tol:
            break
    return epoch, viol_max


#: compile the kernel with numba (when importable, :func:`plcore.utils.compiled`); False runs
#: the same code uncompiled
USE_JIT = importlib.util.find_spec("numba") is not None


def _kernel(jit: bool):
    return compiled(_cd_kernel, jit=jit and USE_JIT)


def solve_dual(X, allowed, pos, cost_c, alpha=None, W=None, *, tol=1e-3, max_epochs=1000, seed=0,
               jit=True):
    """Solve (P) by the sequential dual method; warm-starts from ``alpha`` (and its ``W``).

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Features (append a constant column for a regularised intercept).
    allowed : bool ndarray of shape (n, q)
        ``A_i = {p_i} u N_i``; rows with fewer than two allowed labels are skipped.
    pos : int ndarray of shape (n,)
        ``p_i`` (must be allowed).
    cost_c : float
        Per-example cost ``c`` of (P).
    alpha : ndarray of shape (n, q), optional
        Feasible dual start (zero outside ``A_i``), updated in place; ``W`` must equal
        ``alpha.T @ X``.

    Returns
    -------
    alpha, W, epochs, violation
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    n, _ = X.shape
    q = allowed.shape[1]
    allowed = np.ascontiguousarray(allowed, dtype=np.bool_)
    pos = np.ascontiguousarray(pos, dtype=np.int64)
    if alpha is None:
        alpha = np.zeros((n, q))
        W = np.zeros((q, X.shape[1]))
    else:
        alpha = np.ascontiguousarray(alpha, dtype=np.float64)
        W = np.ascontiguousarray(W, dtype=np.float64) if W is not None else alpha.T @ X
    sqnorm = np.einsum("ij,ij->i", X, X)
    epochs, viol = _kernel(jit)(X, sqnorm, allowed, pos, float(cost_c), alpha, W, float(tol),
                                int(max_epochs), int(seed) & 0xFFFFFFFFFFFF)
    return alpha, W, int(epochs), float(viol)


def primal_objective(W, X, allowed, pos, cost_c):
    """Value of (P): ``1/2 ||W||^2 + c * sum_i max(0, max_{m in N_i} 1 + w_m.x_i - w_p.x_i)``."""
    F = X @ W.T
    n = X.shape[0]
    neg = allowed.copy()
    neg[np.arange(n), pos] = False
    has = neg.any(axis=1)
    worst = np.where(neg, F + 1.0, -np.inf).max(axis=1, initial=-np.inf)
    loss = np.where(has, np.maximum(0.0, worst - F[np.arange(n), pos]), 0.0)
    return 0.5 * float(np.sum(W * W)) + cost_c * float(loss.sum())
