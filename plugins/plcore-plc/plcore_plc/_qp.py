"""Batched OSQP solver for PLC's weight QPs (paper Eqs. (1), (11)).

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

__all__ = ["DEFAULT_OSQP", "OSQP_EPS", "OSQP_MAX_ITER", "BatchedSimplexQP"]

#: PLC's OSQP tolerance (absolute and relative). With polishing, the W step's objective on
#: MSRCv2 is within 5e-8 (relative) of the eps = 1e-7 solve, 10x faster (the tests compare
#: the solutions with cvxpy/Clarabel at 1e-5).
OSQP_EPS = 1e-5
#: PLC's OSQP iteration limit.
OSQP_MAX_ITER = 200_000
#: The resulting settings (:func:`plcore.utils.osqp_settings`: polishing, silent);
#: ``settings`` / ``osqp_options`` override single entries.
DEFAULT_OSQP = osqp_settings(OSQP_EPS, max_iter=OSQP_MAX_ITER)


def _settings(overrides=None) -> dict:
    """:data:`DEFAULT_OSQP` updated with ``overrides`` (e.g. ``{"eps_abs": 1e-5}``)."""
    return osqp_settings(OSQP_EPS, max_iter=OSQP_MAX_ITER, overrides=overrides)


def _renormalise(x, upper, n, m):
    """Clip to ``[0, upper]`` and rescale each block to sum 1 (removes the ~eps_abs
    tolerance excursions of a first-order solver; the change is O(eps_abs))."""
    x = np.clip(x, 0.0, upper)
    x = x.reshape(n, m)
    s = x.sum(axis=1, keepdims=True)
    return np.ascontiguousarray(np.divide(x, s, out=np.full_like(x, 0.0), where=s > 0))


class BatchedSimplexQP:
    """n independent QPs ``min_x x'Q_j x + c_j'x  s.t. 1'x = 1, 0 <= x <= u_j``, solved at once.

    Each block has ``m = k`` variables (Eqs. (1)/(11), ``u = 1``); ``Q`` is a dense
    ``(n, m, m)`` array of blocks. (F's row problems, Eq. (13), have closed-form
    solutions: :mod:`plcore_plc._fstep`.) The first :meth:`solve` sets OSQP up; later calls update the numbers and warm-start.

    Parameters
    ----------
    n, m : int
        Number of blocks and variables per block.
    upper : ndarray of shape (n, m), optional
        Upper bounds ``u_j`` (default all ones). Zero entries pin a variable to 0.
    settings : dict, optional
        OSQP settings (see :data:`DEFAULT_OSQP`).
    """

    def __init__(self, n, m, *, upper=None, settings=None):
        self.n, self.m = int(n), int(m)
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
        self._indptr, self._indices, self._r, self._c = upper_block_pattern(self.n, self.m)
        self._solver = None
        self.n_setups = 0
        self.last_info = None

    def _Px(self, Q):
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
