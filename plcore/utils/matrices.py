"""Candidate matrices and the confidences every method starts from: dense conversion,
uniform and leave-one-out vote confidences, row normalisation and deterministic eigenvector
signs (one copy each, shared by the core and the plugins)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["dense_candidates", "uniform_confidences", "vote_confidences", "normalise_rows", "flip_signs"]


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
