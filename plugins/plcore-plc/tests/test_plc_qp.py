"""The batched OSQP W steps (Eqs. (1), (11)) against a cvxpy statement of the same QPs."""

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp

from plcore.utils import normalise_rows
from plcore_plc._graph import gram_blocks, knn, weights_matrix
from plcore_plc._qp import BatchedSimplexQP

TOL = 1e-5


def cvx_simplex_qp(Q, c, upper):
    """Reference for one block: min x'Qx + c'x, 1'x = 1, 0 <= x <= upper (Eqs. (1), (11), (13))."""
    m = c.size
    x = cp.Variable(m)
    Qs = 0.5 * (Q + Q.T)
    prob = cp.Problem(cp.Minimize(cp.quad_form(x, cp.psd_wrap(Qs)) + c @ x),
                      [cp.sum(x) == 1, x >= 0, x <= upper])
    prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    return x.value


def _feasible(x, upper):
    assert np.all(x >= -1e-9) and np.all(x <= upper + 1e-9)
    np.testing.assert_allclose(x.sum(axis=1), 1.0, atol=1e-9)


def _problem(seed, n=30, d=14, k=6, q=4):
    rng = np.random.RandomState(seed)
    Z = normalise_rows(rng.randn(n, d))
    nbr = knn(Z, k)
    F = rng.dirichlet(np.ones(q), size=n)
    return rng, Z, nbr, F


@pytest.mark.parametrize("seed", [0])
def test_w_step_eq1_matches_cvxpy(seed):
    _, Z, nbr, _ = _problem(seed)
    Gx = gram_blocks(Z, nbr)  # d > k: strictly convex, unique solution
    n, k = nbr.shape
    w = BatchedSimplexQP(n, k).solve(Gx, np.zeros((n, k)))
    _feasible(w, 1.0)
    ref = np.array([cvx_simplex_qp(Gx[j], np.zeros(k), np.ones(k)) for j in range(n)])
    np.testing.assert_allclose(w, ref, atol=TOL)


@pytest.mark.parametrize("seed", [3])
def test_w_step_eq11_matches_cvxpy_with_warm_start_update(seed):
    rng, Z, nbr, F = _problem(seed)
    n, k = nbr.shape
    Gx, Gf = gram_blocks(Z, nbr), gram_blocks(F, nbr)
    qp = BatchedSimplexQP(n, k)
    w0 = qp.solve(Gx, np.zeros((n, k)))  # first call: setup
    lam, mu, alpha, beta = 1.0, 1.0, 0.3, 0.7
    H, K = rng.rand(n, k), rng.rand(n, k)
    Q, c = lam * Gx + mu * Gf, alpha * H + beta * K
    w = qp.solve(Q, c, x0=w0)  # second call: update + warm start on the same factorisation
    assert qp.n_setups == 1
    _feasible(w, 1.0)
    ref = np.array([cvx_simplex_qp(Q[j], c[j], np.ones(k)) for j in range(n)])
    np.testing.assert_allclose(w, ref, atol=TOL)


def test_w_step_with_zero_entries_in_P_keeps_pattern():
    """Blocks with exact zeros (e.g. identical label rows) must not break OSQP updates."""
    n, k = 5, 3
    Q = np.zeros((n, k, k))
    Q[:, 0, 0] = 1.0
    qp = BatchedSimplexQP(n, k)
    x = qp.solve(Q + np.eye(k), np.zeros((n, k)))
    np.testing.assert_allclose(x, np.tile([0.2, 0.4, 0.4], (n, 1)), atol=TOL)
    x = qp.solve(Q, np.tile([1.0, 0.0, 0.5], (n, 1)))
    ref = cvx_simplex_qp(Q[0], np.array([1.0, 0.0, 0.5]), np.ones(k))
    np.testing.assert_allclose(x[0], ref, atol=TOL)
