"""Ng-Jordan-Weiss spectral clustering of a sparse affinity (PLC's final step)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import eigsh
from sklearn.cluster import KMeans

__all__ = ["njw_embedding", "njw_spectral_clustering", "canonical_labels"]

_DENSE_MAX = 400  # below this size a dense eigendecomposition is faster and more robust


def njw_embedding(W, n_clusters, random_state=None):
    """Rows of the top ``n_clusters`` eigenvectors of ``D^-1/2 W D^-1/2``, unit-normalised.

    ``W`` is a symmetric non-negative (sparse) affinity; ``D`` its degrees. The top
    eigenvectors of the normalised affinity are the bottom ones of the normalised
    Laplacian ``I - D^-1/2 W D^-1/2`` (Ng, Jordan & Weiss 2001).
    """
    W = sp.csr_matrix(W, dtype=np.float64)
    n = W.shape[0]
    deg = np.asarray(W.sum(axis=1)).ravel()
    dinv = 1.0 / np.sqrt(deg + np.finfo(float).eps)
    A = sp.diags(dinv) @ W @ sp.diags(dinv)
    A = 0.5 * (A + A.T)
    k = int(min(n_clusters, n))
    if n <= _DENSE_MAX or k >= n - 1:
        vals, vecs = np.linalg.eigh(A.toarray())
        U = vecs[:, -k:]
    else:
        rng = np.random.RandomState(random_state)
        v0 = rng.uniform(-1, 1, n)
        # shift by I so the wanted end of the spectrum (near 1) is the largest in magnitude
        vals, U = eigsh(A + sp.identity(n), k=k, which="LA", v0=v0, tol=1e-10,
                        maxiter=max(1000, 50 * n))
    norms = np.linalg.norm(U, axis=1, keepdims=True)
    return U / (norms + np.finfo(float).eps)


def njw_spectral_clustering(W, n_clusters, *, n_init=20, max_iter=1000, random_state=None):
    """Cluster labels (n,) by k-means (``n_init`` seeded restarts) on the NJW embedding."""
    U = njw_embedding(W, n_clusters, random_state)
    km = KMeans(n_clusters=int(min(n_clusters, U.shape[0])), n_init=n_init, max_iter=max_iter,
                random_state=random_state)
    return canonical_labels(km.fit_predict(U))


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
