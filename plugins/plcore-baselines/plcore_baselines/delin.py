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
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from plcore.base import BaseReducer
from plcore.exceptions import DataValidationError
from plcore.progress import iterations
from plcore.utils import uniform_confidences
from plcore.validation import Integral, Interval, Real, StrOptions

from plcore_baselines._delin import knn_disambiguation, weighted_lda

_UPDATES = ("vote", "aggregate")

__all__ = ["DelinReducer"]


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

    _data_limits = {"n_components": ("n_features", "n_classes")}  # the exact LDA bound q - 1: in fit
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
        for it in iterations(range(1, int(self.max_iter) + 1), "DELIN iterations", int(self.max_iter)):
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
