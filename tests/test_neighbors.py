"""plcore.neighbors: exact kNN equal to scikit-learn's brute force, on every path."""

import numpy as np
import pytest
from sklearn.neighbors import NearestNeighbors

from plcore.neighbors import NeighborIndex, choose_algorithm, kneighbors, staged_search


def _data(n=300, d=5, seed=0, duplicates=False):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, d))
    if duplicates:
        X[rng.randint(n, size=n // 5)] = X[rng.randint(n, size=n // 5)]
    return X


def _same_up_to_ties(dist, ind, ref_dist, ref_ind):
    """Equal distances; equal index sets except among neighbours tied at the k-th distance."""
    np.testing.assert_allclose(dist, ref_dist, rtol=1e-7, atol=1e-6)   # brute: GEMM rounding
    for r in range(ind.shape[0]):
        kth = ref_dist[r, -1]
        strict = ref_dist[r] < kth - 1e-6
        assert set(ref_ind[r, strict]) <= set(ind[r]), r
        assert set(ind[r, dist[r] < kth - 1e-6]) == set(ref_ind[r, strict]), r


@pytest.mark.parametrize("algorithm", ["auto", "brute", "kd_tree", "ball_tree"])
@pytest.mark.parametrize("duplicates", [False, True])
def test_queries_equal_sklearn_brute(algorithm, duplicates):
    X = _data(duplicates=duplicates)
    Q = np.vstack([_data(40, seed=1), X[:10]])          # includes exact copies of training points
    dist, ind = NeighborIndex(X, algorithm=algorithm).kneighbors(Q, 7)
    ref_d, ref_i = NearestNeighbors(n_neighbors=7, algorithm="brute").fit(X).kneighbors(Q)
    _same_up_to_ties(dist, ind, ref_d, ref_i)
    assert np.all(np.diff(dist, axis=1) >= 0)


@pytest.mark.parametrize("algorithm", ["brute", "kd_tree", "ball_tree"])
@pytest.mark.parametrize("duplicates", [False, True])
def test_self_query_excludes_self(algorithm, duplicates):
    X = _data(duplicates=duplicates)
    dist, ind = NeighborIndex(X, algorithm=algorithm).kneighbors(None, 6)
    assert not np.any(ind == np.arange(X.shape[0])[:, None])
    ref_d, ref_i = NearestNeighbors(n_neighbors=6, algorithm="brute").fit(X).kneighbors(None)
    _same_up_to_ties(dist, ind, ref_d, ref_i)
    if duplicates:   # a duplicate of a point is another point: found at distance 0
        assert np.any(dist[:, 0] == 0)


def test_ties_ordered_by_index():
    X = np.array([[0.0], [1.0], [-1.0], [1.0], [2.0]])
    dist, ind = NeighborIndex(X, algorithm="brute").kneighbors(np.array([[0.0]]), 4)
    assert ind.tolist() == [[0, 1, 2, 3]]
    assert dist.tolist() == [[0.0, 1.0, 1.0, 1.0]]


def test_other_metric_delegated():
    X = _data(100, 4)
    dist, ind = kneighbors(X, X[:5], 4, metric="manhattan")
    ref_d, ref_i = NearestNeighbors(n_neighbors=4, metric="manhattan").fit(X).kneighbors(X[:5])
    _same_up_to_ties(dist, ind, ref_d, ref_i)
    assert choose_algorithm(10**6, 3, metric="cosine") == "auto"


def test_chunk_boundaries_many_queries():
    """scikit-learn chunks the queries; results must not depend on where chunks end."""
    X = _data(2000, 12, seed=3)
    Q = _data(3001, 12, seed=4)
    _, ind = NeighborIndex(X, algorithm="brute").kneighbors(Q, 5)
    for s in (slice(0, 1), slice(1000, 1025), slice(2990, 3001)):
        _, part = NeighborIndex(X, algorithm="brute").kneighbors(Q[s], 5)
        np.testing.assert_array_equal(part, ind[s])


def test_rule():
    assert choose_algorithm(1000, 2) == "kd_tree"
    assert choose_algorithm(1000, 8) == "brute"
    assert choose_algorithm(50000, 8) == "kd_tree"
    assert choose_algorithm(50000, 15) == "brute"      # scikit-learn would pick a KD-tree
    assert NeighborIndex(_data(100, 20)).algorithm_ == "brute"


def test_bad_arguments():
    X = _data(10, 2)
    with pytest.raises(ValueError, match="n_neighbors"):
        NeighborIndex(X).kneighbors(None, 10)
    with pytest.raises(TypeError):
        NeighborIndex(X).kneighbors(X)
    with pytest.raises(ValueError, match="algorithm"):
        NeighborIndex(X, algorithm="nope")
    assert NeighborIndex(X).kneighbors(X, 0, return_distance=False).shape == (10, 0)


@pytest.mark.parametrize("self_query", [False, True])
def test_staged_search_equals_full_search(self_query):
    X = _data(500, 6, seed=5)
    Q = None if self_query else _data(200, 6, seed=6)
    index = NeighborIndex(X)
    full = index.kneighbors(Q, 40, return_distance=False)
    rng = np.random.RandomState(0)
    need = rng.randint(1, 41, size=full.shape[0])       # neighbours each query "needs"

    def decide(rows, dist, ind, final):
        enough = need[rows] <= ind.shape[1]
        first = np.where(np.arange(ind.shape[1])[None, :] < need[rows, None], ind, -1)
        out = np.full((rows.size, 40), -1)
        out[:, :ind.shape[1]] = first
        return (out,), enough | final

    (got,), k_searched = staged_search(index, Q, 40, decide, k_start=4)
    expect = np.where(np.arange(40)[None, :] < need[:, None], full, -1)
    np.testing.assert_array_equal(got, expect)
    assert k_searched.min() == 4 and k_searched.max() == 40


# ----------------------------------------------------------------------------- faiss backends
def _equal_to_float64_up_to_ties(X, Q, D1, D2, I2, tol=1e-6):
    """The returned points are at the reference distances (so they are *a* correct answer:
    only which of several equidistant points fills the k-th place may differ)."""
    Q = X if Q is None else Q
    assert np.allclose(D1, D2, atol=tol), np.abs(D1 - D2).max()
    true = np.sqrt(((Q[:, None, :] - X[I2]) ** 2).sum(-1))
    assert np.allclose(true, D1, atol=tol)


@pytest.mark.parametrize("self_query", [False, True])
@pytest.mark.parametrize("n, d, k", [(300, 3, 5), (2000, 20, 12), (1500, 80, 7)])
def test_faiss_brute_equals_float64_brute_force(n, d, k, self_query):
    rng = np.random.default_rng(n + d)
    X = rng.normal(size=(n, d)) * 3
    X[:40] = X[40:80]                                   # duplicates: ties at distance 0
    Q = None if self_query else rng.normal(size=(200, d)) * 3
    D1, _ = NeighborIndex(X, algorithm="brute").kneighbors(Q, k)
    D2, I2 = NeighborIndex(X, algorithm="faiss_brute").kneighbors(Q, k)
    _equal_to_float64_up_to_ties(X, Q, D1, D2, I2)
    if self_query:
        assert not (I2 == np.arange(n)[:, None]).any()


def test_faiss_brute_falls_back_where_float32_cannot_decide():
    """More exact duplicates than candidates: the certificate fails and float64 brute force decides."""
    from plcore._faiss_search import EXTRA, FaissSearch

    rng = np.random.default_rng(0)
    X = np.vstack([np.repeat(rng.normal(size=(1, 4)), 3 * EXTRA, axis=0), rng.normal(size=(100, 4)) + 5])
    _, _, uncertain = FaissSearch(X).kneighbors(X[:3], 4)
    assert uncertain.all()
    D1, I1 = NeighborIndex(X, algorithm="brute").kneighbors(X[:3], 4)
    D2, I2 = NeighborIndex(X, algorithm="faiss_brute").kneighbors(X[:3], 4)
    assert np.allclose(D1, D2, atol=1e-7) and np.allclose(D2, 0)


def test_hnsw_is_approximate_but_close_on_separated_data():
    rng = np.random.default_rng(1)
    X = np.repeat(rng.normal(size=(20, 10)) * 10, 100, axis=0) + rng.normal(size=(2000, 10))
    _, I1 = NeighborIndex(X, algorithm="brute").kneighbors(None, 10)
    D2, I2 = NeighborIndex(X, algorithm="hnsw").kneighbors(None, 10)
    recall = np.mean([len(set(a) & set(b)) / 10 for a, b in zip(I1, I2)])
    assert recall > 0.95
    assert (np.diff(D2, axis=1) >= 0).all() and not (I2 == np.arange(2000)[:, None]).any()


def test_rule_takes_faiss_brute_only_for_wide_large_data():
    assert choose_algorithm(50000, 100) == "faiss_brute"
    assert choose_algorithm(50000, 30) == "brute" and choose_algorithm(5000, 100) == "brute"
    with pytest.raises(ValueError, match="Euclidean metric only"):
        NeighborIndex(np.zeros((5, 2)), metric="manhattan", algorithm="hnsw")


def test_faiss_rerank_is_independent_of_its_query_chunks(monkeypatch):
    import plcore._faiss_search as fs

    rng = np.random.default_rng(3)
    X, Q = rng.normal(size=(500, 12)), rng.normal(size=(130, 12))
    whole = NeighborIndex(X, algorithm="faiss_brute").kneighbors(Q, 6)
    monkeypatch.setattr(fs, "_CHUNK", 7)
    chunked = NeighborIndex(X, algorithm="faiss_brute").kneighbors(Q, 6)
    assert np.array_equal(whole[1], chunked[1]) and np.array_equal(whole[0], chunked[0])
