"""Batched OSQP solvers for PLC's quadratic programs (paper Eqs. (1), (11), (12), (13)).

All n per-sample QPs of one step are stacked into ONE sparse block-diagonal OSQP
problem. The sparsity pattern of every step is fixed during a fit (k neighbours per
sample, q labels per sample), so each solver object is set up (and its KKT matrix
factorised symbolically) once and later calls only ``update`` the numbers (``Px``,
``q``) and warm-start from the previous solution. No solver is ever called once per
sample from Python.

OSQP minimises ``0.5 x'Px + q'x`` s.t. ``l <= Ax <= u`` with ``P`` given as its upper
triangle (CSC). A paper objective ``x'Qx + c'x`` therefore uses ``P = 2Q``.
"""

from __future__ import annotations

import numpy as np
import osqp
import scipy.sparse as sp

from plcore.utils import osqp_settings, osqp_solution, upper_block_pattern

__all__ = ["DEFAULT_OSQP", "OSQP_EPS", "OSQP_MAX_ITER", "BatchedSimplexQP", "solve_full_f_qp", "f_row_step"]

#: PLC's OSQP tolerance (absolute and relative): tight, so that solutions match an
#: interior-point reference within ~1e-6 (the tests compare with cvxpy/Clarabel).
OSQP_EPS = 1e-7
#: PLC's OSQP iteration limit.
OSQP_MAX_ITER = 200_000
#: The resulting settings (:func:`plcore.utils.osqp_settings`: polishing, silent);
#: ``settings`` / ``osqp_options`` override single entries.
DEFAULT_OSQP = osqp_settings(OSQP_EPS, max_iter=OSQP_MAX_ITER)


def _settings(overrides=None) -> dict:
    """:data:`DEFAULT_OSQP` updated with ``overrides`` (e.g. ``{"eps_abs": 1e-5}``)."""
    return osqp_settings(OSQP_EPS, max_iter=OSQP_MAX_ITER, overrides=overrides)


def _renormalise(x, upper, n, m, column_major=False):
    """Clip to ``[0, upper]`` and rescale each block to sum 1 (removes the ~eps_abs
    tolerance excursions of a first-order solver; the change is O(eps_abs))."""
    x = np.clip(x, 0.0, upper)
    x = x.reshape(n, m)
    if column_major:  # vec(F) column by column: n = q blocks of m = n_samples
        x = x.T
    s = x.sum(axis=1, keepdims=True)
    return np.ascontiguousarray(np.divide(x, s, out=np.full_like(x, 0.0), where=s > 0))


class BatchedSimplexQP:
    """n independent QPs ``min_x x'Q_j x + c_j'x  s.t. 1'x = 1, 0 <= x <= u_j``, solved at once.

    Each block has ``m`` variables (``m = k`` neighbours for Eqs. (1)/(11) with ``u = 1``;
    ``m = q`` labels for Eq. (13) with ``u = y_j``). ``Q`` is either a dense
    ``(n, m, m)`` array of blocks or a vector ``(n,)`` of scalars (``Q_j = t I``).
    The first :meth:`solve` sets OSQP up; later calls update the numbers and warm-start.

    Parameters
    ----------
    n, m : int
        Number of blocks and variables per block.
    diagonal : bool
        Blocks are ``t_j I`` (Eq. (13)) instead of dense ``m x m`` (Eq. (11)).
    upper : ndarray of shape (n, m), optional
        Upper bounds ``u_j`` (default all ones). Zero entries pin a variable to 0.
    settings : dict, optional
        OSQP settings (see :data:`DEFAULT_OSQP`).
    """

    def __init__(self, n, m, *, diagonal=False, upper=None, settings=None):
        self.n, self.m, self.diagonal = int(n), int(m), bool(diagonal)
        self.settings = _settings(settings)
        nm = self.n * self.m
        self.upper = np.ones(nm) if upper is None else np.asarray(upper, dtype=np.float64).ravel()
        if self.upper.size != nm:
            raise ValueError(f"upper must have {nm} entries, got {self.upper.size}")
        rows = np.repeat(np.arange(self.n), self.m)
        sum_rows = sp.csc_matrix((np.ones(nm), (rows, np.arange(nm))), shape=(self.n, nm))
        self.A = sp.vstack([sum_rows, sp.identity(nm, format="csc")], format="csc")
        self.l = np.concatenate([np.ones(self.n), np.zeros(nm)])
        self.u = np.concatenate([np.ones(self.n), self.upper])
        if self.diagonal:
            self._indptr, self._indices = np.arange(nm + 1), np.arange(nm)
        else:
            self._indptr, self._indices, self._r, self._c = upper_block_pattern(self.n, self.m)
        self._solver = None
        self.n_setups = 0
        self.last_info = None

    def _Px(self, Q):
        if self.diagonal:
            t = np.asarray(Q, dtype=np.float64).reshape(self.n)
            return np.repeat(2.0 * t, self.m)
        Q = np.asarray(Q, dtype=np.float64).reshape(self.n, self.m, self.m)
        Qs = 0.5 * (Q + Q.transpose(0, 2, 1))
        return (2.0 * Qs[:, self._r, self._c]).ravel()

    def solve(self, Q, c, x0=None):
        """Solve all blocks; return ``x`` of shape ``(n, m)`` (row j = block j)."""
        Px = self._Px(Q)
        q = np.asarray(c, dtype=np.float64).reshape(-1)
        if self._solver is None:
            P = sp.csc_matrix((Px, self._indices, self._indptr), shape=(self.n * self.m,) * 2)
            self._solver = osqp.OSQP()
            self._solver.setup(P, q, self.A, self.l, self.u, **self.settings)
            self.n_setups += 1
        else:
            self._solver.update(Px=Px, q=q)
        if x0 is not None:
            self._solver.warm_start(x=np.asarray(x0, dtype=np.float64).reshape(-1))
        res = self._solver.solve(raise_error=False)
        x = osqp_solution(res, "batched simplex")
        self.last_info = res.info
        return _renormalise(x, self.upper, self.n, self.m)


def solve_full_f_qp(T, Y, settings=None, x0=None):
    """Eq. (12): ``min_F sum_ij t_ij f_i'f_j`` s.t. ``F 1 = 1, 0 <= F <= Y``, one OSQP call.

    ``T`` (n x n, sparse) need not be symmetric (its symmetric part is used); the
    variable is ``vec(F)`` column by column, so ``P = 2 kron(I_q, (T + T')/2)``.
    Returns ``F`` (n, q).
    """
    Y = np.asarray(Y, dtype=np.float64)
    n, q = Y.shape
    Ts = sp.csr_matrix(0.5 * (T + T.T))
    P = sp.kron(sp.identity(q, format="csc"), 2.0 * Ts, format="csc")
    P = sp.triu(P, format="csc")
    A = sp.vstack([sp.hstack([sp.identity(n, format="csc")] * q, format="csc"),
                   sp.identity(n * q, format="csc")], format="csc")
    ub = Y.T.ravel()  # column-major vec(F)
    lo = np.concatenate([np.ones(n), np.zeros(n * q)])
    hi = np.concatenate([np.ones(n), ub])
    solver = osqp.OSQP()
    solver.setup(P, np.zeros(n * q), A, lo, hi, **_settings(settings))
    if x0 is not None:
        solver.warm_start(x=np.asarray(x0, dtype=np.float64).T.ravel())
    res = solver.solve(raise_error=False)
    x = osqp_solution(res, "label-disambiguation (Eq. 12)")
    return _renormalise(x, ub, q, n, column_major=True)


def f_row_step(T, F, qp):
    """One batched pass of the row subproblems Eq. (13), then an exact line search.

    Every row solves ``min t_jj f'f + (sum_{i != j} (t_ij + t_ji) f_i)' f`` over
    ``{f : 1'f = 1, 0 <= f <= y_j}`` with the other rows fixed at ``F`` (all n QPs in
    one OSQP call, ``qp``). The step ``F -> F + theta (F_rows - F)`` uses the exact
    minimiser theta in [0, 1] of ``sum_ij t_ij f_i'f_j`` (Eq. (12)) along the
    direction, so the objective never increases (``theta = 1`` is the plain Jacobi
    update; sequential Gauss-Seidel rows would need n solver calls).

    Returns ``(F_new, theta, objective_before, objective_after)``.
    """
    T = sp.csr_matrix(T)
    TF = T @ F
    G = TF + T.T @ F  # gradient of tr(F'TF)
    t = np.maximum(T.diagonal(), 1e-12)
    c = G - 2.0 * t[:, None] * F
    F_rows = qp.solve(t, c, x0=F)
    d = F_rows - F
    before = float(np.vdot(F, TF))
    slope = float(np.vdot(G, d))
    curv = float(np.vdot(d, T @ d))
    if slope >= 0.0:
        theta = 0.0
    elif curv <= 0.0:
        theta = 1.0
    else:
        theta = min(1.0, -slope / (2.0 * curv))
    F_new = F + theta * d
    after = before + theta * slope + theta * theta * curv
    return F_new, theta, before, after
