"""S/D propagation (Eqs. (14), (16), (17)) against literal dense formulas; monotonicity; the exact
class-wise solver against cvxpy and the dense solver."""

import cvxpy as cp
import numpy as np
import pytest
import scipy.sparse as sp

from plcore_plc._graph import neighbour_sqdist
from plcore_plc._propagation import (classwise_sqdist, propagate_classwise, propagate_constraints,
                                     sd_multiplicative_step, sd_objective)


def _instance(seed, n=25, q=3):
    rng = np.random.RandomState(seed)
    W = sp.random(n, n, density=0.25, random_state=rng)
    W = sp.csr_matrix(0.5 * (W + W.T))
    W.setdiag(0)
    W.eliminate_zeros()
    lab = rng.randint(q, size=n)
    M = lab[:, None] == lab[None, :]
    return rng, W, M, ~M


def literal_objective(S, D, W, M, C, a, b, g, P):
    Wd = W.toarray()
    A = np.diag(Wd.sum(axis=1))
    L = A - Wd
    return (np.abs(D * S).sum() + a * np.trace(D @ L @ D.T) + b * np.trace(S @ L @ S.T)
            + g * (np.linalg.norm(P * (S - M), "fro") ** 2 + np.linalg.norm(P * (D - C), "fro") ** 2))


def test_objective_matches_literal_eq14():
    rng, W, M, C = _instance(0)
    S, D = rng.rand(25, 25), rng.rand(25, 25)
    P = (rng.rand(25, 25) < 0.5).astype(float)
    for Pm in (None, P):
        ref = literal_objective(S, D, W, M, C, 0.3, 0.2, 10.0, np.ones((25, 25)) if Pm is None else Pm)
        np.testing.assert_allclose(sd_objective(S, D, W, M, C, 0.3, 0.2, 10.0, Pm), ref, rtol=1e-10)


def test_step_matches_literal_eq16_eq17():
    rng, W, M, C = _instance(1)
    S, D = rng.rand(25, 25), rng.rand(25, 25)
    a, b, g = 0.4, 0.7, 10.0
    Wd = W.toarray()
    A = np.diag(Wd.sum(axis=1))
    S_ref = S * (2 * g * M + 2 * b * S @ Wd) / (D + 2 * b * S @ A + 2 * g * S)
    D_ref = D * (2 * g * C + 2 * a * D @ Wd) / (S_ref + 2 * a * D @ A + 2 * g * D)
    S1, D1 = sd_multiplicative_step(S, D, W, M, C, a, b, g)
    np.testing.assert_allclose(S1, S_ref, rtol=1e-12)
    np.testing.assert_allclose(D1, D_ref, rtol=1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_each_multiplicative_update_does_not_increase_eq14(seed):
    rng, W, M, C = _instance(seed)
    a, b, g = rng.uniform(0.01, 1.0, size=2).tolist() + [10.0]
    S, D = rng.rand(25, 25), rng.rand(25, 25)
    prev = sd_objective(S, D, W, M, C, a, b, g)
    for _ in range(20):
        S_new, _ = sd_multiplicative_step(S, D, W, M, C, a, b, g)
        mid = sd_objective(S_new, D, W, M, C, a, b, g)  # after Eq. (16), D fixed
        S, D = sd_multiplicative_step(S, D, W, M, C, a, b, g)
        val = sd_objective(S, D, W, M, C, a, b, g)  # after Eq. (17) too
        assert mid <= prev * (1 + 1e-12) + 1e-12
        assert val <= mid * (1 + 1e-12) + 1e-12
        prev = val
        assert np.all(S >= 0) and np.all(D >= 0)


def test_propagation_trace_non_increasing_symmetric_and_fits_constraints():
    rng, W, M, C = _instance(7)
    S, D, obj = propagate_constraints(W, M, C, 0.01, 0.01, 10.0, max_iter=30,
                                      rng=np.random.RandomState(0), tol=0.0)
    assert np.all(np.diff(obj) <= 0)
    assert obj[-1] < 1e-2 * obj[0]
    np.testing.assert_allclose(S, S.T)
    np.testing.assert_allclose(D, D.T)
    # gamma dominates: S follows the must-links, D the cannot-links
    assert np.abs(S - M).max() < 0.2 and np.abs(D - C).max() < 0.2
    S2, D2, obj2 = propagate_constraints(W, M, C, 0.01, 0.01, 10.0, max_iter=30,
                                         rng=np.random.RandomState(0), tol=0.0)
    np.testing.assert_array_equal(S, S2)


def test_neighbour_sqdist_literal():
    rng = np.random.RandomState(0)
    Mx = rng.rand(30, 30)
    Mx = Mx + Mx.T
    nbr = rng.randint(30, size=(30, 4))
    H = neighbour_sqdist(Mx, nbr, chunk_elems=200)
    ref = np.array([[np.sum((Mx[:, nbr[j, s]] - Mx[:, j]) ** 2) for s in range(4)] for j in range(30)])
    np.testing.assert_allclose(H, ref, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("alpha, beta, gamma", [(0.01, 0.01, 10.0), (1.0, 0.1, 10.0), (1.0, 1.0, 0.8)])
def test_classwise_solution_is_the_exact_minimiser_of_eq14(alpha, beta, gamma):
    """P all ones: Eq. (14) separates by rows, rows with one pseudo-label share a strictly convex
    problem (gamma > 1/2). The class-wise solution, expanded to n x n, has the literal Eq. (14)
    value that cvxpy finds for every row problem, and no more than the demo's dense solver."""
    rng, W, _, _ = _instance(1, n=30, q=4)
    pseudo = rng.randint(4, size=30)
    pseudo[:4] = np.arange(4)
    M = pseudo[:, None] == pseudo[None, :]
    Sg, Dg, counts, obj = propagate_classwise(W, pseudo, 4, alpha, beta, gamma)
    S, D = Sg[pseudo], Dg[pseudo]
    np.testing.assert_allclose(obj, literal_objective(S, D, W, M, ~M, alpha, beta, gamma, np.ones(M.shape)),
                               rtol=1e-10)
    Wd = W.toarray()
    L = np.diag(Wd.sum(axis=1)) - Wd
    n = 30
    H = np.block([[2 * beta * L + 2 * gamma * np.eye(n), np.eye(n)], [np.eye(n), 2 * alpha * L + 2 * gamma * np.eye(n)]])
    ref = 0.0
    for label in range(4):
        m = (pseudo == label).astype(float)
        z = cp.Variable(2 * n)
        row = (0.5 * cp.quad_form(z, cp.psd_wrap(0.5 * (H + H.T))) - 2 * gamma * (m @ z[:n])
               - 2 * gamma * ((1 - m) @ z[n:]) + gamma * n)
        prob = cp.Problem(cp.Minimize(row), [z >= 0])
        prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
        ref += counts[label] * prob.value
    assert abs(obj - ref) <= 1e-6 * ref
    dense = propagate_constraints(W, M, ~M, alpha, beta, gamma, max_iter=10, rng=np.random.RandomState(0))[2]
    assert obj <= dense[-1] + 1e-9


def test_classwise_sqdist_is_the_column_distance_of_the_expanded_matrix():
    rng = np.random.RandomState(2)
    pseudo = rng.randint(3, size=20)
    X = rng.rand(3, 20)
    counts = np.bincount(pseudo, minlength=3).astype(float)
    nbr = rng.randint(20, size=(20, 4))
    D = X[pseudo]  # row r = X[pseudo[r]]
    ref = np.array([[np.sum((D[:, nbr[j, s]] - D[:, j]) ** 2) for s in range(4)] for j in range(20)])
    np.testing.assert_allclose(classwise_sqdist(X, counts, nbr), ref, rtol=1e-12)
