"""The numerical steps of CENDA (Bao, Hang & Zhang, KDD 2021), each without an m x m matrix.

Notation (paper Section 3, with examples as *rows*): ``X`` is the (m, d) training matrix,
``Y`` the (m, q) labelling-confidence matrix, ``H = I - ee^T/m`` the centring matrix and
``L = Y Y^T`` the linear label kernel (Eq. 3). The projection solves the generalised
eigenproblem of Eq. (12),

    A p = lambda B p,    A = X^T H L H X = C C^T,   C = X^T H Y = Xc^T Y   (d x q),
                         B = mu X^T X + (1 - mu) I                         (d x d).

``A`` has rank <= q (in fact <= q - 1: the rows of ``Y`` sum to one, so ``H Y e = 0``), so
neither ``H`` nor ``L`` is ever formed. ``B`` does not depend on ``Y``: it is factored once,
``B = R R^T`` (Cholesky, ``R`` lower triangular). With ``u = R^T p`` the problem becomes the
ordinary symmetric ``G G^T u = lambda u`` with ``G = R^{-1} C`` (d x q), whose non-zero
eigenpairs are the thin SVD ``G = U diag(s) V^T``: ``lambda = s**2``, ``p = R^{-T} u``. The
eigenvectors then satisfy ``P^T B P = I`` (the constraint of Eq. 9), exactly what a dense
``scipy.linalg.eigh(A, B)`` returns.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp

from plcore.utils import flip_signs, uniform_confidences

from plcore_cenda.exceptions import CendaConditioningWarning

__all__ = [
    "initial_confidences",
    "factor_constraint",
    "cross_covariance",
    "generalized_eigenpairs",
    "select_n_components",
    "knn_indices",
    "knn_update",
    "subspace_distance",
    "EIGEN_RTOL",
]

#: eigenvalues below ``EIGEN_RTOL * max eigenvalue`` count as zero (rounding noise).
EIGEN_RTOL = 1e-10
#: reciprocal condition number of ``B`` below which it is regularised (with a warning).
RCOND_MIN = 1e-12


# Eq. (1): ``Y[i, j] = 1 / |S_i|`` on the candidates of row ``i``, 0 elsewhere -- the shared
# kernel of plcore.utils, kept importable here under the paper's name.
initial_confidences = uniform_confidences


def factor_constraint(X: np.ndarray, mu: float, gram: np.ndarray | None = None):
    """Cholesky factor of the constraint matrix of Eq. (9), ``B = mu X^T X + (1 - mu) I``.

    ``B`` is positive definite for ``mu < 1``; for ``mu`` close to 1 with collinear
    features, or ``d > m``, it is (nearly) singular and the generalised problem of
    Eq. (12) is ill-posed. Then a ridge ``eps * trace(B) / d * I`` is added, with the
    smallest ``eps`` (powers of ten from 1e-12) that brings the reciprocal condition number
    above ``RCOND_MIN``, and a :class:`~plcore_cenda.exceptions.CendaConditioningWarning` says so.

    Parameters
    ----------
    X : ndarray of shape (m, d)
    mu : float in [0, 1]
    gram : ndarray of shape (d, d), optional
        ``X^T X`` if already computed.

    Returns
    -------
    R : ndarray of shape (d, d)
        Lower-triangular ``R`` with ``R R^T = B`` (+ ridge).
    ridge : float
        The ridge that was added (0.0 when none was needed).
    """
    d = X.shape[1]
    if gram is None:
        gram = X.T @ X
    B = mu * gram
    B[np.diag_indices(d)] += 1.0 - mu
    scale = float(np.trace(B)) / d if d else 1.0
    if not np.isfinite(scale) or scale <= 0.0:
        scale = 1.0
    ridge = 0.0
    eps = 0.0
    while True:
        Bk = B if ridge == 0.0 else B + ridge * np.eye(d)
        R, rcond = _cholesky_rcond(Bk)
        if R is not None and rcond >= RCOND_MIN:
            break
        eps = 1e-12 if eps == 0.0 else eps * 10.0
        if eps > 1e-2:  # pragma: no cover - B is then not even finite
            raise ValueError(
                f"CENDA: the constraint matrix B = mu X^T X + (1 - mu) I (mu={mu}) cannot be "
                "factorised even after regularisation; check X for huge values")
        ridge = eps * scale
    if ridge > 0.0:
        warnings.warn(
            f"CENDA: B = mu X^T X + (1 - mu) I is singular or ill-conditioned (mu={mu}, "
            f"{X.shape[0]} samples, {d} features); the generalised eigenproblem of Eq. (12) "
            f"is ill-posed, so a ridge {ridge:.3g} * I ({eps:g} * trace(B)/d) was added. "
            "Use a smaller mu (mu < 1 keeps B positive definite) or fewer features.",
            CendaConditioningWarning, stacklevel=3)
    return R, ridge


def _cholesky_rcond(B):
    try:
        R = sla.cholesky(B, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        return None, 0.0
    anorm = float(np.abs(B).sum(axis=0).max())
    rcond, info = sla.lapack.dpocon(R, anorm, uplo="L")
    if info != 0 or not np.isfinite(rcond):
        return None, 0.0
    return R, float(rcond)


def cross_covariance(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """``C = X^T H Y`` (d x q) without ``H``: ``X^T (Y - 1 ybar^T)`` (``H Y`` is cheap, m x q).

    ``A = C C^T`` is the left-hand matrix of Eq. (12) (``X H L H X^T`` in the paper's
    column convention). When the centred confidences vanish up to rounding (every row of
    ``Y`` the same, e.g. all candidate sets full) ``C`` is exactly 0.
    """
    Yc = Y - Y.mean(axis=0)
    if np.linalg.norm(Yc) <= 1e-12 * np.linalg.norm(Y):
        Yc[:] = 0.0
    return X.T @ Yc


def generalized_eigenpairs(C: np.ndarray, R: np.ndarray):
    """Non-zero eigenpairs of Eq. (12), ``C C^T p = lambda R R^T p``, largest first.

    Parameters
    ----------
    C : ndarray of shape (d, q)
        ``X^T H Y``.
    R : ndarray of shape (d, d)
        Lower Cholesky factor of ``B``.

    Returns
    -------
    eigenvalues : ndarray of shape (r,)
        The ``r = min(d, q)`` largest generalised eigenvalues (all others are 0), sorted in
        decreasing order; values below ``EIGEN_RTOL * max`` are set to exactly 0.
    vectors : ndarray of shape (d, r)
        ``P`` with ``P^T B P = I``, signs fixed by :func:`plcore.utils.flip_signs`.
    """
    G = sla.solve_triangular(R, C, lower=True, check_finite=False)  # R^{-1} C, d x q
    U, s, _ = sla.svd(G, full_matrices=False, check_finite=False, lapack_driver="gesdd")
    lam = s**2
    if lam.size and lam[0] > 0:
        lam[lam < EIGEN_RTOL * lam[0]] = 0.0
    P = sla.solve_triangular(R, U, lower=True, trans="T", check_finite=False)  # R^{-T} U
    return lam, flip_signs(P)


def select_n_components(eigenvalues: np.ndarray, thr: float) -> int:
    """Eq. (7): the smallest ``d'`` with ``sum_{i<=d'} lambda_i >= thr * sum_i lambda_i``.

    The sum runs over the positive eigenvalues (sorted in decreasing order). Returns 0
    when there is none (``A = 0``: the confidences carry no information).
    """
    lam = np.asarray(eigenvalues, dtype=np.float64)
    lam = lam[lam > 0]
    if lam.size == 0:
        return 0
    csum = np.cumsum(lam)
    target = thr * csum[-1] * (1.0 - 1e-12)  # tolerate rounding in the cumulative sum
    return int(min(np.searchsorted(csum, target, side="left") + 1, lam.size))


def knn_indices(Z: np.ndarray, k: int, algorithm: str = "auto", n_jobs=None) -> np.ndarray:
    """Indices (m, k) of the ``k`` nearest neighbours of every row of ``Z``, itself excluded.

    Exact search by :mod:`plcore.neighbors` (``algorithm="auto"``: its measured rule).
    """
    m = Z.shape[0]
    k = min(int(k), m - 1)
    if k < 1:
        return np.empty((m, 0), dtype=np.intp)
    from plcore.neighbors import NeighborIndex

    return NeighborIndex(Z, algorithm=algorithm, n_jobs=n_jobs).kneighbors(None, k, return_distance=False)


def knn_update(Y: np.ndarray, S_bool: np.ndarray, neighbours: np.ndarray, alpha: float) -> np.ndarray:
    """Eq. (13)-(14): ``b_i = alpha y_i + sum_{j in N(i)} y_j``, renormalised over ``S_i``.

    The neighbour sum is one sparse (m x m, k entries a row) by (m x q) product. A row whose
    aggregated mass on its candidates is 0 (possible only with ``alpha = 0``) keeps its
    previous confidences.

    Parameters
    ----------
    Y : ndarray of shape (m, q)
        Current confidences.
    S_bool : ndarray of bool, shape (m, q)
        Candidate sets.
    neighbours : ndarray of int, shape (m, k)
        Neighbour indices (from :func:`knn_indices`).
    alpha : float
        Weight of the example's own confidences.

    Returns
    -------
    Y_new : ndarray of shape (m, q)
    """
    m, k = neighbours.shape
    Bmat = alpha * Y
    if k:
        W = sp.csr_matrix((np.ones(m * k), neighbours.ravel(), np.arange(0, m * k + 1, k)), shape=(m, m))
        Bmat = Bmat + W @ Y
    Bmat = np.where(S_bool, Bmat, 0.0)
    total = Bmat.sum(axis=1, keepdims=True)
    ok = total[:, 0] > 0
    Y_new = np.array(Y, copy=True)
    Y_new[ok] = Bmat[ok] / total[ok]
    return Y_new


def subspace_distance(P1: np.ndarray, P2: np.ndarray) -> float:
    """``sin`` of the largest principal angle between ``span(P1)`` and ``span(P2)``.

    Equals ``||Q1 Q1^T - Q2 Q2^T||_2`` for orthonormal bases ``Q``: invariant to column
    signs, order and scaling; 1.0 when the dimensions differ.
    """
    if P1.shape != P2.shape:
        return 1.0
    if P1.shape[1] == 0:
        return 0.0
    Q1, _ = np.linalg.qr(P1)
    Q2, _ = np.linalg.qr(P2)
    # ||(I - Q1 Q1^T) Q2||_2 = sin(theta_max), accurate also for tiny angles
    return float(min(1.0, np.linalg.norm(Q2 - Q1 @ (Q1.T @ Q2), 2)))
