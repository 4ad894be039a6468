"""Many small non-negative least-squares problems (private): IPAL's reconstruction weights.

For every row ``i`` of ``X`` and its ``k`` neighbours ``N_i = R[neighbours[i]]`` (a ``k x d``
matrix) :func:`neighbour_nnls` solves

    ``w_i = argmin_{w >= 0} ||X[i] - N_i^T w||^2``

exactly, with the Lawson-Hanson active-set method (Lawson & Hanson, *Solving Least Squares
Problems*, 1974, ch. 23 -- the algorithm of ``scipy.optimize.nnls`` and MATLAB's
``lsqnonneg``, which the IPAL authors' code calls) run on the Gram form ``G_i = N_i N_i^T``,
``b_i = N_i X[i]`` (the "fast NNLS" of Bro & De Jong, J. Chemometrics 11, 1997). Each
passive-set subproblem is a ``p x p`` Cholesky solve (``p <= k``), so a row costs a few
microseconds; one compiled loop (:func:`plcore.utils.compiled`, numba) forms ``G_i`` and
``b_i`` and solves all rows, with no per-row Python overhead.

Duplicate or (numerically) collinear neighbours -- duplicate rows in the data -- make the
minimiser non-unique. A column enters the passive set only when its gradient exceeds a
rounding-level tolerance, and a column whose Cholesky pivot shows it is (to ~1e-6 in angle)
in the span of the passive columns is refused, so the subproblems stay non-singular; like
Lawson-Hanson in ``scipy.optimize.nnls``, the weight then goes to one of the copies. The
objective equals the NNLS optimum to rounding; the KKT conditions hold to the same level
(tested against ``scipy.optimize.nnls`` in ``tests/test_baselines_ipal_nnls.py``).

This replaces one block-diagonal OSQP problem for all rows (``plcore_baselines._ipal.
batched_nnls``, still available as ``IpalLearner(nnls_solver="osqp")``), which needed
thousands of ADMM iterations on data with duplicate rows.
"""

from __future__ import annotations

import numpy as np

from plcore.utils import compiled

try:
    from numba.extending import register_jitable
except ImportError:  # pragma: no cover - numba is a dependency
    def register_jitable(fn):
        return fn

__all__ = ["neighbour_nnls", "gram_nnls", "USE_JIT"]

#: compile the kernel with numba (when importable); False runs the same code uncompiled
USE_JIT = True

_EPS = np.finfo(np.float64).eps


@register_jitable
def _solve_one(G, b, scale, w, z, g, L, idx, refused, max_iter):
    """Lawson-Hanson on ``min w'Gw - 2 b'w, w >= 0`` for one (k, k) ``G``; writes ``w``.

    ``scale`` bounds ``|b_j|`` (``sqrt(max G_jj) ||x||``) and sets the tolerances. ``z``, ``g``
    (k,), ``L`` (k, k), ``idx`` (k,) int and ``refused`` (k,) bool are work arrays.
    Returns the number of outer iterations.
    """
    k = b.shape[0]
    for j in range(k):
        w[j] = 0.0
        g[j] = b[j]
        refused[j] = False
    tol = 10.0 * k * _EPS * scale                 # gradient tolerance (rounding level of b - Gw)
    p = 0                                         # passive set: idx[:p], in insertion order
    it = 0
    while it < max_iter:
        # the most violated column outside the passive set
        jmax = -1
        gmax = tol
        for j in range(k):
            if w[j] == 0.0 and not refused[j] and g[j] > gmax:
                inset = False
                for m in range(p):
                    if idx[m] == j:
                        inset = True
                if not inset:
                    gmax = g[j]
                    jmax = j
        if jmax < 0:
            break
        it += 1
        idx[p] = jmax
        p += 1
        first = True
        while True:
            # Cholesky of G[idx[:p], idx[:p]] and z_P = G_PP^{-1} b_P
            bad = -1
            for r in range(p):
                ir = idx[r]
                for c in range(r + 1):
                    ic = idx[c]
                    s = G[ir, ic]
                    for m in range(c):
                        s -= L[r, m] * L[c, m]
                    if r == c:
                        if s <= 1e-12 * G[ir, ir] or s <= 0.0:
                            bad = r
                            break
                        L[r, r] = np.sqrt(s)
                    else:
                        L[r, c] = s / L[c, c]
                if bad >= 0:
                    break
            if bad >= 0:
                # column idx[bad] lies in the span of the earlier passive columns: refuse it
                jb = idx[bad]
                w[jb] = 0.0
                for m in range(bad, p - 1):
                    idx[m] = idx[m + 1]
                p -= 1
                if first and jb == jmax:
                    refused[jb] = True
                    break
                continue
            for r in range(p):                    # forward: L y = b_P
                s = b[idx[r]]
                for m in range(r):
                    s -= L[r, m] * z[m]
                z[r] = s / L[r, r]
            for r in range(p - 1, -1, -1):        # back: L' z = y
                s = z[r]
                for m in range(r + 1, p):
                    s -= L[m, r] * z[m]
                z[r] = s / L[r, r]
            first = False
            feasible = True
            for r in range(p):
                if z[r] <= 0.0:
                    feasible = False
            if feasible:
                for r in range(p):
                    w[idx[r]] = z[r]
                for m in range(k):                # refusals are only valid for this passive set
                    refused[m] = False
                break
            # step from w towards z until the first passive weight reaches zero
            alpha = 1.0
            rmin = -1
            for r in range(p):
                if z[r] <= 0.0:
                    wr = w[idx[r]]
                    a = wr / (wr - z[r])
                    if a < alpha or rmin < 0:
                        alpha = a
                        rmin = r
            for r in range(p):
                j = idx[r]
                w[j] += alpha * (z[r] - w[j])
            w[idx[rmin]] = 0.0
            q = 0
            for r in range(p):                    # drop the passive columns that reached zero
                j = idx[r]
                if w[j] > 0.0:
                    idx[q] = j
                    q += 1
                else:
                    w[j] = 0.0
            p = q
            if p == 0:
                break
        # gradient (negative half) g = b - G w
        for j in range(k):
            s = b[j]
            for m in range(k):
                if w[m] != 0.0:
                    s -= G[j, m] * w[m]
            g[j] = s
    return it


def _neighbour_kernel(X, R, neighbours, w, G, b, max_iter):
    n, k = neighbours.shape
    d = X.shape[1]
    N = np.empty((k, d))                          # the neighbours of row i, gathered
    z = np.empty(k)
    g = np.empty(k)
    L = np.zeros((k, k))
    idx = np.empty(k, dtype=np.int64)
    refused = np.zeros(k, dtype=np.bool_)
    total = 0
    for i in range(n):
        for s in range(k):
            N[s] = R[neighbours[i, s]]
        xi = X[i]
        G[i] = N @ N.T                            # BLAS: ~2x a compiled scalar loop
        b[i] = N @ xi
        gmax = 0.0
        for s in range(k):
            for u in range(s):
                G[i, u, s] = G[i, s, u]           # exactly symmetric
            if G[i, s, s] > gmax:
                gmax = G[i, s, s]
        scale = np.sqrt(gmax * np.dot(xi, xi))
        total += _solve_one(G[i], b[i], scale, w[i], z, g, L, idx, refused, max_iter)
    return total


def _gram_kernel(G, b, xx, w, max_iter):
    n, k = b.shape
    z = np.empty(k)
    g = np.empty(k)
    L = np.zeros((k, k))
    idx = np.empty(k, dtype=np.int64)
    refused = np.zeros(k, dtype=np.bool_)
    total = 0
    for i in range(n):
        gmax = 0.0
        for s in range(k):
            if G[i, s, s] > gmax:
                gmax = G[i, s, s]
        total += _solve_one(G[i], b[i], np.sqrt(gmax * xx[i]), w[i], z, g, L, idx, refused, max_iter)
    return total


def neighbour_nnls(X, R, neighbours, *, max_iter=None, jit=True):
    """Exact NNLS reconstruction weights of every row of ``X`` from its neighbours in ``R``.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Points to reconstruct.
    R : ndarray of shape (n_ref, d)
        Reference points.
    neighbours : ndarray of int, shape (n, k)
        Indices into ``R`` of each point's neighbours.
    max_iter : int, optional
        Outer active-set iterations per row (default ``3 k``, as ``scipy.optimize.nnls``).
    jit : bool, default=True
        Run the numba-compiled loop (False: the same code in Python, slow; for tests).

    Returns
    -------
    w : ndarray of shape (n, k)
        Non-negative weights (row ``i`` in the order of ``neighbours[i]``).
    G, b : ndarray
        The Gram blocks ``N_i N_i^T`` (n, k, k) and ``N_i x_i`` (n, k), reused by the
        prediction step.
    """
    X = np.ascontiguousarray(X, dtype=np.float64)
    R = np.ascontiguousarray(R, dtype=np.float64)
    neighbours = np.ascontiguousarray(neighbours, dtype=np.int64)
    n, k = neighbours.shape
    w = np.zeros((n, k))
    G = np.empty((n, k, k))
    b = np.empty((n, k))
    if n and k:
        compiled(_neighbour_kernel, jit=jit and USE_JIT)(X, R, neighbours, w, G, b, 3 * k if max_iter is None else int(max_iter))
    return w, G, b


def gram_nnls(G, b, xx, *, max_iter=None, jit=True):
    """``argmin_{w >= 0} w'G_i w - 2 b_i'w`` for stacked Gram blocks ``G`` (n, k, k), ``b`` (n, k).

    ``xx`` (n,) is ``||x_i||^2`` (it only sets the tolerances). Returns ``w`` (n, k).
    """
    G = np.ascontiguousarray(G, dtype=np.float64)
    b = np.ascontiguousarray(b, dtype=np.float64)
    xx = np.ascontiguousarray(xx, dtype=np.float64)
    n, k = b.shape
    w = np.zeros((n, k))
    if n and k:
        compiled(_gram_kernel, jit=jit and USE_JIT)(G, b, xx, w, 3 * k if max_iter is None else int(max_iter))
    return w
