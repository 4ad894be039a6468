"""Numerical kernels shared by the core and the method plugins (one copy of each).

A plugin imports these instead of keeping its own: candidate-matrix conversion,
confidence initialisation, leave-one-out vote confidences, row normalisation,
deterministic eigenvector signs, the block-diagonal QP pattern and OSQP settings.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import ConvergenceWarning

__all__ = ["dense_candidates", "uniform_confidences", "vote_confidences", "normalise_rows", "compiled",
           "flip_signs", "upper_block_pattern", "osqp_settings", "osqp_solution"]


def dense_candidates(S) -> np.ndarray:
    """The candidate matrix as a dense boolean ``(n, q)`` ndarray (CSR or dense input)."""
    if sp.issparse(S):
        return S.toarray().astype(bool)
    return np.asarray(S, dtype=bool)


def uniform_confidences(S) -> np.ndarray:
    """``Y[i, j] = 1 / |S_i|`` on the candidates of row ``i``, 0 elsewhere (float64).

    The usual initial confidences of disambiguation methods (e.g. CENDA Eq. (1)).
    """
    S = dense_candidates(S)
    return S / S.sum(axis=1, keepdims=True, dtype=np.float64)


def vote_confidences(votes, S) -> np.ndarray:
    """Votes restricted to each row's candidates and normalised to sum to 1.

    ``votes`` (n, q) are, e.g., the leave-one-out neighbour votes of the training rows;
    a row with no positive vote on its own candidates falls back to uniform over them.
    """
    S = dense_candidates(S)
    conf = np.asarray(votes, dtype=np.float64) * S
    empty = conf.sum(axis=1) <= 0
    conf[empty] = S[empty]
    return conf / conf.sum(axis=1, keepdims=True)


def normalise_rows(X) -> np.ndarray:
    """Rows scaled to unit L2 norm (zero rows stay zero), as MATLAB's ``normr``."""
    X = np.asarray(X, dtype=np.float64)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    return np.divide(X, norms, out=np.zeros_like(X), where=norms > 0)


def flip_signs(P) -> np.ndarray:
    """Make the largest-magnitude entry of every column positive (deterministic eigenvector signs)."""
    P = np.asarray(P)
    if P.size == 0:
        return P
    idx = np.argmax(np.abs(P), axis=0)
    signs = np.sign(P[idx, np.arange(P.shape[1])])
    signs[signs == 0] = 1.0
    return P * signs


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


_COMPILED: dict = {}


def compiled(fn, *, jit: bool = True):
    """``fn`` compiled by ``numba.njit`` (nopython, ``nogil``; cached on disk where the package
    directory is writable), or ``fn`` itself when ``jit`` is false or numba cannot be imported.
    Numba's disk cache does not notice changes to helpers that ``fn`` calls from another module:
    keep a kernel and its ``register_jitable`` helpers in one module.

    The plain function is the reference: it runs the same arithmetic, slowly. Dispatchers are
    built once per process and function (compilation itself happens on the first call).
    """
    if not jit:
        return fn
    if fn not in _COMPILED:
        try:
            import numba
        except ImportError:  # pragma: no cover - numba is a dependency of plcore
            _COMPILED[fn] = fn
        else:
            try:
                _COMPILED[fn] = numba.njit(cache=True, nogil=True)(fn)
            except RuntimeError:  # no writable cache location: compile per process
                _COMPILED[fn] = numba.njit(cache=False, nogil=True)(fn)
    return _COMPILED[fn]
