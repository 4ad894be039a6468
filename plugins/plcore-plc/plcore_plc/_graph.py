"""Neighbourhoods, Gram matrices and the matrix T of PLC (paper Sections 3.2, 3.3, 3.6).

Convention: ``nbr[j]`` holds the k nearest neighbours of sample j, and the weight
matrix is stored as a CSR matrix ``Wc`` whose ROW j holds sample j's k weights. The
paper's W (Eq. (1): column j holds them, ``W' 1 = 1``) is ``Wc.T``; after the
symmetrisation ``(W + W')/2`` both conventions agree.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from plcore.neighbors import NeighborIndex

__all__ = ["knn", "weights_matrix", "symmetrise", "gram_blocks", "neighbour_sqdist", "t_matrix"]


def knn(X, k):
    """Indices (n, k) of each row's k nearest other rows (Euclidean), nearest first."""
    return NeighborIndex(X).kneighbors(None, k, return_distance=False)


def weights_matrix(w, nbr):
    """CSR ``Wc`` with ``Wc[j, nbr[j, s]] = w[j, s]`` (row j = sample j's weights)."""
    n, k = nbr.shape
    return sp.csr_matrix((w.ravel(), nbr.ravel(), np.arange(0, n * k + 1, k)), shape=(n, n))


def symmetrise(Wc):
    """``(W + W')/2`` as CSR."""
    return sp.csr_matrix(0.5 * (Wc + Wc.T))


def gram_blocks(Z, nbr):
    """Gram matrices ``O_j O_j'`` of Eq. (11), ``O_j = [z_j - z_{N_j(1)}, ...]`` (n, k, k)."""
    O = Z[:, None, :] - Z[nbr]  # (n, k, dim)
    return np.einsum("jad,jbd->jab", O, O)


def neighbour_sqdist(M, nbr, chunk_elems=4_000_000):
    """``H[j, s] = ||M[nbr[j, s]] - M[j]||^2`` for a dense (n, n) matrix, row-chunked.

    With symmetric M (PLC keeps S and D symmetric) rows equal columns, so this is the
    paper's ``||D_{., N_j(s)} - D_{., j}||^2`` (Eq. (11), H and K). O(n^2 k) time,
    O(chunk) extra memory.
    """
    n, k = nbr.shape
    out = np.empty((n, k))
    sq = np.einsum("ij,ij->i", M, M)
    step = max(1, chunk_elems // max(1, n * k))
    for a in range(0, n, step):
        b = min(n, a + step)
        blk = M[a:b]
        # ||u - v||^2 = |u|^2 + |v|^2 - 2 u.v, the dot products from one gathered block
        dots = np.einsum("jn,jsn->js", blk, M[nbr[a:b]])
        out[a:b] = sq[a:b, None] + sq[nbr[a:b]] - 2.0 * dots
    return np.maximum(out, 0.0)


def t_matrix(W):
    """``T`` of Eq. (12): ``sum_ij t_ij f_i'f_j = sum_j ||f_j - sum_i w_ij f_i||^2`` (Eq. (2)).

    ``W`` is in the paper's orientation (column j = the weights of sample j's neighbours).
    Eq. (2)'s residual is ``(I - W') F``, so ``T = (I - W)(I - W')``: symmetric, PSD and
    sparse (rows of about (k + 1)^2 entries on average; more for hubs). The paper writes
    ``T = W W' + I (W' 1 1' W) - 2 W``; with the column sums ``W' 1 = 1`` of Eq. (1) its
    quadratic form is the same (``I (W' 1 1' W)`` read as the diagonal of ``1 1'``, i.e.
    I). After the symmetrisation ``(W + W')/2`` the column sums are no longer 1 and the
    paper's expression no longer equals Eq. (2); we keep Eq. (2) itself, whatever W is
    (tested against the literal sum).
    """
    W = sp.csr_matrix(W, dtype=np.float64)
    A = sp.identity(W.shape[0], format="csr") - W.T
    T = sp.csr_matrix(A.T @ A)
    return sp.csr_matrix(0.5 * (T + T.T))
