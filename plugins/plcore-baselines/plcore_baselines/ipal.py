"""IPAL: instance-based partial-label learning (Zhang & Yu, IJCAI 2015).

Published description followed: M.-L. Zhang and F. Yu, "Solving the partial label learning
problem: an instance-based approach", IJCAI 2015, 4048-4054 (Table 1 and Eqs. (1)-(8)), with
the details the text leaves open taken from the authors' public MATLAB code (``IPAL_train.m``,
``IPAL_predict.m``): rows L2-normalised (``normr``) before everything, row-normalised
propagation matrix, class mass from the initial confidences. alpha = 0.95 as in the CENDA
paper (Bao, Hang & Zhang, KDD 2021, Section 4.1).

0. **row normalisation** (authors' code, not in the paper's text): training and test rows are
   scaled to unit L2 norm (MATLAB ``normr``; zero rows stay zero) unless
   ``row_normalize=False``. On lost (z-scored) this moves 10-fold accuracy from 0.58 to 0.73.
1. **graph** (Eq. 1): for every training example ``x_i`` and its ``k`` nearest neighbours
   ``N(i)``, ``w_i = argmin_{w >= 0} ||x_i - sum_{j in N(i)} w_ij x_j||^2`` -- all ``n``
   non-negative least-squares problems are solved exactly by Lawson-Hanson's active-set
   method on each row's Gram form, all rows in one compiled loop (``neighbour_nnls`` in the
   private ``plcore_baselines._nnls``; ``nnls_solver="osqp"``: the earlier single
   block-diagonal OSQP problem, ``batched_nnls`` in ``plcore_baselines._ipal``);
2. **propagation** (Eqs. 2-5): ``W[j, i] = w_ij`` (edge ``x_j -> x_i``), ``H = W D^-1`` with
   ``D = diag(column sums of W)``, so ``(H^T F)_i`` is the reconstruction-weighted mean of the
   neighbours' confidences (the authors' ``trans = diag(1/sumW) * W^T``); ``F0`` is uniform on
   each candidate set (Eq. 3); ``F~ = alpha H^T F + (1 - alpha) F0`` (Eq. 4), then each row is
   rescaled onto its candidates (Eq. 5); ``T = max_iter`` (100) iterations (the authors' code
   also stops once ``||F_t - F_{t-1}||_2 < 1e-4``; on lost this changes nothing);
3. **disambiguation** (Eqs. 6-7): class-mass normalisation -- column ``c`` of ``F`` is scaled by
   ``sum_i F0[i, c] / sum_i F[i, c]`` and ``y^_i`` is the argmax over the candidates of ``x_i``;
4. **prediction** (Eq. 8): for a test ``x`` the weights ``w`` on its ``k`` nearest training
   examples solve the same NNLS problem; the prediction is
   ``argmin_c ||x - sum_{j in N(x), y^_j = c} w_j x_j||``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted

from plcore.base import BaseLearner
from plcore.neighbors import NeighborIndex
from plcore.utils import normalise_rows, uniform_confidences
from plcore.validation import Integral, Interval, Real, StrOptions

from plcore_baselines._ipal import batched_nnls, class_mass_normalise, propagate, reconstruction_errors
from plcore_baselines._nnls import neighbour_nnls

__all__ = ["IpalLearner"]


class IpalLearner(BaseLearner):
    """IPAL: instance-based partial-label learning by iterative label propagation.

    Zhang & Yu, IJCAI 2015 (see the module docstring for the steps and equations followed).

    Parameters
    ----------
    k : int, default=10
        Neighbours of the reconstruction graph and of the prediction (capped at ``n - 1`` for
        the graph and ``n`` for prediction).
    alpha : float in [0, 1), default=0.95
        Balancing coefficient of the propagation (Eq. 4); the paper's value.
    max_iter : int, default=100
        Number of propagation iterations ``T`` (all are run, as in the paper).
    row_normalize : bool, default=True
        Scale training and test rows to unit L2 norm first, as the authors' code does
        (``normr`` in ``IPAL_train.m`` / ``IPAL_predict.m``). ``False`` runs the paper's
        equations on the features as given.
    osqp_options : dict, optional
        OSQP settings for ``nnls_solver="osqp"`` (defaults
        ``plcore_baselines._ipal.DEFAULT_OSQP``).
    n_jobs : int, optional
        Parallel jobs of the neighbour search.
    nnls_solver : {"active_set", "osqp"}, default="active_set"
        Solver of the NNLS problems of Eqs. (1) and (8). ``"active_set"``: exact Lawson-Hanson
        per row on the Gram form, one compiled loop (``plcore_baselines._nnls``; the algorithm
        of ``scipy.optimize.nnls`` and of the authors' ``lsqnonneg``). ``"osqp"``: the earlier
        single block-diagonal OSQP problem (``plcore_baselines._ipal.batched_nnls``), slow when
        duplicate rows make the minimisers non-unique.

    Attributes
    ----------
    classes_ : ndarray of shape (q,)
    confidences_ : ndarray of shape (n_train, q)
        Class-mass-normalised labelling confidences (Eqs. 6-7): zero off the candidates, rows
        sum to 1; the row-wise argmax is the disambiguated label.
    propagated_confidences_ : ndarray of shape (n_train, q)
        ``F`` after the last propagation step (Eq. 5), before class-mass normalisation.
    disambiguated_ : ndarray of shape (n_train,)
        Indices (into ``classes_``) of the disambiguated training labels ``y^_i``.
    weights_ : scipy.sparse.csr_matrix of shape (n_train, n_train)
        Row ``i`` holds the NNLS reconstruction weights ``w_ij`` of ``x_i`` (``W^T``), computed
        on the row-normalised features when ``row_normalize``.
    n_iter_ : int
        Propagation iterations run (``max_iter``).
    n_features_in_ : int

    References
    ----------
    M.-L. Zhang, F. Yu. Solving the partial label learning problem: an instance-based approach.
    IJCAI 2015, 4048-4054.
    """

    def __init__(self, k=10, alpha=0.95, max_iter=100, row_normalize=True, osqp_options=None,
                 n_jobs=None, nnls_solver="active_set"):
        self.k = k
        self.alpha = alpha
        self.max_iter = max_iter
        self.row_normalize = row_normalize
        self.nnls_solver = nnls_solver
        self.osqp_options = osqp_options
        self.n_jobs = n_jobs

    _parameter_constraints = {
        "k": [Interval(Integral, 1, None, closed="left")],
        "alpha": [Interval(Real, 0.0, 1.0, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "row_normalize": ["boolean"],
        "nnls_solver": [StrOptions({"active_set", "osqp"})],
        "osqp_options": [Mapping, None],
        "n_jobs": [Integral, None],
    }

    def _osqp(self):
        return dict(self.osqp_options) if self.osqp_options else None

    def _nnls(self, X, R, neighbours):
        """Eq. (1) for every row of ``X``: weights (n, k), Gram blocks (n, k, k) and ``N_i x_i``."""
        if self.nnls_solver == "osqp":
            return batched_nnls(X, R, neighbours, self._osqp())
        return neighbour_nnls(X, R, neighbours)

    def _fit(self, X, S):
        if self.row_normalize:
            X = normalise_rows(X)                                           # authors' normr
        n, q = S.shape
        F0 = uniform_confidences(S)                                         # Eq. (3)
        k_graph = min(int(self.k), n - 1)
        if k_graph >= 1:
            nbr = NeighborIndex(X, n_jobs=self.n_jobs).kneighbors(None, k_graph, return_distance=False)
            w, _, _ = self._nnls(X, X, nbr)                                   # Eq. (1)
            self.weights_ = sp.csr_matrix(
                (w.ravel(), nbr.ravel(), np.arange(0, n * k_graph + 1, k_graph)), shape=(n, n))
        else:
            self.weights_ = sp.csr_matrix((n, n))
        # H = W D^-1 (D = column sums of W = row sums of weights_), so H^T = D^-1 weights_
        d = np.asarray(self.weights_.sum(axis=1)).ravel()
        inv = np.divide(1.0, d, out=np.zeros_like(d), where=d > 0)
        HT = sp.diags(inv) @ self.weights_
        F = propagate(HT.tocsr(), F0, S, float(self.alpha), self.max_iter)  # Eqs. (4)-(5)
        self.propagated_confidences_ = F
        self.n_iter_ = int(self.max_iter)
        self.confidences_ = class_mass_normalise(F, F0)                      # Eqs. (6)-(7)
        self.disambiguated_ = np.argmax(self.confidences_, axis=1)
        self._X = X
        self._q = q
        self._nn = NeighborIndex(X, n_jobs=self.n_jobs)
        self._n_neighbors = min(int(self.k), n)
        return self

    def _scores(self, X):
        """Negative reconstruction errors of Eq. (8), shape (n, q); argmax = prediction."""
        if self.row_normalize:
            X = normalise_rows(X)
        nbr = self._nn.kneighbors(X, self._n_neighbors, return_distance=False)
        w, G, b = self._nnls(X, self._X, nbr)
        return -reconstruction_errors(X, w, G, b, self.disambiguated_[nbr], self._q)

    def reconstruction_errors(self, X):
        """Per-class reconstruction errors of Eq. (8) for the rows of ``X``, shape (n, q).

        Measured on the row-normalised features when ``row_normalize``.
        """
        check_is_fitted(self)
        return -self._scores(self._validate_predict(X))
