"""PLC's final spectral step: repeated eigenvalues, the kNN floor, the components warning."""

import warnings

import numpy as np
import pytest
import scipy.linalg
import scipy.sparse as sp

from plcore.metrics import clustering_accuracy
from plcore_plc import PlcClusterer
from plcore_plc._spectral import (
    connect_affinity,
    floored_spectral_clustering,
    knn_pattern,
    n_components,
    njw_embedding,
)


def _blocks_graph(n=3000, n_blocks=6, seed=0):
    """Random graphs inside ``n_blocks`` blocks (each held together by a ring), none between."""
    rng = np.random.RandomState(seed)
    y = np.repeat(np.arange(n_blocks), n // n_blocks)
    r, c = rng.randint(0, n, 20000), rng.randint(0, n, 20000)
    m = y[r] == y[c]
    i = np.arange(n)
    nxt = np.where(y[(i + 1) % n] == y, (i + 1) % n, i - (n // n_blocks - 1))
    W = sp.coo_matrix((np.ones(m.sum() + n), (np.r_[r[m], i], np.r_[c[m], nxt])), shape=(n, n)).tocsr()
    return sp.csr_matrix(W + W.T), y


def _same_subspace(U, V):
    """The smallest cosine of the principal angles between the column spaces of U and V."""
    return scipy.linalg.svdvals(np.linalg.qr(U)[0].T @ np.linalg.qr(V)[0]).min()


@pytest.mark.parametrize("k", [6, 7, 9])
def test_lobpcg_finds_repeated_eigenvalues_as_the_dense_solver_does(k):
    """Six components: eigenvalue 1 six times. LOBPCG's top-k space is the dense solver's."""
    W, _ = _blocks_graph()
    assert n_components(W) == 6
    dense = njw_embedding(W, k, 0, solver="dense")
    block = njw_embedding(W, k, 0, solver="lobpcg")
    assert _same_subspace(dense, block) > 1 - 1e-8


def test_knn_pattern_is_the_symmetric_01_knn_graph():
    nbr = np.array([[1, 2], [0, 2], [1, 3], [2, 0]])
    N = knn_pattern(nbr, 4).toarray()
    expected = np.zeros((4, 4))
    for i, row in enumerate(nbr):
        expected[i, row] = expected[row, i] = 1
    np.testing.assert_array_equal(N, expected)


def test_floor_adds_a_fraction_of_the_mean_edge_weight_on_every_knn_edge():
    W = sp.csr_matrix(np.array([[0, 2, 0, 0], [2, 0, 0, 0], [0, 0, 0, 4], [0, 0, 4, 0]], float))
    N = sp.csr_matrix(np.array([[0, 1, 1, 0], [1, 0, 0, 0], [1, 0, 0, 1], [0, 0, 1, 0]], float))
    A = connect_affinity(W, N, 0.1)
    eps = 0.1 * W.sum() / N.nnz
    np.testing.assert_allclose(A.toarray(), W.toarray() + eps * N.toarray())
    assert n_components(W) == 2 and n_components(A) == 1
    assert (connect_affinity(W, N, 0.0) != W).nnz == 0


def _fragmented(seed=0):
    """Three tight classes on a line, kNN-joined; W keeps only edges inside each class, and
    class 0 falls apart into a big piece and a 4-row fragment: 4 components for 3 clusters."""
    rng = np.random.RandomState(seed)
    X = np.r_[rng.normal(0, 0.3, (60, 2)), rng.normal(3, 0.3, (60, 2)), rng.normal(6, 0.3, (60, 2)),
              rng.normal(1.5, 0.05, (4, 2))]
    y = np.r_[np.repeat([0, 1, 2], 60), [0] * 4]
    from plcore_plc._graph import knn

    nbr = knn(X, 8)
    N = knn_pattern(nbr, len(y)).tocoo()
    piece = np.r_[y[:180], [3] * 4]  # the fragment is cut off from its class
    keep = piece[N.row] == piece[N.col]
    W = sp.csr_matrix((np.ones(keep.sum()), (N.row[keep], N.col[keep])), shape=N.shape)
    return W, nbr, y


def test_the_floor_joins_a_fragment_and_the_clusters_are_the_classes():
    W, nbr, y = _fragmented()
    labels, parts_w, parts = floored_spectral_clustering(W, nbr, 3, floor=0.01, random_state=0)
    assert parts_w == 4 and parts == n_components(knn_pattern(nbr, len(y))) <= 3  # every kNN edge floored
    big = np.arange(180)
    assert clustering_accuracy(y[big], labels[big]) == 1.0  # the classes; the 4-row fragment joins one
    _, parts_w, parts = floored_spectral_clustering(W, nbr, 3, floor=0.0, random_state=0)
    assert parts_w == parts == 4  # no floor: eigenvalue 1 four times for three clusters


def test_the_embedding_keeps_one_vector_per_component_of_w(monkeypatch):
    """With c > q components the top c eigenvectors are embedded (k-means still makes q clusters)."""
    import plcore_plc._spectral as spectral

    seen = []
    real = spectral.njw_embedding
    monkeypatch.setattr(spectral, "njw_embedding", lambda W, k, *a, **kw: seen.append(k) or real(W, k, *a, **kw))
    W, nbr, _ = _fragmented()
    labels, _, _ = floored_spectral_clustering(W, nbr, 3, floor=0.01, random_state=0)
    assert seen == [4] and len(np.unique(labels)) == 3


def test_plc_warns_when_the_affinity_stays_fragmented():
    """Four far-apart blobs, two clusters asked: no kNN edge joins them, the floor cannot help."""
    rng = np.random.RandomState(0)
    X = np.repeat(np.array([[0, 0], [50, 0], [0, 50], [50, 50]], float), 25, axis=0) + rng.normal(0, 1, (100, 2))
    S = np.ones((100, 2), bool)
    with pytest.warns(UserWarning, match="4 connected components for 2 clusters"):
        plc = PlcClusterer(k=5, outer_iter=1, random_state=0).fit(X, S)
    assert plc.n_graph_components_ == 4
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        PlcClusterer(k=5, outer_iter=1, n_clusters=4, random_state=0).fit(X, np.ones((100, 4), bool))


def test_components_ignore_explicitly_stored_zeros():
    W = sp.csr_matrix((np.array([1.0, 0.0, 1.0, 0.0]), (np.array([0, 1, 1, 2]), np.array([1, 2, 0, 1]))), shape=(3, 3))
    assert W.nnz == 4 and n_components(W) == 2  # the stored 0 between 1 and 2 is no edge
