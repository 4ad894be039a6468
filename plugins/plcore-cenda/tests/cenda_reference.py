"""A slow, literal, dense CENDA written straight from the paper (Table 1), for tests and benchmarks.

Everything the paper writes is formed explicitly: the m x m label kernel ``L = Y Y^T``
(Eq. 3), the m x m centring matrix ``H`` (step 5), ``X H L H X^T`` and
``mu X X^T + (1 - mu) I`` (Eq. 12, paper's d x m convention ``X``), solved with
``scipy.linalg.eigh(A, B)`` (which normalises ``P^T B P = I``); neighbours from the full
m x m distance matrix. Memory O(m^2), time O(m^2 d + m d^2 + d^3) per iteration. Not part
of the plugin package on purpose.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla
from scipy.spatial.distance import cdist

EIGEN_RTOL = 1e-10  # eigenvalues below this fraction of the largest count as 0 (rounding noise)


def dense_cenda(X, S, *, thr=0.999, mu=0.5, k=8, alpha=1.0, max_iter=50, tol=1e-6,
                n_components=None):
    """Literal CENDA. ``X``: (m, d) rows = examples; ``S``: (m, q) 0/1 candidates.

    Returns ``(P, eigenvalues, Y, history)``; ``history[t]`` is a dict with the
    eigenvalues (all d, decreasing), ``P`` and ``Y`` after iteration ``t + 1``.
    """
    X = np.asarray(X, dtype=np.float64)
    S = np.asarray(S.toarray() if hasattr(S, "toarray") else S).astype(bool)
    m, d = X.shape
    Xp = X.T                                              # paper: X = [x_1, ..., x_m], d x m
    Y = S / S.sum(axis=1, keepdims=True)                  # Eq. (1)
    e = np.ones((m, 1))
    H = np.eye(m) - (e @ e.T) / m                         # step 5
    Bc = mu * (Xp @ Xp.T) + (1.0 - mu) * np.eye(d)        # constraint of Eq. (9)
    history, P_prev = [], None
    for _ in range(max_iter):
        L = Y @ Y.T                                       # Eq. (3), step 4
        A = Xp @ H @ L @ H @ Xp.T                         # Eq. (12), left-hand side
        lam, V = sla.eigh(A, Bc)                          # A p = lambda B p, V^T B V = I
        order = np.argsort(-lam, kind="stable")
        lam, V = lam[order], V[:, order]
        lam = np.where(lam > EIGEN_RTOL * lam[0], lam, 0.0)
        if n_components is None:                          # Eq. (7) on the positive eigenvalues
            pos = lam[lam > 0]
            target = thr * pos.sum()
            dprime = next(i + 1 for i in range(pos.size) if pos[: i + 1].sum() >= target * (1 - 1e-12))
        else:
            dprime = n_components
        P = V[:, :dprime]
        Xproj = (P.T @ Xp).T                              # step 7: x'_i = P^T x_i
        D = cdist(Xproj, Xproj, "sqeuclidean")           # all m x m squared distances
        np.fill_diagonal(D, np.inf)                       # a point is not its own neighbour
        kk = min(k, m - 1)
        N = np.argsort(D, axis=1, kind="stable")[:, :kk]  # steps 8-10
        Bm = np.zeros_like(Y)
        for i in range(m):                                # Eq. (13)
            Bm[i] = alpha * Y[i] + sum(Y[j] for j in N[i])
        Ynew = np.zeros_like(Y)
        for i in range(m):                                # Eq. (14)
            Ynew[i, S[i]] = Bm[i, S[i]] / Bm[i, S[i]].sum()
        Y = Ynew
        history.append({"eigenvalues": lam, "P": P, "Y": Y.copy()})
        if P_prev is not None and P_prev.shape == P.shape:
            if np.sin(np.max(sla.subspace_angles(P, P_prev))) <= tol:
                break
        P_prev = P
    return P, lam, Y, history
