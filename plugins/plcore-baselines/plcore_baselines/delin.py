"""DELIN: disambiguation enabled linear discriminant analysis (Wu & Zhang, KDD 2019).

Published description followed: J.-H. Wu and M.-L. Zhang, "Disambiguation enabled linear
discriminant analysis for partial label dimensionality reduction", KDD 2019, 416-424 (journal
version: Zhang, Wu & Bao, TKDD 16(4), 2022), as summarised in the CENDA paper (Bao, Hang &
Zhang, KDD 2021, Sections 1-2 and 4.1: LDA on disambiguated labelling confidences, k = 8, at most
q - 1 dimensions), and the authors' released MATLAB driver ``DELIN.m`` for the order of the steps,
the stopping rule and the confidence update. DELIN alternates

1. **confidence-weighted LDA**: with confidences ``F`` (n x q, rows on the candidates, sum 1),
   class masses ``m_c = sum_i F_ic``, class means ``mu_c = sum_i F_ic x_i / m_c`` and the overall
   mean ``mu``, the scatter matrices (here divided by ``n``, i.e. covariances)
   ``S_b = sum_c m_c (mu_c - mu)(mu_c - mu)^T / n`` and
   ``S_w = sum_c sum_i F_ic (x_i - mu_c)(x_i - mu_c)^T / n``; the projection ``P`` holds the
   top ``d'`` generalised eigenvectors of ``S_b p = lambda (S_w + r I) p`` (``d' <= q - 1``,
   the rank of ``S_b``), scaled so that ``P^T (S_w + r I) P = I`` (as scikit-learn's
   ``LinearDiscriminantAnalysis(solver="eigen")``); with one-hot ``F`` this *is* LDA;
2. **kNN disambiguation** in the projected space ``Z = X P`` (``DELIN.m``): for each example its
   ``k`` nearest neighbours ``a = 1..k`` (nearest first) vote for its candidates with weight
   ``k - a + 1`` times their confidences; the winning candidate(s) ``B_i`` (ties broken by the
   number of neighbours with non-zero confidence on the label, ``v_i``) get confidence
   ``v_i / k`` each, the other candidates share ``1 - |B_i| v_i / k`` equally, and the row is
   renormalised; rows where all candidates tie or no neighbour votes are left unchanged;

from ``F`` uniform on the candidates, until ``F`` stops changing (``max |dF| <= tol``) or
``max_iter`` updates. ``transform(X) = X P``.

Sources: the paper's full text was not available to us. ``DELIN.m`` (the authors'
driver, found by code search) fixes the alternation, the exact-repeat stopping rule and the
update ``v_i / k`` for the winners and ``(1 - |B_i| v_i / k) / |S_i - B_i|`` for the other
candidates; how the winners and ``v_i`` are found (rank weights ``k - a + 1``, ties by count)
comes from a third-party Python port of its ``KNN_disambiguation.m`` (a random tie-break there
is made deterministic here: the lowest label index). ``update="aggregate"`` swaps step 2 for
CENDA's kNN aggregation (Bao et al. 2021, Eqs. 13-14) for comparison.

``S_w + r I = (S_t + r I) - S_b`` with the total scatter ``S_t`` fixed, so ``S_t + r I`` is
Cholesky-factored once and each LDA step is a thin SVD of a d x q matrix (no d x d
eigendecomposition per iteration): the eigenpairs of ``S_b p = mu (S_t + r I) p`` are those of
the problem above with ``lambda = mu / (1 - mu)``.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.linalg as sla
from sklearn.exceptions import ConvergenceWarning
from sklearn.neighbors import NearestNeighbors
from sklearn.utils.validation import check_is_fitted

from plcore.base import BaseReducer
from plcore.exceptions import DataValidationError
from plcore.utils import flip_signs, uniform_confidences
from plcore.validation import Integral, Interval, Real, StrOptions

_UPDATES = ("vote", "aggregate")

__all__ = ["DelinReducer", "weighted_scatter", "weighted_lda", "knn_disambiguation"]


def weighted_scatter(X, F):
    """Confidence-weighted ``(S_t, S_b, S_w)`` (d x d each, divided by ``sum F = n``).

    Dense reference formulas (O(n d^2)); :func:`weighted_lda` never forms ``S_b`` or ``S_w``.
    """
    mass = F.sum(axis=0)
    total = mass.sum()
    mu = F.sum(axis=1) @ X / total
    Xc = X - mu
    St = (Xc * F.sum(axis=1)[:, None]).T @ Xc / total
    C = Xc.T @ F                                     # column c: m_c (mu_c - mu)
    inv = np.divide(1.0, mass, out=np.zeros_like(mass), where=mass > 0)
    Sb = (C * inv) @ C.T / total
    return St, Sb, St - Sb


def _factor_total(X, F, reg):
    """Cholesky factor ``L`` of ``S_t + r I`` (``r = reg * trace(S_t) / d``), centred data."""
    d = X.shape[1]
    total = F.sum()
    mu = F.sum(axis=1) @ X / total
    Xc = X - mu
    St = (Xc * F.sum(axis=1)[:, None]).T @ Xc / total
    scale = float(np.trace(St)) / d if d else 1.0
    scale = scale if scale > 0 else 1.0
    ridge = float(reg) * scale
    for extra in [0.0] + [10.0 ** e for e in range(-12, 1)]:
        r = ridge + extra * scale
        try:
            L = sla.cholesky(St + r * np.eye(d), lower=True)
        except sla.LinAlgError:
            continue
        if extra > 0:
            warnings.warn(
                f"DELIN: the total scatter matrix is singular (collinear or constant features, or "
                f"d > n); added a ridge {r:.3g} (reg={reg} was not enough)", UserWarning,
                stacklevel=4)
        return L, r, Xc
    raise np.linalg.LinAlgError("DELIN: could not factor the total scatter matrix")


def weighted_lda(X, F, n_components, reg=1e-6, factor=None):
    """Confidence-weighted LDA projection (step 1 of DELIN).

    Parameters
    ----------
    X : ndarray of shape (n, d)
    F : ndarray of shape (n, q)
        Labelling confidences (non-negative, rows sum to 1).
    n_components : int
        ``d'`` (at most ``d``; beyond the rank of ``S_b`` the eigenvalues are 0).
    reg : float
        Relative ridge: ``S_w`` is regularised by ``reg * trace(S_t) / d * I``.
    factor : tuple, optional
        ``(L, ridge, Xc)`` from a previous call with the same ``X`` (``S_t`` does not depend on
        ``F`` when rows of ``F`` sum to one).

    Returns
    -------
    P : ndarray of shape (d, n_components)
        Generalised eigenvectors of ``S_b p = lambda (S_w + r I) p``, eigenvalues decreasing,
        ``P^T (S_w + r I) P = I``.
    eigenvalues : ndarray of shape (n_components,)
    factor : tuple
        ``(L, ridge, Xc)`` for reuse.
    """
    if factor is None:
        factor = _factor_total(X, F, reg)
    L, ridge, Xc = factor
    d = X.shape[1]
    n = F.sum()
    mass = F.sum(axis=0)
    keep = mass > 0
    C = (Xc.T @ F[:, keep]) / np.sqrt(mass[keep] * n)       # S_b = C C^T
    Gm = sla.solve_triangular(L, C, lower=True)             # L^-1 C
    U, s, _ = np.linalg.svd(Gm, full_matrices=False)
    mu = s ** 2                                             # S_b p = mu (S_t + r I) p
    if U.shape[1] < n_components:                           # complete with zero-eigenvalue directions
        Q, _ = np.linalg.qr(np.hstack([U, np.eye(d)]))
        U = np.hstack([U, Q[:, U.shape[1]:n_components]])
        mu = np.concatenate([mu, np.zeros(n_components - mu.size)])
    U, mu = U[:, :n_components], np.clip(mu[:n_components], 0.0, None)
    V = sla.solve_triangular(L.T, U, lower=False)           # V^T (S_t + r I) V = I
    one_minus = np.maximum(1.0 - mu, 1e-12)
    P = V / np.sqrt(one_minus)                              # P^T (S_w + r I) P = I
    return flip_signs(P), mu / one_minus, factor


def knn_disambiguation(Z, F, S, k, n_jobs=None, update="vote"):
    """Step 2 of DELIN (``DELIN.m``): kNN update of the confidences in the projected space.

    Parameters
    ----------
    Z : ndarray of shape (n, d')
        Projected training data.
    F : ndarray of shape (n, q)
        Current confidences.
    S : ndarray of bool, shape (n, q)
        Candidate matrix.
    k : int
        Neighbours (capped at ``n - 1``).
    n_jobs : int, optional
        Parallel jobs of the neighbour search (a KD-tree up to 8 projected dimensions,
        scikit-learn's chunked brute force above: trees are slow at d' ~ 15).
    update : {"vote", "aggregate"}
        ``"vote"``: the rule of ``DELIN.m`` (module docstring); ``"aggregate"``: the kNN
        aggregation of CENDA (Eqs. 13-14 with alpha = 1), ``F_i + sum_a F_{n_a(i)}``
        restricted to the candidates and renormalised.

    Returns
    -------
    ndarray of shape (n, q)
        Updated confidences (zero off the candidates, rows sum to 1).
    """
    n, q = F.shape
    k = min(int(k), n - 1)
    if k < 1:
        return F.copy()
    algorithm = "kd_tree" if Z.shape[1] <= 8 else "brute"
    nbr = NearestNeighbors(n_neighbors=k, algorithm=algorithm, n_jobs=n_jobs).fit(Z).kneighbors(
        return_distance=False)
    Fn = F[nbr]                                              # (n, k, q), nearest first
    if update == "aggregate":
        B = np.where(S, F + Fn.sum(axis=1), 0.0)
        return B / B.sum(axis=1, keepdims=True)
    omega = np.arange(k, 0, -1, dtype=np.float64)            # k - a + 1
    score = np.where(S, np.einsum("nkq,k->nq", Fn, omega), -np.inf)
    count = np.where(S, (Fn > 0).sum(axis=1), -1)
    top = score.max(axis=1, keepdims=True)
    best = S & (score >= top - 1e-12 * np.maximum(1.0, np.abs(top)))
    votes = np.where(best, count, -1).max(axis=1)
    best &= count == votes[:, None]
    n_best = best.sum(axis=1)
    over = votes * n_best > k                                # cannot give each v/k: keep the first
    if over.any():
        first = np.zeros_like(best)
        first[np.arange(n), np.argmax(best, axis=1)] = True
        best[over] = first[over]
        n_best = best.sum(axis=1)
    n_cand = S.sum(axis=1)
    unchanged = (top[:, 0] <= 0) | (n_best == n_cand)
    rest = np.maximum(1.0 - votes * n_best / k, 0.0) / np.maximum(n_cand - n_best, 1)
    G = np.where(best, (votes / k)[:, None], np.where(S, rest[:, None], 0.0))
    sums = G.sum(axis=1, keepdims=True)
    G = np.divide(G, sums, out=np.zeros_like(G), where=sums > 0)
    return np.where(unchanged[:, None], F, G)


class DelinReducer(BaseReducer):
    """DELIN: partial-label dimensionality reduction by disambiguation-enabled LDA.

    Wu & Zhang, KDD 2019 (see the module docstring for the steps followed).

    Parameters
    ----------
    n_components : int or None, default=None
        ``d'``; None means ``min(q - 1, d)``. At most ``min(q - 1, d)`` (LDA's rank bound). The
        CENDA paper sets it equal to CENDA's ``d'`` for its comparisons.
    k : int, default=8
        Neighbours of the kNN disambiguation (the CENDA paper's value; capped at ``n - 1``).
    max_iter : int, default=50
        Maximum number of LDA / disambiguation alternations.
    tol : float >= 0, default=1e-6
        Stop when no confidence changes by more than ``tol``.
    reg : float >= 0, default=1e-6
        Relative ridge on the within-class scatter, ``S_w + reg * trace(S_t) / d * I`` (a
        larger one is added, with a warning, when ``S_t`` is singular).
    update : {"vote", "aggregate"}, default="vote"
        Confidence update of step 2: ``"vote"`` is the rule of the authors' ``DELIN.m``
        (module docstring); ``"aggregate"`` is CENDA's kNN aggregation (Bao et al. 2021,
        Eqs. 13-14, alpha = 1), which converges more often and gave higher accuracy on lost
        (README_ipal_delin.md).
    n_jobs : int, optional
        Parallel jobs of the neighbour search.

    Attributes
    ----------
    projection_ : ndarray of shape (n_features, n_components_)
        ``P``; ``transform(X) = X @ P``; ``P^T (S_w + r I) P = I``.
    components_ : ndarray of shape (n_components_, n_features)
        ``P^T`` (scikit-learn's layout).
    n_components_ : int
    eigenvalues_ : ndarray of shape (n_components_,)
        Generalised eigenvalues ``lambda`` of the final projection, decreasing.
    confidences_ : ndarray of shape (n_samples, n_classes)
        The disambiguated labelling confidences (zero off the candidates, rows sum to 1).
    n_iter_ : int
        Disambiguation updates run.
    converged_ : bool
    ridge_ : float
        The absolute ridge ``r`` added to ``S_w``.
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int

    References
    ----------
    J.-H. Wu, M.-L. Zhang. Disambiguation enabled linear discriminant analysis for partial label
    dimensionality reduction. KDD 2019, 416-424.
    """

    def __init__(self, n_components=None, k=8, max_iter=50, tol=1e-6, reg=1e-6, update="vote",
                 n_jobs=None):
        self.n_components = n_components
        self.k = k
        self.max_iter = max_iter
        self.tol = tol
        self.reg = reg
        self.update = update
        self.n_jobs = n_jobs

    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
        "k": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0.0, np.inf, closed="left")],
        "reg": [Interval(Real, 0.0, np.inf, closed="left")],
        "update": [StrOptions(set(_UPDATES))],
        "n_jobs": [Integral, None],
    }

    def _n_components(self, d, q):
        """``d'``: ``n_components`` checked against LDA's rank bound ``min(q - 1, d)``."""
        limit = min(q - 1, d)
        if self.n_components is None:
            return limit
        n_comp = int(self.n_components)
        if n_comp > limit:
            raise DataValidationError(
                f"n_components={n_comp} exceeds min(n_classes - 1, n_features) = min({q - 1}, {d}): "
                "LDA's between-class scatter has rank <= n_classes - 1")
        return n_comp

    def _fit(self, X, S):
        n, d = X.shape
        q = S.shape[1]
        n_comp = self._n_components(d, q)
        F = uniform_confidences(S)
        P, lam, factor = weighted_lda(X, F, n_comp, self.reg)
        converged = False
        for it in range(1, int(self.max_iter) + 1):
            F_new = knn_disambiguation(X @ P, F, S, self.k, self.n_jobs, self.update)
            change = float(np.abs(F_new - F).max())
            F = F_new
            if change <= self.tol:
                converged = True
                break
            P, lam, factor = weighted_lda(X, F, n_comp, self.reg, factor)
        self.projection_ = P
        self.components_ = P.T
        self.n_components_ = int(P.shape[1])
        self.eigenvalues_ = lam
        self.confidences_ = F
        self.n_iter_ = it
        self.converged_ = converged
        self.ridge_ = factor[1]
        if not converged:
            warnings.warn(
                "DELIN: the labelling confidences did not stop changing within max_iter "
                "iterations (the kNN update can cycle); the result is the last iterate",
                ConvergenceWarning, stacklevel=3)
        return self

    def _transform(self, X):
        """``X P``."""
        return X @ self.projection_

    def get_feature_names_out(self, input_features=None):
        """``delin0, delin1, ...``, one name per component."""
        check_is_fitted(self)
        return np.asarray([f"delin{i}" for i in range(self.n_components_)], dtype=object)
