"""Ng-Jordan-Weiss spectral clustering of a sparse affinity (PLC's final step).

PLC's final W joins only neighbours with the same pseudo-label (Eq. (11)'s ``alpha H + beta K``
is far above the Gram entries between pseudo-label classes), so it often falls into more
connected components than clusters. The top eigenvalue 1 of ``D^-1/2 W D^-1/2`` then has one
eigenvector per component: the top-q eigenspace is not defined, and a Krylov solver returns an
arbitrary part of it. :func:`connect_affinity` adds a small floor on the kNN pattern, which
joins the pieces (as long as the kNN graph itself is connected) while leaving the strong
within-class weights in charge; :func:`njw_embedding` computes the top eigenvectors with a
dense solver up to :data:`DENSE_MAX` rows and with a block method (LOBPCG) above.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import eigsh, lobpcg
from sklearn.cluster import KMeans

__all__ = ["connect_affinity", "n_components", "knn_pattern", "njw_embedding", "njw_spectral_clustering",
           "floored_spectral_clustering", "canonical_labels", "DENSE_MAX"]

#: the largest n whose embedding uses the dense eigensolver by default (``benchmarks/plc.py
#: --eigen``, one thread: 0.4 s at n = 2000, 1.8 s at 3000, growing as n^3; LOBPCG finds the
#: same subspace there in 0.1-0.5 s). Dense below: the reference, immune to any convergence issue.
DENSE_MAX = 3000


def n_components(W) -> int:
    """Connected components of the graph of the non-zero entries of ``W`` (explicit zeros dropped)."""
    W = sp.csr_matrix(W, copy=True)
    W.eliminate_zeros()
    return int(connected_components(W, directed=False)[0])


def knn_pattern(nbr, n) -> sp.csr_matrix:
    """``N``: the symmetric 0/1 pattern of the kNN graph (``N_ij = 1`` if j in kNN(i) or i in kNN(j))."""
    k = nbr.shape[1]
    P = sp.csr_matrix((np.ones(n * k), nbr.ravel(), np.arange(0, n * k + 1, k)), shape=(n, n))
    N = P.maximum(P.T).tocsr()
    N.setdiag(0)
    N.eliminate_zeros()
    return N


def connect_affinity(W, N, floor: float) -> sp.csr_matrix:
    """``W + eps N`` with ``eps = floor * sum(W) / nnz(N)``: every kNN edge gets ``floor`` times
    the mean weight of an edge of the pattern (``floor=0``: W unchanged)."""
    W = sp.csr_matrix(W, dtype=np.float64)
    if floor <= 0 or N.nnz == 0:
        return W
    eps = float(floor) * W.sum() / N.nnz
    return sp.csr_matrix(W + eps * N)


def njw_embedding(W, n_clusters, random_state=None, solver: str = "auto"):
    """Rows of the top ``n_clusters`` eigenvectors of ``D^-1/2 W D^-1/2``, unit-normalised.

    ``W`` is a symmetric non-negative (sparse) affinity; ``D`` its degrees. The top
    eigenvectors of the normalised affinity are the bottom ones of the normalised Laplacian
    ``I - D^-1/2 W D^-1/2`` (Ng, Jordan & Weiss 2001). Eigenvalue 1 has one eigenvector per
    connected component, ``D^1/2 1_C``, so it is repeated whenever W is not connected.
    ``solver``: ``"dense"`` (``scipy.linalg.eigh``, exact for repeated eigenvalues),
    ``"lobpcg"`` (a block method, which finds repeated eigenvalues, block
    ``n_clusters + max(4, n_clusters // 2)``, started from the component vectors and random
    ones; dense below five times the block), ``"auto"`` (dense up to :data:`DENSE_MAX` rows,
    LOBPCG above) or ``"arpack"`` (single-vector Lanczos, ``eigsh``: plcore's spectral step before
    2026-11-25, kept for comparison; it can miss copies of a repeated eigenvalue).
    """
    W = sp.csr_matrix(W, dtype=np.float64)
    n = W.shape[0]
    deg = np.asarray(W.sum(axis=1)).ravel()
    dinv = 1.0 / np.sqrt(deg + np.finfo(float).eps)
    A = sp.diags(dinv) @ W @ sp.diags(dinv)
    A = sp.csr_matrix(0.5 * (A + A.T))
    k = int(min(n_clusters, n))
    block = k + max(4, k // 2)
    rng = np.random.RandomState(random_state)
    if solver == "auto":
        solver = "dense" if n <= DENSE_MAX else "lobpcg"
    if solver == "arpack" and k < n - 1:
        # shift by I so the wanted end of the spectrum (near 1) is the largest in magnitude
        _, U = eigsh(A + sp.identity(n), k=k, which="LA", v0=rng.uniform(-1, 1, n), tol=1e-10,
                     maxiter=max(1000, 50 * n))
    elif solver == "lobpcg" and block < n // 5:
        U = _lobpcg_top(A, deg, k, block, rng)
    else:
        _, U = scipy.linalg.eigh(A.toarray(), subset_by_index=(n - k, n - 1))
    norms = np.linalg.norm(U, axis=1, keepdims=True)
    return U / (norms + np.finfo(float).eps)


def _lobpcg_top(A, deg, k, block, rng, tol=1e-6, maxiter=2000):
    """Top ``k`` eigenvectors of the normalised affinity ``A`` by LOBPCG, the start block holding
    the exact eigenvalue-1 vectors of the largest components (``D^1/2 1_C``)."""
    n = A.shape[0]
    _, comp = connected_components(A, directed=False)
    volume = np.bincount(comp, weights=deg)
    largest = [c for c in np.argsort(volume)[::-1][:block] if volume[c] > 0]
    X0 = rng.standard_normal((n, block))
    for j, c in enumerate(largest):
        X0[:, j] = np.where(comp == c, np.sqrt(deg), 0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # lobpcg's "not reaching the requested tolerance"
        vals, U = lobpcg(A, X0, largest=True, tol=tol, maxiter=maxiter)
    return U[:, np.argsort(vals)[::-1][:k]]


def njw_spectral_clustering(W, n_clusters, *, n_init=20, max_iter=1000, random_state=None, solver="auto",
                            n_vectors=None):
    """Cluster labels (n,) by k-means (``n_init`` seeded restarts) on the NJW embedding of the top
    ``n_vectors`` eigenvectors (default ``n_clusters``)."""
    U = njw_embedding(W, n_vectors or n_clusters, random_state, solver=solver)
    km = KMeans(n_clusters=int(min(n_clusters, U.shape[0])), n_init=n_init, max_iter=max_iter,
                random_state=random_state)
    return canonical_labels(km.fit_predict(U))


def floored_spectral_clustering(W, nbr, n_clusters, *, floor, n_init=20, random_state=None, solver="auto"):
    """PLC's final step: NJW spectral clustering of W, made whole where W falls apart.

    When W has ``c > n_clusters`` connected components, eigenvalue 1 is repeated c times and
    the top-``n_clusters`` eigenspace is not defined. Then the floor (:func:`connect_affinity`)
    joins the pieces along the kNN graph, and the embedding keeps the top c eigenvectors (the
    perturbed component vectors, all of them; at most ``2 n_clusters + 10``, so that a W in
    hundreds of pieces keeps the eigensolver small): k-means then merges pieces by their size and
    their kNN links instead of by which c - n_clusters vectors a solver happened to drop.
    Returns the labels, the components of W and those of the affinity embedded.
    """
    parts_w = parts = n_components(W)
    n_vectors = n_clusters
    if parts > n_clusters and floor > 0:
        W = connect_affinity(W, knn_pattern(nbr, W.shape[0]), floor)
        parts, n_vectors = n_components(W), min(parts_w, 2 * n_clusters + 10)
    labels = njw_spectral_clustering(W, n_clusters, n_init=n_init, random_state=random_state, solver=solver,
                                     n_vectors=n_vectors)
    return labels, parts_w, parts


def canonical_labels(labels):
    """Renumber clusters in order of first appearance (0, 1, ...).

    Makes the output independent of k-means' arbitrary cluster numbering, which can
    change with bitwise-different (e.g. multi-threaded BLAS) eigenvectors of the same
    eigenspace.
    """
    labels = np.asarray(labels)
    _, first = np.unique(labels, return_index=True)
    order = labels[np.sort(first)]
    remap = np.empty(labels.max() + 1, dtype=np.int64)
    remap[order] = np.arange(order.size)
    return remap[labels]
