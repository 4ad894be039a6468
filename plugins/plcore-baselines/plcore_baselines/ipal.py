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
   non-negative least-squares problems are solved as ONE block-diagonal OSQP problem
   (:func:`batched_nnls`);
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
import osqp
import scipy.sparse as sp
from sklearn.neighbors import NearestNeighbors
from sklearn.utils.validation import check_is_fitted

from plcore.base import BaseLearner
from plcore.utils import (normalise_rows, osqp_settings, osqp_solution, uniform_confidences,
                          upper_block_pattern)
from plcore.validation import Integral, Interval, Real

__all__ = ["IpalLearner", "batched_nnls", "propagate", "class_mass_normalise",
           "reconstruction_errors", "normalise_rows", "DEFAULT_OSQP"]

#: OSQP defaults: with solution polishing the weights equal an exact NNLS solution (to ~1e-12)
#: when it is unique (d >= k in general position); otherwise accurate to ~1e-6.
_OSQP_EPS, _OSQP_MAX_ITER = 1e-6, 100_000
DEFAULT_OSQP = osqp_settings(_OSQP_EPS, max_iter=_OSQP_MAX_ITER)

_CHUNK_ELEMS = 4_000_000  # gathered neighbour blocks are built in row chunks of this size


def _gram_blocks(X, R, neighbours):
    """``G[i] = N_i N_i^T`` (n, k, k) and ``b[i] = N_i x_i`` (n, k), ``N_i = R[neighbours[i]]``."""
    n, k = neighbours.shape
    d = R.shape[1]
    G = np.empty((n, k, k))
    b = np.empty((n, k))
    step = max(1, _CHUNK_ELEMS // max(1, k * d))
    for a in range(0, n, step):
        z = min(n, a + step)
        N = R[neighbours[a:z]]                       # (chunk, k, d)
        G[a:z] = np.einsum("nkd,nld->nkl", N, N)
        b[a:z] = np.einsum("nkd,nd->nk", N, X[a:z])
    return G, b


def batched_nnls(X, R, neighbours, settings=None):
    """Non-negative reconstruction weights of Eq. (1) for every row of ``X``, one OSQP call.

    Solves ``min_{w_i >= 0} ||X[i] - sum_s w_i[s] R[neighbours[i, s]]||^2`` for all ``i`` at
    once: with ``G_i = N_i N_i^T`` and ``b_i = N_i x_i`` this is the QP
    ``min 0.5 w'(2 G_i / s_i) w - (2 b_i / s_i)' w, w >= 0``, stacked block-diagonally
    (``s_i = trace(G_i) / k`` equilibrates the blocks; it does not change the minimiser).

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Points to reconstruct.
    R : ndarray of shape (n_ref, d)
        Reference points (the training set).
    neighbours : ndarray of int, shape (n, k)
        Indices into ``R`` of each point's neighbours.
    settings : dict, optional
        OSQP settings overriding :data:`DEFAULT_OSQP`.

    Returns
    -------
    w : ndarray of shape (n, k)
        Non-negative weights (row ``i`` in the order of ``neighbours[i]``).
    G, b : ndarray
        The Gram blocks (n, k, k) and ``N_i x_i`` (n, k), reused by the prediction step.
    """
    neighbours = np.asarray(neighbours, dtype=np.intp)
    n, k = neighbours.shape
    G, b = _gram_blocks(X, R, neighbours)
    scale = np.trace(G, axis1=1, axis2=2) / k
    scale = np.where(scale > 0, scale, 1.0)
    indptr, indices, r, c = upper_block_pattern(n, k)
    Px = (2.0 * G[:, r, c] / scale[:, None]).ravel()
    P = sp.csc_matrix((Px, indices, indptr), shape=(n * k, n * k))
    q = (-2.0 * b / scale[:, None]).ravel()
    A = sp.identity(n * k, format="csc")
    solver = osqp.OSQP()
    solver.setup(P, q, A, np.zeros(n * k), np.full(n * k, np.inf),
                 **osqp_settings(_OSQP_EPS, max_iter=_OSQP_MAX_ITER, overrides=settings))
    res = solver.solve(raise_error=False)
    x = osqp_solution(res, "IPAL reconstruction-weight",
                      accept=("solved", "solved inaccurate", "maximum iterations reached"))
    w = np.clip(x.reshape(n, k), 0.0, None)
    return w, G, b


def propagate(HT, F0, S, alpha, n_iter):
    """Eqs. (4)-(5): ``n_iter`` times ``F~ = alpha H^T F + (1 - alpha) F0``, rescaled onto ``S``.

    ``HT`` is ``H^T`` (sparse or dense, (n, n)); ``F0`` (n, q) the initial confidences and ``S``
    the boolean candidate matrix. Rows stay on their candidates and sum to 1.
    """
    F = F0
    for _ in range(int(n_iter)):
        Ft = alpha * (HT @ F) + (1.0 - alpha) * F0
        Ft = np.where(S, Ft, 0.0)
        F = Ft / Ft.sum(axis=1, keepdims=True)
    return F


def class_mass_normalise(F, F0):
    """Eqs. (6)-(7): scale class ``c`` by ``sum_i F0[i, c] / sum_i F[i, c]``; rows renormalised.

    Returns the normalised confidences (rows sum to 1, zero off the candidates); their row-wise
    argmax is IPAL's disambiguated label.
    """
    mass0, mass = F0.sum(axis=0), F.sum(axis=0)
    ratio = np.divide(mass0, mass, out=np.zeros_like(mass), where=mass > 0)
    Fc = F * ratio
    return Fc / Fc.sum(axis=1, keepdims=True)


def reconstruction_errors(X, w, G, b, neighbour_labels, n_classes):
    """Eq. (8): ``||x - sum_{j: y^_j = c} w_j x_j||`` for every row and class, (n, q).

    Uses ``||x - N_c' w_c||^2 = ||x||^2 - 2 w_c' b_c + w_c' G_cc w_c`` with the Gram blocks of
    the weight step, so no (n, q, d) array is formed. Classes without a neighbour get ``||x||``.
    """
    n, k = neighbour_labels.shape
    same = neighbour_labels[:, :, None] == neighbour_labels[:, None, :]
    quad = np.einsum("nk,nkl,nl->nk", w, np.where(same, G, 0.0), w)  # row s: w_s sum_t G_st w_t
    contrib = quad - 2.0 * w * b
    r2 = np.repeat(np.einsum("nd,nd->n", X, X)[:, None], n_classes, axis=1)
    np.add.at(r2, (np.repeat(np.arange(n), k), neighbour_labels.ravel()), contrib.ravel())
    return np.sqrt(np.maximum(r2, 0.0))


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
        OSQP settings for the batched NNLS problems (defaults :data:`DEFAULT_OSQP`).
    n_jobs : int, optional
        Parallel jobs of the neighbour search.

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
                 n_jobs=None):
        self.k = k
        self.alpha = alpha
        self.max_iter = max_iter
        self.row_normalize = row_normalize
        self.osqp_options = osqp_options
        self.n_jobs = n_jobs

    _parameter_constraints = {
        "k": [Interval(Integral, 1, None, closed="left")],
        "alpha": [Interval(Real, 0.0, 1.0, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "row_normalize": ["boolean"],
        "osqp_options": [Mapping, None],
        "n_jobs": [Integral, None],
    }

    def _osqp(self):
        return dict(self.osqp_options) if self.osqp_options else None

    def _fit(self, X, S):
        if self.row_normalize:
            X = normalise_rows(X)                                           # authors' normr
        n, q = S.shape
        F0 = uniform_confidences(S)                                         # Eq. (3)
        k_graph = min(int(self.k), n - 1)
        if k_graph >= 1:
            nbr = NearestNeighbors(n_neighbors=k_graph, n_jobs=self.n_jobs).fit(X).kneighbors(
                return_distance=False)
            w, _, _ = batched_nnls(X, X, nbr, self._osqp())                   # Eq. (1)
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
        self._nn = NearestNeighbors(n_neighbors=min(int(self.k), n), n_jobs=self.n_jobs).fit(X)
        return self

    def _scores(self, X):
        """Negative reconstruction errors of Eq. (8), shape (n, q); argmax = prediction."""
        if self.row_normalize:
            X = normalise_rows(X)
        nbr = self._nn.kneighbors(X, return_distance=False)
        w, G, b = batched_nnls(X, self._X, nbr, self._osqp())
        return -reconstruction_errors(X, w, G, b, self.disambiguated_[nbr], self._q)

    def reconstruction_errors(self, X):
        """Per-class reconstruction errors of Eq. (8) for the rows of ``X``, shape (n, q).

        Measured on the row-normalised features when ``row_normalize``.
        """
        check_is_fitted(self)
        return -self._scores(self._validate_predict(X))
