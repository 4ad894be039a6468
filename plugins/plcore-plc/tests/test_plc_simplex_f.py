"""PLC's F step (``plcore_plc._simplex``) and T matrix: the literal Eq. (2), cvxpy for Eqs. (12)-(13),
the compiled kernels against their plain-Python reference."""

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp

from plcore.utils import normalise_rows
from plcore_plc._simplex import (batched_pass, fw_gap, objective, project_rows, sequential_pass,
                               solve_eq12)
from plcore_plc._graph import gram_blocks, knn, symmetrise, t_matrix, weights_matrix
from plcore_plc._simplex import solve_simplex_qps

CLARABEL = dict(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)


def _problem(seed, n=30, d=6, k=5, q=4, partial=0.5):
    rng = np.random.RandomState(seed)
    Z = normalise_rows(rng.randn(n, d))
    nbr = knn(Z, k)
    w, _ = solve_simplex_qps(gram_blocks(Z, nbr), np.zeros((n, k)))
    Wc = weights_matrix(w, nbr)
    Y = np.ones((n, q))
    rows = rng.rand(n) < partial
    Y[rows] = rng.rand(rows.sum(), q) < 0.4
    Y[rows, rng.randint(q, size=rows.sum())] = 1.0
    return rng, Wc, Y


def _literal_eq2(W, F):
    """Eq. (2) as printed: sum_j || f_j - sum_i w_ij f_i ||^2, W in the paper's orientation."""
    W = W.toarray()
    n = F.shape[0]
    return sum(np.sum((F[j] - sum(W[i, j] * F[i] for i in range(n))) ** 2) for j in range(n))


def _cvx_eq12(T, Y):
    n, q = Y.shape
    R = np.linalg.cholesky(T.toarray() + 1e-13 * np.eye(n))  # T = R R'
    X = cp.Variable((n, q))
    prob = cp.Problem(cp.Minimize(cp.sum_squares(R.T @ X)), [cp.sum(X, axis=1) == 1, X >= 0, X <= Y])
    prob.solve(**CLARABEL)
    return prob.value


@pytest.mark.parametrize("seed", [0, 1])
def test_t_matrix_quadratic_form_is_the_literal_eq2(seed):
    """An independent check of T: tr(F'TF) against Eq. (2) summed as printed, for the
    unsymmetrised W of Eq. (1) (columns sum to 1) and the symmetrised one (they do not)."""
    rng, Wc, Y = _problem(seed)
    F = rng.dirichlet(np.ones(Y.shape[1]), size=Y.shape[0])
    for W in (Wc.T, symmetrise(Wc)):
        T = t_matrix(W)
        assert abs(T - T.T).max() < 1e-14
        np.testing.assert_allclose(objective(T, F), _literal_eq2(W, F), rtol=1e-12)
    # with column sums 1 the paper's printed T = WW' + I(W'11'W) - 2W has the same quadratic form
    W = sp.csr_matrix(Wc.T)
    np.testing.assert_allclose(W.sum(axis=0), 1.0)
    paper = (W @ W.T + sp.identity(W.shape[0]) - 2 * W)
    np.testing.assert_allclose(np.vdot(F, paper @ F), objective(t_matrix(W), F), rtol=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_eq12_exact_solver_matches_cvxpy(seed):
    rng, Wc, Y = _problem(seed, n=40)
    for W in (Wc.T, symmetrise(Wc)):
        T = t_matrix(W)
        F, info = solve_eq12(T, Y, tol=1e-8)
        assert info["n_iter"] < 20000 and info["gap"] <= 1e-8 * objective(T, Y / Y.sum(axis=1, keepdims=True))
        assert np.all(F >= 0) and np.all(F[Y == 0] == 0)
        np.testing.assert_allclose(F.sum(axis=1), 1.0, atol=1e-12)
        ref = _cvx_eq12(T, Y)
        assert info["objective"] == pytest.approx(objective(T, F), rel=1e-12)
        assert abs(info["objective"] - ref) <= 1e-6 * max(1.0, ref), (info, ref)
        assert info["gap"] >= info["objective"] - ref - 1e-9     # the gap bounds the distance to the optimum
    # the compiled kernel and its plain-Python reference take the same steps
    F_py, info_py = solve_eq12(T, Y, tol=1e-12, max_iter=150, jit=False)
    F_jit, info_jit = solve_eq12(T, Y, tol=1e-12, max_iter=150)
    assert info_py["n_iter"] == info_jit["n_iter"] == 150
    np.testing.assert_allclose(F_py, F_jit, atol=1e-12)


def test_projection_is_the_euclidean_projection_onto_the_candidates_simplex():
    rng = np.random.RandomState(3)
    V = 2 * rng.randn(25, 6)
    Y = (rng.rand(25, 6) < 0.5).astype(float)
    Y[np.arange(25), rng.randint(6, size=25)] = 1.0
    P = project_rows(V, Y)
    np.testing.assert_array_equal(P, project_rows(V, Y, jit=False))
    for j in range(25):
        x = cp.Variable(6)
        cp.Problem(cp.Minimize(cp.sum_squares(x - V[j])), [cp.sum(x) == 1, x >= 0, x <= Y[j]]).solve(**CLARABEL)
        np.testing.assert_allclose(P[j], x.value, atol=1e-7)


def test_sequential_pass_solves_each_row_of_eq13_with_the_latest_rows():
    """Gauss-Seidel: row j is the cvxpy solution of Eq. (13) given rows < j already updated."""
    rng, Wc, Y = _problem(4, n=20, q=3)
    T = t_matrix(symmetrise(Wc))
    Td = T.toarray()
    F = Y / Y.sum(axis=1, keepdims=True)
    G = sequential_pass(T, F, Y)
    np.testing.assert_array_equal(G, sequential_pass(T, F, Y, jit=False))
    cur = F.copy()
    for j in range(F.shape[0]):
        lin = sum((Td[i, j] + Td[j, i]) * cur[i] for i in range(F.shape[0]) if i != j)
        x = cp.Variable(3)
        cp.Problem(cp.Minimize(Td[j, j] * cp.sum_squares(x) + lin @ x),
                   [cp.sum(x) == 1, x >= 0, x <= Y[j]]).solve(**CLARABEL)
        np.testing.assert_allclose(G[j], x.value, atol=1e-7)
        cur[j] = G[j]


@pytest.mark.parametrize("step", ["sequential", "batched"])
def test_row_passes_never_increase_eq12_and_reach_its_optimum(step):
    rng, Wc, Y = _problem(5, n=40)
    T = t_matrix(symmetrise(Wc))
    F = Y / Y.sum(axis=1, keepdims=True)
    vals = [objective(T, F)]
    for _ in range(400):
        if step == "sequential":
            F = sequential_pass(T, F, Y)
        else:
            F, theta, before, after = batched_pass(T, F, Y)
            assert 0.0 <= theta <= 1.0 and after == pytest.approx(objective(T, F), rel=1e-9, abs=1e-12)
        vals.append(objective(T, F))
    assert np.all(np.diff(vals) <= 1e-12)
    best = solve_eq12(T, Y, tol=1e-8)[1]["objective"]
    assert vals[-1] - best <= 1e-4 * best
    assert fw_gap(2 * (T @ F), F, Y) >= vals[-1] - best - 1e-9


def test_row_kernels_refuse_a_non_symmetric_T():
    rng, Wc, Y = _problem(6, n=15, q=3)
    with pytest.raises(ValueError, match="symmetric"):
        sequential_pass(sp.csr_matrix(Wc), Y / Y.sum(axis=1, keepdims=True), Y)
