"""plcore.neighbors: exact kNN equal to scikit-learn's brute force, on every path."""

import contextlib
import threading

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


@pytest.mark.parametrize("algorithm", ["auto", "brute", "brute32", "kd_tree", "ball_tree"])
@pytest.mark.parametrize("duplicates", [False, True])
def test_queries_equal_sklearn_brute(algorithm, duplicates):
    X = _data(duplicates=duplicates)
    Q = np.vstack([_data(40, seed=1), X[:10]])          # includes exact copies of training points
    dist, ind = NeighborIndex(X, algorithm=algorithm).kneighbors(Q, 7)
    ref_d, ref_i = NearestNeighbors(n_neighbors=7, algorithm="brute").fit(X).kneighbors(Q)
    _same_up_to_ties(dist, ind, ref_d, ref_i)
    assert np.all(np.diff(dist, axis=1) >= 0)


@pytest.mark.parametrize("algorithm", ["brute", "brute32", "kd_tree", "ball_tree"])
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
    assert choose_algorithm(2000, 12) == "brute"          # numba's load time not worth it yet
    assert choose_algorithm(5000, 2) == choose_algorithm(100000, 3) == "kd_tree"
    assert choose_algorithm(5000, 4) == choose_algorithm(30000, 5) == choose_algorithm(50000, 8) == "brute32"
    assert choose_algorithm(50000, 15) == "brute32"    # scikit-learn would pick a KD-tree
    assert NeighborIndex(_data(100, 20)).algorithm_ == "brute"
    assert NeighborIndex(_data(5000, 20)).algorithm_ == "brute32"


def test_rule_without_numba(monkeypatch):
    """Without numba the rule keeps scikit-learn's brute force and the KD-tree."""
    import plcore.neighbors as nb

    monkeypatch.setattr(nb, "_has_numba", lambda: False)
    assert nb.choose_algorithm(50000, 15) == "brute" and nb.choose_algorithm(50000, 8) == "kd_tree"


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


@pytest.mark.parametrize("algorithm", ["faiss_brute", "brute32"])
def test_float32_paths_fall_back_where_float32_cannot_decide(algorithm):
    """More exact duplicates than candidates: the certificate fails and float64 brute force decides."""
    from plcore.neighbors._faiss import FaissSearch
    from plcore.neighbors._float32 import EXTRA, Float32Search

    search = {"faiss_brute": FaissSearch, "brute32": Float32Search}[algorithm]
    rng = np.random.default_rng(0)
    X = np.vstack([np.repeat(rng.normal(size=(1, 4)), 3 * EXTRA, axis=0), rng.normal(size=(100, 4)) + 5])
    _, _, uncertain = search(X).kneighbors(X[:3], 4)
    assert uncertain.all()
    _, _, uncertain = search(X).kneighbors(X[-3:], 4)             # well-separated points: certified
    assert not uncertain.any()
    D1, I1 = NeighborIndex(X, algorithm="brute").kneighbors(X[:3], 4)
    D2, I2 = NeighborIndex(X, algorithm=algorithm).kneighbors(X[:3], 4)
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
    assert choose_algorithm(50000, 30) == "brute32" and choose_algorithm(5000, 100) == "brute32"
    with pytest.raises(ValueError, match="Euclidean metric only"):
        NeighborIndex(np.zeros((5, 2)), metric="manhattan", algorithm="hnsw")


# ----------------------------------------------------------------------------- brute32
@pytest.mark.parametrize("threads", [2, 3])
def test_brute32_tiles_on_several_threads_give_the_one_thread_answer(threads):
    """The query tiles dealt to workers (each tile's product on one BLAS thread, its selection
    without the GIL): the float32 candidates are those of a one-thread BLAS to the bit, and the
    certified neighbours those of one worker on any BLAS."""
    from plcore.neighbors._float32 import Float32Search, _one_blas_thread

    rng = np.random.default_rng(7)
    X = rng.normal(size=(3000, 12))
    Q = rng.normal(size=(1100, 12))                     # 13 tiles of 87 queries, the last short
    one = Float32Search(X, n_threads=1)
    many = Float32Search(X, n_threads=threads)
    with _one_blas_thread():    # as the workers' BLAS is (where another thread controls it, neither is held)
        alone = one.candidates(Q, 20)
    for a, b in zip(alone, many.candidates(Q, 20)):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(one.kneighbors(Q, 7), many.kneighbors(Q, 7)):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(one.kneighbors(X, 7, self_query=True), many.kneighbors(X, 7, self_query=True)):
        np.testing.assert_array_equal(a, b)


def test_brute32_selects_on_as_many_workers_as_the_blas_has_threads(monkeypatch):
    from threadpoolctl import threadpool_info, threadpool_limits

    import plcore.neighbors._float32 as fs

    with threadpool_limits(1, user_api="blas"):
        assert fs.blas_threads() == 1
    # read, never set: what threadpoolctl reads (a process may have started its BLAS on one thread)
    assert fs.blas_threads() == max(1, min(i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"))
    seen, real = [], fs.compiled

    def spying(fn):                                     # the selection kernel, noting its thread
        kernel = real(fn)
        if fn is not fs._select_smallest:
            return kernel
        return lambda *args: (seen.append(threading.get_ident()), kernel(*args))[1]

    @contextlib.contextmanager
    def held_to_one_thread():                           # threadpoolctl's part is not what is tested here
        yield True

    monkeypatch.setattr(fs, "compiled", spying)
    monkeypatch.setattr(fs, "blas_threads", lambda: 3)
    monkeypatch.setattr(fs, "_one_blas_thread", held_to_one_thread)
    rng = np.random.default_rng(8)
    X = rng.normal(size=(2100, 5))
    fs.Float32Search(X).candidates(X, 10)               # 2100 x 2100 pairs: over the threshold
    assert seen and threading.get_ident() not in seen  # on the pool's threads
    seen.clear()
    fs.Float32Search(X).candidates(X[:100], 10)         # 100 x 2100: on the calling thread
    assert set(seen) == {threading.get_ident()}
    seen.clear()
    with fs._PARALLEL:                                  # another search holds the workers
        fs.Float32Search(X).candidates(X, 10)
    assert set(seen) == {threading.get_ident()}
    seen.clear()

    @contextlib.contextmanager
    def cannot_hold_to_one_thread():                    # MKL, an OpenMP build, or another controlling thread
        yield False

    monkeypatch.setattr(fs, "_one_blas_thread", cannot_hold_to_one_thread)
    fs.Float32Search(X).candidates(X, 10)
    assert set(seen) == {threading.get_ident()}


@pytest.mark.parametrize("self_query", [False, True])
@pytest.mark.parametrize("n, d, k, offset", [(300, 3, 5, 0.0), (2000, 20, 12, 0.0), (1500, 80, 7, 0.0),
                                             (800, 6, 9, 1e4), (40, 4, 30, 0.0)])
def test_brute32_equals_float64_brute_force(n, d, k, offset, self_query):
    """Far from the origin (offset 1e4) float32 keeps ~3 digits of a squared distance without
    the centring; k + EXTRA >= n (n = 40) needs no certificate."""
    rng = np.random.default_rng(n + d)
    X = rng.normal(size=(n, d)) * 3 + offset
    X[:10] = X[10:20]                                   # duplicates: ties at distance 0
    Q = None if self_query else rng.normal(size=(200, d)) * 3 + offset
    D1, _ = NeighborIndex(X, algorithm="brute").kneighbors(Q, k)
    D2, I2 = NeighborIndex(X, algorithm="brute32").kneighbors(Q, k)
    _equal_to_float64_up_to_ties(X, Q, D1, D2, I2, tol=1e-6 * max(1.0, offset))
    assert (np.diff(D2, axis=1) >= 0).all()
    if self_query:
        assert not (I2 == np.arange(n)[:, None]).any()


def test_brute32_on_tiny_scale_data():
    """Coordinates ~1e-22: the float32 values are subnormal (the certificate sends the rows
    float32 cannot decide to the float64 search); the neighbours are still exact."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(60, 2)) * 1e-22
    D1, _ = NeighborIndex(X, algorithm="brute").kneighbors(None, 3)
    D2, I2 = NeighborIndex(X, algorithm="brute32").kneighbors(None, 3)
    assert ((I2 >= 0) & (I2 < 60)).all()
    np.testing.assert_allclose(D2, D1, rtol=1e-6, atol=0)


def test_brute32_is_independent_of_its_tiles(monkeypatch):
    import plcore.neighbors._float32 as fs

    rng = np.random.default_rng(3)
    X, Q = rng.normal(size=(500, 12)), rng.normal(size=(130, 12))
    whole = NeighborIndex(X, algorithm="brute32").kneighbors(Q, 6)
    monkeypatch.setattr(fs, "_TILE_CELLS", 7 * 500)               # 8-row tiles (the minimum)
    tiled = NeighborIndex(X, algorithm="brute32").kneighbors(Q, 6)
    assert np.array_equal(whole[1], tiled[1]) and np.array_equal(whole[0], tiled[0])


@pytest.mark.parametrize("jit", [True, False])
def test_select_smallest_equals_a_full_sort(jit):
    """The blocked selection kernel (compiled, and as plain Python: the same code) against a
    full sort: the kk smallest of each row by (value, column) with -0.0 before +0.0, on tiles
    padded with ``+inf`` as ``Float32Search`` pads them; with many ties (both the ranking and
    the insertion path), negative values, signed zeros, subnormals and infinities (the
    bisected bound and its quickselect fallback)."""
    from plcore.neighbors._float32 import _select_smallest, block_shape
    from plcore.utils import compiled

    rng = np.random.default_rng(5)
    select = compiled(_select_smallest, jit=jit)
    tiny = np.finfo(np.float32).smallest_subnormal
    sizes = ((1, 1), (3, 2), (7, 7), (50, 3), (301, 17), (1000, 40), (1000, 3), (777, 5))
    for n, kk in sizes if jit else sizes[:6]:
        levels, width = block_shape(n, kk)
        assert width >= n and width % (1 << levels) == 0 and width >> levels >= kk
        V = rng.integers(-20, 20, size=(8, n)).astype(np.float32)  # many ties
        V[0] = rng.normal(size=n)
        V[1, ::3] = -0.0
        V[3, ::2] = np.inf                                # overflowed values: the exact bound's path
        V[4, n // 2] = -np.inf
        V[5] = rng.integers(-3, 3, size=n) * tiny         # subnormals: a bisection midpoint of -0.0
        V[6] = np.float32(1.0)                            # all equal
        V[7, :3] = (-2 * tiny, 0.0, tiny)[:min(3, n)]
        T = np.full((8, width), np.inf, dtype=np.float32)
        T[:, :n] = V
        ind = np.empty((8, kk), dtype=np.int64)
        val = np.empty((8, kk), dtype=np.float32)
        select(T, T.view(np.int32), n, levels, kk, ind, val)
        bits = V.view(np.int32)
        keys = bits ^ ((bits >> 31) & 0x7FFFFFFF)          # float order, -0.0 below +0.0
        order = np.lexsort((np.broadcast_to(np.arange(n), V.shape), keys), axis=1)[:, :kk]
        np.testing.assert_array_equal(ind, order)
        np.testing.assert_array_equal(val, np.take_along_axis(V, order, 1))
        np.testing.assert_array_equal(val, np.sort(V, axis=1)[:, :kk])


def test_kth_smallest_equals_sort():
    from plcore.neighbors._float32 import _kth_smallest
    from plcore.utils import compiled

    rng = np.random.default_rng(6)
    kth = compiled(_kth_smallest)
    for i in range(400):
        n = int(rng.integers(1, 60))
        a = (rng.integers(0, 6, size=n).astype(np.float32), rng.normal(size=n),
             rng.integers(-2**31, 2**31 - 1, size=n, dtype=np.int32), rng.integers(-2, 2, size=n, dtype=np.int32))[i % 4]
        j = int(rng.integers(0, n))
        assert kth(a.copy(), j) == _kth_smallest(a.copy(), j) == np.sort(a)[j]


def test_rerank_orders_by_distance_then_index():
    from plcore.neighbors._float32 import rerank_certified

    X = np.array([[0.0], [1.0], [-1.0], [1.0], [2.0], [5.0]])
    Q = np.array([[0.0], [0.9]])
    I = np.array([[4, 3, 2, 1, 0], [0, 5, 1, 3, 2]])
    valid = np.array([[True] * 5, [True, True, False, True, True]])   # index 1 hidden from query 1
    dist, ind, uncertain = rerank_certified(X, Q, I, valid, None, 4)
    assert ind.tolist() == [[0, 1, 2, 3], [3, 0, 2, 5]]
    np.testing.assert_allclose(dist, [[0, 1, 1, 1], [0.1, 0.9, 1.9, 4.1]])
    assert not uncertain.any()
    _, _, uncertain = rerank_certified(X, Q, I, valid, np.array([1.5, 1.0]), 4)
    assert uncertain.tolist() == [False, True]          # 4th squared distance 1 < 1.5; 16.81 >= 1
