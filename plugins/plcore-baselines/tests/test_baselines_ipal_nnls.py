"""IPAL's NNLS weights (plcore_baselines._nnls): the compiled Lawson-Hanson active set on the Gram
form against ``scipy.optimize.nnls`` (objective, KKT conditions) on small problems with duplicate
and collinear columns and k > d, and IPAL end to end against the earlier OSQP path and a per-row
scipy loop."""

import numpy as np
import pytest
from scipy.optimize import nnls
from sklearn.neighbors import NearestNeighbors

from plcore.datasets import UniformBags
from plcore_baselines._nnls import gram_nnls, neighbour_nnls
from plcore_baselines.ipal import IpalLearner


def _problems(seed, n, n_ref, d, k, scale=1.0):
    """Random rows and neighbour lists with exact duplicates, scaled copies and self-matches."""
    rng = np.random.RandomState(seed)
    R = scale * rng.randn(n_ref, d)
    m = n_ref // 8
    R[n_ref // 2: n_ref // 2 + m] = R[:m]                                      # duplicate columns
    R[n_ref - m:] = 2.5 * R[m: 2 * m]                                          # collinear columns
    X = scale * rng.randn(n, d)
    X[: n // 4] = R[rng.randint(n_ref, size=n // 4)]                           # exactly representable rows
    nbr = np.stack([rng.choice(n_ref, k, replace=False) for _ in range(n)])
    # force duplicate / collinear pairs into the neighbour lists
    nbr[::3, 0], nbr[::3, 1] = 0, n_ref // 2
    nbr[1::3, 0], nbr[1::3, 1] = m, n_ref - m
    return X, R, nbr


def _check_against_scipy(X, R, nbr, w, rtol=1e-9, kkt_tol=1e-9):
    assert np.all(w >= 0)
    for i in range(X.shape[0]):
        A = R[nbr[i]].T                                           # (d, k)
        ref, rnorm = nnls(A, X[i])
        f, f_ref = np.sum((X[i] - A @ w[i]) ** 2), rnorm ** 2
        xx = X[i] @ X[i]
        # objective: 1e-9 relative to the optimum, or to ||x||^2 (the objective at w = 0) when the
        # optimum is ~0 (x exactly reconstructed, e.g. a duplicate row)
        assert abs(f - f_ref) <= rtol * max(f_ref, 1e-6 * xx) + 1e-15, (i, f, f_ref)
        # KKT of min ||x - A w||^2 / 2: grad = A'(A w - x); >= 0 where w = 0, = 0 where w > 0
        grad = A.T @ (A @ w[i] - X[i])
        sc = np.sqrt(xx * np.max(np.sum(A * A, axis=0))) + 1e-300
        assert np.all(grad[w[i] == 0] >= -kkt_tol * sc), i
        assert np.all(np.abs(grad[w[i] > 0]) <= kkt_tol * sc), i


@pytest.mark.parametrize("d,k", [(15, 7), (48, 10), (3, 8), (5, 10), (1, 4), (10, 10)])
@pytest.mark.parametrize("scale", [1.0, 1e-3, 1e3])
def test_objective_and_kkt_equal_scipy_nnls(d, k, scale):
    X, R, nbr = _problems(d * 100 + k, 300, 80, d, k, scale)
    w, G, b = neighbour_nnls(X, R, nbr)
    _check_against_scipy(X, R, nbr, w)
    np.testing.assert_allclose(G[5], R[nbr[5]] @ R[nbr[5]].T, rtol=1e-12, atol=1e-14 * scale ** 2)
    np.testing.assert_allclose(b[5], R[nbr[5]] @ X[5], rtol=1e-12, atol=1e-12 * scale ** 2)
    np.testing.assert_array_equal(G, np.transpose(G, (0, 2, 1)))


def test_unique_solutions_equal_scipy_weights():
    """d > k in general position: the minimiser is unique and equals scipy's."""
    rng = np.random.RandomState(0)
    X, R = rng.randn(200, 20), rng.randn(100, 20)
    nbr = NearestNeighbors(n_neighbors=8).fit(R).kneighbors(X, return_distance=False)
    w, _, _ = neighbour_nnls(X, R, nbr)
    ref = np.array([nnls(R[nbr[i]].T, X[i])[0] for i in range(X.shape[0])])
    np.testing.assert_allclose(w, ref, atol=1e-12, rtol=0)
    assert np.count_nonzero(ref == 0) > 0 and np.count_nonzero(ref > 0) > 0


def test_duplicate_rows_are_reconstructed_exactly():
    """Data with duplicate rows (each row's copies are its neighbours): objective 0, one copy used."""
    rng = np.random.RandomState(3)
    base = rng.randn(60, 6)
    X = np.vstack([base, base, base])
    nbr = NearestNeighbors(n_neighbors=10).fit(X).kneighbors(return_distance=False)
    w, _, _ = neighbour_nnls(X, X, nbr)
    _check_against_scipy(X, X, nbr, w)
    res = np.linalg.norm(X - np.einsum("nk,nkd->nd", w, X[nbr]), axis=1)
    assert np.max(res) <= 1e-12 * np.max(np.linalg.norm(X, axis=1))


def test_zero_rows_and_zero_neighbours():
    rng = np.random.RandomState(4)
    R = rng.randn(30, 5)
    R[7] = 0.0
    X = rng.randn(20, 5)
    X[0] = 0.0
    nbr = np.stack([rng.choice(30, 6, replace=False) for _ in range(20)])
    nbr[:, 0] = 7
    w, _, _ = neighbour_nnls(X, R, nbr)
    assert np.all(w[0] == 0) and np.all(w[:, 0] == 0)
    _check_against_scipy(X, R, nbr, w)


def test_uncompiled_reference_and_gram_entry_point_agree():
    X, R, nbr = _problems(7, 40, 30, 4, 8)
    w, G, b = neighbour_nnls(X, R, nbr)
    w_py, _, _ = neighbour_nnls(X, R, nbr, jit=False)
    _check_against_scipy(X, R, nbr, w_py)
    np.testing.assert_allclose(w_py, w, atol=1e-10)
    w_g = gram_nnls(G, b, np.sum(X * X, axis=1))
    np.testing.assert_array_equal(w_g, w)


def test_empty_inputs():
    w, G, b = neighbour_nnls(np.zeros((0, 3)), np.ones((4, 3)), np.zeros((0, 2), dtype=int))
    assert w.shape == (0, 2) and G.shape == (0, 2, 2) and b.shape == (0, 2)


# ----------------------------------------------------------------------------- IPAL end to end
class ScipyLoopIpal(IpalLearner):
    """IPAL with the weights of a straightforward per-row ``scipy.optimize.nnls`` loop."""

    def _nnls(self, X, R, neighbours):
        N = R[neighbours]
        w = np.array([nnls(N[i].T, X[i])[0] for i in range(X.shape[0])]).reshape(neighbours.shape)
        return w, np.einsum("nkd,nld->nkl", N, N), np.einsum("nkd,nd->nk", N, X)


def _pl_data(seed, n, d, q, dup=0):
    rng = np.random.RandomState(seed)
    y = rng.randint(q, size=n)
    X = rng.randn(n, d) + 1.5 * np.eye(q, d)[y]
    if dup:
        X[-dup:], y[-dup:] = X[:dup], y[:dup]
    S = UniformBags(r=2).generate(y, n_classes=q, random_state=rng)
    return X, S, y


@pytest.mark.parametrize("row_normalize", [True, False])
def test_ipal_equals_scipy_loop_and_osqp_path(row_normalize):
    X, S, y = _pl_data(5, 260, 12, 5)
    Xtr, Str, Xte = X[:200], S[:200], X[200:]
    new = IpalLearner(row_normalize=row_normalize).fit(Xtr, Str)
    ref = ScipyLoopIpal(row_normalize=row_normalize).fit(Xtr, Str)
    old = IpalLearner(row_normalize=row_normalize, nnls_solver="osqp").fit(Xtr, Str)
    np.testing.assert_allclose(new.weights_.toarray(), ref.weights_.toarray(), atol=1e-12)
    np.testing.assert_allclose(new.confidences_, ref.confidences_, atol=1e-10)
    np.testing.assert_allclose(new.confidences_, old.confidences_, atol=1e-5)
    np.testing.assert_array_equal(new.disambiguated_, old.disambiguated_)
    np.testing.assert_allclose(new.reconstruction_errors(Xte), ref.reconstruction_errors(Xte), atol=1e-10)
    np.testing.assert_array_equal(new.predict(Xte), ref.predict(Xte))
    np.testing.assert_array_equal(new.predict(Xte), old.predict(Xte))


def test_ipal_with_duplicate_rows_reaches_the_same_objective_and_accuracy():
    """Duplicate rows: the weights are not unique; per row the NNLS objective equals the per-row
    scipy loop's, and the accuracies agree."""
    X, S, y = _pl_data(6, 330, 3, 4, dup=60)
    perm = np.random.RandomState(0).permutation(330)
    X, S, y = X[perm], S[perm], y[perm]
    tr, te = np.arange(260), np.arange(260, 330)
    new = IpalLearner(k=8).fit(X[tr], S[tr])
    ref = ScipyLoopIpal(k=8).fit(X[tr], S[tr])
    Xn = new._X
    nbr = NearestNeighbors(n_neighbors=8).fit(Xn).kneighbors(return_distance=False)
    for W in (new.weights_, ref.weights_):
        assert np.all(W.data >= 0)
    f_new = np.sum((Xn - new.weights_ @ Xn) ** 2, axis=1)
    f_ref = np.sum((Xn - ref.weights_ @ Xn) ** 2, axis=1)
    np.testing.assert_allclose(f_new, f_ref, rtol=1e-9, atol=1e-12)
    assert nbr.shape == (260, 8)
    acc_new = np.mean(new.predict(X[te]) == y[te])
    acc_ref = np.mean(ref.predict(X[te]) == y[te])
    assert abs(acc_new - acc_ref) <= 0.03
    assert np.mean(new.disambiguated_ == ref.disambiguated_) >= 0.97
