"""PL-SVM's alternating solver (private): best-candidate selection and exact convex stages.

The numerics of :class:`plcore_baselines.plsvm.PlSvmLearner` (Nguyen & Caruana, KDD 2008;
see :mod:`plcore_baselines.plsvm` for the objective and the scheme): :func:`fit_plsvm`
alternates the choice of each example's best candidate with a Crammer-Singer dual solve
(:mod:`plcore_baselines._plsvm_dual`).
"""

from __future__ import annotations

import numpy as np

from plcore.utils import uniform_confidences

from plcore_baselines._plsvm_dual import primal_objective, solve_dual

__all__ = ["fit_plsvm"]


def _argmax_candidates(F, S, prev=None):
    """``argmax_{m in S_i} F[i, m]``; on ties keep ``prev[i]`` when it is among the best."""
    masked = np.where(S, F, -np.inf)
    best = masked.argmax(axis=1)
    if prev is not None:
        rows = np.arange(F.shape[0])
        keep = masked[rows, prev] >= masked[rows, best]
        best = np.where(keep, prev, best)
    return best


def fit_plsvm(X1, S, C, *, tol=1e-2, max_iter=50, max_epochs=100, seed=0, jit=True):
    """Alternating PL-SVM on features ``X1`` (intercept column already appended).

    Starts from a ridge regression on the normalised candidate indicators. Returns a dict with ``W`` (q, d1),
    ``p``, ``alpha``, ``n_iter``, ``objective`` and ``converged``.
    """
    n, q = S.shape
    rows = np.arange(n)
    noncand = ~S
    cost_c = C / n
    T = uniform_confidences(S)
    W0 = np.linalg.solve(X1.T @ X1 + np.eye(X1.shape[1]), X1.T @ T).T
    p = _argmax_candidates(X1 @ W0.T, S)
    alpha = W = None
    converged = False
    n_iter = 0
    for n_iter in range(1, max_iter + 1):
        allowed = noncand.copy()
        allowed[rows, p] = True
        alpha, W, _, _ = solve_dual(X1, allowed, p, cost_c, alpha, W, tol=tol, max_epochs=max_epochs,
                                    seed=seed + n_iter, jit=jit)
        new_p = _argmax_candidates(X1 @ W.T, S, prev=p)
        changed = new_p != p
        if not changed.any():
            converged = True
            break
        # the dual block of an example whose p_i changed is no longer feasible: restart it at 0
        W -= alpha[changed].T @ X1[changed]
        alpha[changed] = 0.0
        p = new_p
    allowed = noncand.copy()
    allowed[rows, p] = True
    return {"W": W, "p": p, "alpha": alpha, "n_iter": n_iter, "converged": converged,
            "objective": primal_objective(W, X1, allowed, p, cost_c)}
