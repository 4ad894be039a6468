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

import copy
from collections.abc import Mapping

import numpy as np
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.utils.validation import check_is_fitted

from plcore.base import BaseLearner
from plcore.neighbors import LastQueryCache, NeighborIndex
from plcore.utils import normalise_rows, uniform_confidences
from plcore.validation import Integral, Interval, Real, StrOptions

from plcore_baselines._ipal import (batched_nnls, class_mass_normalise, propagate, propagate_path,
                                    reconstruction_errors)
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

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.pll_tags.path_params = ("alpha", "max_iter")
        return tags

    def _fit(self, X, S):
        self.__dict__.pop("_queries", None)   # a fit_path learner refitted: its shared queries are another fit's
        self._fit_graph(X, S)
        self._disambiguate(_transition(self.weights_), S)
        return self

    def _fit_graph(self, X, S):
        """What does not depend on alpha: the rows (row-normalised), the graph, the index."""
        if self.row_normalize:
            X = normalise_rows(X)                                           # authors' normr
        self.weights_ = self._graph(X)
        self._X = X
        self._q = S.shape[1]
        self._nn = NeighborIndex(X, n_jobs=self.n_jobs)
        self._n_neighbors = min(int(self.k), X.shape[0])

    def _graph(self, X):
        """Eq. (1): row ``i`` holds the NNLS weights of ``x_i`` on its ``k`` nearest rows (``W^T``)."""
        n = X.shape[0]
        k_graph = min(int(self.k), n - 1)
        if k_graph < 1:
            return sp.csr_matrix((n, n))
        nbr = NeighborIndex(X, n_jobs=self.n_jobs).kneighbors(None, k_graph, return_distance=False)
        w, _, _ = self._nnls(X, X, nbr)
        return sp.csr_matrix((w.ravel(), nbr.ravel(), np.arange(0, n * k_graph + 1, k_graph)), shape=(n, n))

    def _disambiguate(self, HT, S, F=None):
        """Eqs. (3)-(7): propagation from the uniform ``F0`` (or its result ``F``, given) and
        class-mass normalisation."""
        F0 = uniform_confidences(S)                                         # Eq. (3)
        if F is None:
            F = propagate(HT, F0, S, float(self.alpha), self.max_iter)      # Eqs. (4)-(5)
        self.propagated_confidences_ = F
        self.n_iter_ = int(self.max_iter)
        self.confidences_ = class_mass_normalise(F, F0)                      # Eqs. (6)-(7)
        self.disambiguated_ = np.argmax(self.confidences_, axis=1)

    def fit_path(self, X, y, points):
        """One fitted learner per ``{alpha, max_iter}`` dict of ``points`` (tag ``path_params``),
        each predicting as ``clone(self).set_params(**point).fit(X, y)``: the graph of Eq. (1)
        is solved once and every point propagates on it together (``propagate_path``: one sparse
        product per iteration for all alphas); the queries' neighbours and Eq. (8)
        weights, which do not depend on alpha, are computed once per query set."""
        unknown = sorted({p for point in points for p in point} - {"alpha", "max_iter"})
        if unknown:
            raise ValueError(f"IpalLearner.fit_path searches alpha and max_iter only, got {', '.join(unknown)}")
        base = clone(self).set_params(**points[0])
        X, S = base._validate_fit(X, y)
        base._fit_graph(X, S)
        learners = [copy.copy(base).set_params(**{"alpha": self.alpha, "max_iter": self.max_iter, **point})
                    for point in points]
        Fs = propagate_path(_transition(base.weights_), uniform_confidences(S), S,
                            [float(m.alpha) for m in learners], [int(m.max_iter) for m in learners])
        queries = LastQueryCache()
        fitted = []
        for learner, F in zip(learners, Fs):
            learner._disambiguate(None, S, F)
            learner._queries = queries
            fitted.append(learner)
        return fitted

    def _scores(self, X):
        """Negative reconstruction errors of Eq. (8), shape (n, q); argmax = prediction."""
        if self.row_normalize:
            X = normalise_rows(X)
        queries = self.__dict__.get("_queries")
        nbr, w, G, b = self._query_weights(X) if queries is None else queries.get(X, self._query_weights)
        return -reconstruction_errors(X, w, G, b, self.disambiguated_[nbr], self._q)

    def _query_weights(self, X):
        """The queries' ``k`` nearest training rows and their Eq. (8) NNLS weights, Gram blocks, ``N x``."""
        nbr = self._nn.kneighbors(X, self._n_neighbors, return_distance=False)
        return (nbr, *self._nnls(X, self._X, nbr))

    def reconstruction_errors(self, X):
        """Per-class reconstruction errors of Eq. (8) for the rows of ``X``, shape (n, q).

        Measured on the row-normalised features when ``row_normalize``.
        """
        check_is_fitted(self)
        return -self._scores(self._validate_predict(X))


def _transition(weights):
    """``H^T = D^-1 weights`` (Eq. 2: ``H = W D^-1``, ``D`` the column sums of ``W``, which are the
    row sums of ``weights = W^T``): ``(H^T F)_i`` is the weighted mean of the neighbours' ``F``."""
    d = np.asarray(weights.sum(axis=1)).ravel()
    inv = np.divide(1.0, d, out=np.zeros_like(d), where=d > 0)
    return (sp.diags(inv) @ weights).tocsr()
