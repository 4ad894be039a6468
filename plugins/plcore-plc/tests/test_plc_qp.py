"""Every batched OSQP step against a cvxpy statement of the same QPs (tolerance 1e-5)."""

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp

from plcore.utils import normalise_rows
from plcore_plc._graph import gram_blocks, knn, symmetrise, t_matrix, weights_matrix
from plcore_plc._qp import BatchedSimplexQP, f_row_step, solve_full_f_qp

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


@pytest.mark.parametrize("seed", [1])
def test_f_rows_eq13_match_cvxpy(seed):
    rng, Z, nbr, F = _problem(seed, q=5)
    n, q = F.shape
    Y = rng.rand(n, q) < 0.5
    Y[np.arange(n), rng.randint(q, size=n)] = True
    F = Y / Y.sum(axis=1, keepdims=True)
    w = BatchedSimplexQP(n, nbr.shape[1]).solve(gram_blocks(Z, nbr), np.zeros(nbr.shape))
    W = symmetrise(weights_matrix(w, nbr))
    T = t_matrix(W).toarray()
    qp = BatchedSimplexQP(n, q, diagonal=True, upper=Y)
    F_new, theta, before, after = f_row_step(sp.csr_matrix(T), F, qp)
    # reconstruct the per-row Jacobi solutions from the step and compare row by row with cvxpy
    rows = F + (F_new - F) / theta if theta > 0 else F_new
    for j in range(n):
        lin = sum((T[i, j] + T[j, i]) * F[i] for i in range(n) if i != j)
        ref = cvx_simplex_qp(T[j, j] * np.eye(q), lin, Y[j].astype(float))
        np.testing.assert_allclose(rows[j], ref, atol=TOL)
    _feasible(F_new, Y)
    assert after <= before + 1e-12
    np.testing.assert_allclose(after, np.vdot(F_new, T @ F_new), rtol=1e-9, atol=1e-12)


def test_f_row_steps_never_increase_eq12():
    rng, Z, nbr, F = _problem(5, n=40, q=4)
    n, q = F.shape
    Y = np.ones((n, q), bool)
    Y[:10] = False
    Y[np.arange(10), rng.randint(q, size=10)] = True
    w = BatchedSimplexQP(n, nbr.shape[1]).solve(gram_blocks(Z, nbr), np.zeros(nbr.shape))
    T = t_matrix(symmetrise(weights_matrix(w, nbr)))
    qp = BatchedSimplexQP(n, q, diagonal=True, upper=Y)
    F = Y / Y.sum(axis=1, keepdims=True)
    vals = [np.vdot(F, T @ F)]
    for _ in range(15):
        F, _, _, val = f_row_step(T, F, qp)
        vals.append(np.vdot(F, T @ F))
    assert np.all(np.diff(vals) <= 1e-10), vals
    assert qp.n_setups == 1


@pytest.mark.parametrize("seed", [1])
def test_full_f_qp_eq12_matches_cvxpy(seed):
    rng, Z, nbr, _ = _problem(seed, n=25, q=3)
    n, q = 25, 3
    w = BatchedSimplexQP(n, nbr.shape[1]).solve(gram_blocks(Z, nbr), np.zeros(nbr.shape))
    Wc = weights_matrix(w, nbr)
    T = t_matrix(Wc.T)
    Y = np.ones((n, q), bool)
    Y[:8] = False
    Y[np.arange(8), np.arange(8) % q] = True
    # Eq. (12) equals Eq. (2) for the unsymmetrised W (columns of the paper's W sum to 1)
    Fr = rng.dirichlet(np.ones(q), size=n)
    np.testing.assert_allclose(np.vdot(Fr, T @ Fr), np.sum((Fr - Wc @ Fr) ** 2), rtol=1e-10)
    # T is singular (constants): compare optimal values and, on a strictly convex
    # variant T + 0.1 I, the solutions themselves
    for Tm, compare_x in ((T, False), (T + 0.1 * sp.identity(n), True)):
        F = solve_full_f_qp(Tm, Y)
        _feasible(F, Y)
        X = cp.Variable((n, q))
        Ts = 0.5 * (Tm + Tm.T).toarray()
        obj = sum(cp.quad_form(X[:, l], cp.psd_wrap(Ts)) for l in range(q))
        prob = cp.Problem(cp.Minimize(obj), [cp.sum(X, axis=1) == 1, X >= 0, X <= Y.astype(float)])
        prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
        np.testing.assert_allclose(np.vdot(F, Tm @ F), prob.value, atol=TOL)
        if compare_x:
            np.testing.assert_allclose(F, X.value, atol=TOL)
