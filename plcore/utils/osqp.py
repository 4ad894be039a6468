"""OSQP, stated one way for every method: the block-diagonal QP pattern, the settings and
the reading of a result."""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

__all__ = ["upper_block_pattern", "osqp_settings", "osqp_solution"]


def upper_block_pattern(n_blocks: int, k: int):
    """CSC pattern of the upper triangle of ``blockdiag(B_1, ..., B_n)`` with dense ``k x k`` blocks.

    Returns ``indptr, indices, r, c``: the CSC arrays of the ``(n k, n k)`` matrix and the
    (row, column) order within a block in which the values are stored, so that
    ``data = blocks[:, r, c].ravel()`` fills it (OSQP takes ``P`` as its upper triangle).
    """
    c, r = np.tril_indices(k)  # row-major lower triangle == column-major upper with (r, c) swapped
    indices = ((np.arange(n_blocks) * k)[:, None] + r[None, :]).ravel().astype(np.int64)
    indptr = np.concatenate([[0], np.cumsum(np.tile(np.arange(1, k + 1), n_blocks))]).astype(np.int64)
    return indptr, indices, r, c


def osqp_settings(eps: float, *, max_iter: int, overrides=None) -> dict:
    """OSQP settings, stated one way for every method: tolerance ``eps`` (absolute and
    relative), polishing on (10 refinement steps), ``max_iter``, silent; ``overrides`` (a
    mapping, e.g. a user's ``osqp_options``) win."""
    out = {"eps_abs": float(eps), "eps_rel": float(eps), "polishing": True, "polish_refine_iter": 10,
           "max_iter": int(max_iter), "verbose": False}
    if overrides:
        out.update(dict(overrides))
    return out


def osqp_solution(res, what: str, *, accept=("solved", "solved inaccurate")) -> np.ndarray:
    """``res.x`` of an OSQP result whose status is in ``accept``; else ``RuntimeError``.

    A status other than ``"solved"`` that is accepted warns (:class:`ConvergenceWarning`)
    that the last iterate is used. ``what`` names the problem in both messages. OSQP's
    ``interrupted`` (it caught SIGINT) raises ``KeyboardInterrupt``, so the run ends KILLED.
    """
    status = str(res.info.status)
    if status == "interrupted":  # OSQP caught Ctrl-C (SIGINT) inside the solver: a stop, not a failure
        raise KeyboardInterrupt(f"OSQP interrupted while solving the {what} QP")
    if status not in accept:
        raise RuntimeError(f"OSQP failed on the {what} QP: status {status!r}")
    if status != "solved":
        warnings.warn(f"OSQP stopped with status {status!r} on the {what} QP; using its last iterate",
                      ConvergenceWarning, stacklevel=3)
    return np.asarray(res.x, dtype=np.float64)
