"""PLC's weight steps (Eqs. (1), (11)): the batched simplex QP solver against cvxpy."""

import cvxpy as cp
import numpy as np
import pytest

from plcore.utils import normalise_rows
from plcore_plc._graph import gram_blocks, knn
from plcore_plc._simplex import block_objectives, solve_simplex_qps

CLARABEL = dict(solver=cp.CLARABEL, tol_gap_abs=1e-11, tol_gap_rel=1e-11, tol_feas=1e-11)


def cvx_simplex_qp(Q, c):
    """Reference for one block: min x'Qx + c'x, 1'x = 1, x >= 0."""
    x = cp.Variable(c.size)
    prob = cp.Problem(cp.Minimize(cp.quad_form(x, cp.psd_wrap(0.5 * (Q + Q.T))) + c @ x), [cp.sum(x) == 1, x >= 0])
    prob.solve(**CLARABEL)
    return x.value, prob.value


def _feasible(w):
    assert np.all(w >= 0)
    np.testing.assert_allclose(w.sum(axis=1), 1.0, atol=1e-12)


def _problem(seed, n=30, d=14, k=6, q=4):
    rng = np.random.RandomState(seed)
    Z = normalise_rows(rng.randn(n, d))
    nbr = knn(Z, k)
    return rng, Z, nbr, rng.dirichlet(np.ones(q), size=n)


def test_w_step_eq1_matches_cvxpy():
    _, Z, nbr, _ = _problem(0)
    Gx = gram_blocks(Z, nbr)  # d > k: strictly convex, unique solution
    n, k = nbr.shape
    w, info = solve_simplex_qps(Gx, np.zeros((n, k)), tol=1e-10)
    _feasible(w)
    assert info["gap_ratio"] <= 1.0
    ref = np.array([cvx_simplex_qp(Gx[j], np.zeros(k))[0] for j in range(n)])
    np.testing.assert_allclose(w, ref, atol=1e-6)


@pytest.mark.parametrize("d", [14, 3])
def test_w_step_eq11_matches_cvxpy_warm_started_and_singular(d):
    """Eq. (11) with linear terms, warm-started from Eq. (1)'s weights; d = 3 < k makes every
    Gram matrix singular (solutions not unique: objectives are compared)."""
    rng, Z, nbr, F = _problem(3, d=d, k=8)
    n, k = nbr.shape
    Gx, Gf = gram_blocks(Z, nbr), gram_blocks(F, nbr)
    w0, _ = solve_simplex_qps(Gx, np.zeros((n, k)))
    Q, c = Gx + Gf, 0.3 * rng.rand(n, k) + 0.7 * rng.rand(n, k)
    w, info = solve_simplex_qps(Q, c, x0=w0, tol=1e-10)
    _feasible(w)
    ref = np.array([cvx_simplex_qp(Q[j], c[j])[1] for j in range(n)])
    np.testing.assert_allclose(block_objectives(Q, c, w), ref, atol=1e-8)
    w_py, info_py = solve_simplex_qps(Q, c, x0=w0, tol=1e-10, jit=False)  # the plain-Python reference
    np.testing.assert_allclose(w_py, w, atol=1e-13)
    assert info_py["n_iter"] == info["n_iter"]


def test_w_step_degenerate_blocks():
    """All-zero and rank-one blocks (identical label rows) are solved exactly."""
    n, k = 5, 3
    Q = np.zeros((n, k, k))
    Q[:, 0, 0] = 1.0
    w, _ = solve_simplex_qps(Q + np.eye(k), np.zeros((n, k)), tol=1e-12)
    np.testing.assert_allclose(w, np.tile([0.2, 0.4, 0.4], (n, 1)), atol=1e-9)
    w, _ = solve_simplex_qps(Q, np.tile([1.0, 0.0, 0.5], (n, 1)), tol=1e-12)
    np.testing.assert_allclose(w, np.tile([0.0, 1.0, 0.0], (n, 1)), atol=1e-9)
    w, info = solve_simplex_qps(np.zeros((n, k, k)), np.zeros((n, k)))
    np.testing.assert_allclose(w, 1.0 / k)   # nothing to minimise: the start is optimal
    # Q = 0 (lam = 0, neighbours sharing F's row) or negligible: the LP's face of minima, at once
    c = np.tile([3.0, 1.0, 2.0], (n, 1))
    for scale in (0.0, 1e-18):
        w, info = solve_simplex_qps(scale * (Q + np.eye(k)), c)
        np.testing.assert_allclose(w, np.tile([0.0, 1.0, 0.0], (n, 1)))
        assert info["max_iter"] == 0 and info["gap_ratio"] <= 1.0
    w, _ = solve_simplex_qps(np.zeros((n, k, k)), np.tile([1.0, 1.0, 2.0], (n, 1)))
    np.testing.assert_allclose(w, np.tile([0.5, 0.5, 0.0], (n, 1)))   # tied minima share the weight
