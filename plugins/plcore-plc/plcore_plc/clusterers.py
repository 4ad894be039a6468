"""The clusterers of plcore-plc: PLC and the paper's two baselines.

:class:`PlcClusterer` is partial-label clustering (Xie, Yang & Jia, IJCAI 2025);
:class:`KMeansClusterer` and :class:`SpectralClusterer` are the paper's baseline
clusterers on the same features (they ignore the candidate sets except for the default
number of clusters, ``S.shape[1]``). The numerics live in the private modules
``_graph`` (neighbourhoods, W, T), ``_simplex`` (the compiled F and W steps: Eq. (12)
exactly, Eq. (13) passes, the weight QPs; imported by the first fit, so that listing
components does not load numba), ``_propagation`` (S and D, Eq. (14)) and ``_spectral``.

PLC alternates the optimisation of Eq. (9) (Algorithm 1):

1. W by Eq. (1) (a QP per sample over its k neighbours), F by Eq. (12) solved exactly
   (certified by its duality gap), ``W <- (W + W')/2``;
2. must-links / cannot-links (Eq. (3)) from the pseudo-labels ``argmax F`` of ALL
   samples (labelled and unlabelled), S and D by Eq. (14) (exactly, per pseudo-label
   class; or the demo's dense multiplicative updates Eqs. (16)-(17));
3. ``outer_iter`` times: W by Eq. (11) and symmetrisation, F by a pass of the row
   subproblems Eq. (13) (sequential, as the demo), S and D by Eq. (14);
4. Ng-Jordan-Weiss spectral clustering of W, made connected by a floor on its kNN pattern
   (``plcore_plc._spectral``).

Defaults follow the paper's public demo (DESIGN.md "PLC"). The n weight QPs of a step
are solved in one compiled loop to a certified duality gap, warm-started from the previous
step (``plcore_plc._simplex``). Nothing of size n x n is formed by default: time and memory
grow as n k^2 + n q k.
"""

from __future__ import annotations


import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.cluster import KMeans, SpectralClustering
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from plcore.base import BaseClusterer
from plcore.exceptions import InvalidParameterError
from plcore.progress import iterations
from plcore.utils import normalise_rows, uniform_confidences
from plcore.validation import Integral, Interval, Real, StrOptions

from plcore_plc._graph import gram_blocks, knn, neighbour_sqdist, symmetrise, t_matrix, weights_matrix
from plcore_plc._propagation import classwise_sqdist, propagate_classwise, propagate_constraints
from plcore_plc._spectral import floored_spectral_clustering

__all__ = ["PlcClusterer", "KMeansClusterer", "SpectralClusterer"]

#: non-negative finite weights / tolerances, counts from 0 or 1
_WEIGHT = Interval(Real, 0, np.inf, closed="left")
_COUNT0 = Interval(Integral, 0, None, closed="left")
_COUNT1 = Interval(Integral, 1, None, closed="left")


class PlcClusterer(BaseClusterer):
    """Partial-label clustering (PLC, Xie, Yang & Jia, IJCAI 2025), Algorithm 1.

    Parameters
    ----------
    k : int, default=10
        Neighbours per sample (capped at n - 1).
    alpha : float, default=0.01
        Weight of the dissimilarity propagation ``Tr(D L D')`` (Eqs. (4), (9)).
    beta : float, default=0.01
        Weight of the similarity propagation ``Tr(S L S')``.
    gamma : float, default=10
        Weight of the constraint-fit terms of Eq. (14).
    lam, mu : float, default=1
        Weights of the feature and label Gram matrices in Eq. (11).
    inner_iter : int, default=10
        ``sd_solver="dense"`` only: maximum multiplicative S/D iterations per Eq. (14)
        solve (early stop when the objective stops decreasing).
    outer_iter : int, default=5
        Alternating W / F / (S, D) iterations after the initialisation.
    n_clusters : int, optional
        Number of clusters; default the number of classes ``S.shape[1]`` (8 when
        ``y`` is None).
    f_step : {"sequential", "batched"}, default="sequential"
        The F update of the outer iterations, passes of Eq. (13): ``"sequential"`` updates
        the rows one after the other with the latest values of the others (the public
        demo's pass); ``"batched"`` updates all rows from the same F, then takes the exact
        line-search step of Eq. (12) along the joint direction. Both never increase Eq. (12).
    f_sweeps : int, default=1
        Passes of Eq. (13) per outer iteration.
    f_tol : float, default=1e-5
        The initial F solves Eq. (12) until its duality gap (a bound on the distance to
        the optimum) is at most ``f_tol`` times the objective of uniform confidences.
    sd_solver : {"classwise", "dense"}, default="classwise"
        Eq. (14): ``"classwise"`` solves it exactly as one problem per pseudo-label (it
        separates by rows, and rows with the same pseudo-label share their problem;
        unique for ``gamma > 1/2``) in O(q n) memory; ``"dense"`` runs the demo's
        multiplicative updates on dense n x n S and D from a random start (8 * 6 * n^2
        bytes: 1.2 GB at n = 5000), for comparison.
    sd_tol : float, default=1e-3
        ``sd_solver="dense"``: the S/D iterations stop when Eq. (14)'s objective
        decreases by less than this (the public demo's threshold).
    refresh_constraints : bool, default=False
        Recompute must/cannot-links from the current F at every outer iteration.
        Algorithm 1 (and the public demo) builds them once, after the initial F.
    standardize : bool, default=True
        z-score the features before the (always applied) row L2 normalisation. This is
        idempotent after the clustering protocol's own standardisation.
    n_init : int, default=20
        k-means restarts of the final spectral clustering.
    w_tol : float, default=1e-7
        The weight QPs (Eqs. (1), (11)) stop when each block's duality gap is at most
        ``w_tol`` times the scale of its gradient (``2 lambda_max(Q_j) + max |c_j|``).
    affinity_floor : float, default=0.01
        When the final W has more connected components than clusters (it joins neighbours with
        the same pseudo-label only, and classes fall apart), the top eigenspace of the spectral
        step is not defined; then every edge of the symmetric kNN pattern gets this fraction of
        the mean edge weight of W added (``plcore_plc._spectral.connect_affinity``), which joins
        the pieces, and the embedding keeps one eigenvector per component of W. 0 keeps W as it
        is. Chosen on synthetic mixtures and UCI data with uniform bags (docs/results/plc.md).
    eigen_solver : {"auto", "dense", "lobpcg", "arpack"}, default="auto"
        The spectral embedding's eigensolver: a dense symmetric solver, or LOBPCG (a block
        method, right for repeated eigenvalues, in O(n) memory); ``"auto"`` is dense up to
        ``plcore_plc._spectral.DENSE_MAX`` rows. ``"arpack"``: single-vector Lanczos, plcore's
        solver before 2026-11-25, kept for comparison (it can miss repeated eigenvalues).
    random_state : int, RandomState or None
        Seeds the k-means restarts (and the dense solver's random start of S and D).

    Attributes
    ----------
    labels_ : ndarray of shape (n,)
        Cluster of every sample.
    affinity_ : sparse matrix (n, n)
        The final symmetric weight matrix W (before the floor).
    n_graph_components_ : int
        Connected components of ``affinity_`` (a warning when the embedded affinity, after the
        floor, still has more than ``n_clusters_``).
    confidences_ : ndarray of shape (n, q)
        The final label confidence matrix F (rows on the candidates, sum 1).
    pseudo_labels_ : ndarray of shape (n,)
        ``argmax F`` of the initial confidences (Eq. (12)), used for the pairwise constraints
        (with ``refresh_constraints``: of the last F). The clustering protocol scores it as
        ``pseudo_label_acc``.
    neighbors_ : ndarray of shape (n, k)
    sd_objectives_ : list of ndarray
        Eq. (14) objective of every S/D solve (its trace for ``sd_solver="dense"``).
    f_objectives_ : list of float
        Eq. (12) objective after the initial solve and after every F pass.
    f_init_info_ : dict
        The initial solve's ``n_iter``, duality ``gap`` and ``objective``.
    n_clusters_ : int
    """

    def __init__(self, k=10, alpha=0.01, beta=0.01, gamma=10.0, lam=1.0, mu=1.0, inner_iter=10,
                 outer_iter=5, n_clusters=None, f_step="sequential", f_sweeps=1, f_tol=1e-5,
                 sd_solver="classwise", sd_tol=1e-3, refresh_constraints=False,
                 standardize=True, n_init=20, w_tol=1e-7, affinity_floor=0.01, eigen_solver="auto",
                 random_state=None):
        self.k = k
        self.alpha = alpha
        self.beta = beta
        self.gamma = gamma
        self.lam = lam
        self.mu = mu
        self.inner_iter = inner_iter
        self.outer_iter = outer_iter
        self.n_clusters = n_clusters
        self.f_step = f_step
        self.f_sweeps = f_sweeps
        self.f_tol = f_tol
        self.sd_solver = sd_solver
        self.sd_tol = sd_tol
        self.refresh_constraints = refresh_constraints
        self.standardize = standardize
        self.n_init = n_init
        self.w_tol = w_tol
        self.affinity_floor = affinity_floor
        self.eigen_solver = eigen_solver
        self.random_state = random_state

    _data_limits = {"n_clusters": ("n_samples", "n_classes")}  # a cluster per class at most
    _parameter_constraints = {
        "k": [_COUNT1],
        "alpha": [_WEIGHT],
        "beta": [_WEIGHT],
        "gamma": [_WEIGHT],
        "lam": [_WEIGHT],
        "mu": [_WEIGHT],
        "inner_iter": [_COUNT0],
        "outer_iter": [_COUNT0],
        "n_clusters": [_COUNT1, None],
        "f_step": [StrOptions({"sequential", "batched"})],
        "f_sweeps": [_COUNT0],
        "f_tol": [Interval(Real, 0, np.inf, closed="neither")],
        "sd_solver": [StrOptions({"classwise", "dense"})],
        "sd_tol": [_WEIGHT],
        "refresh_constraints": ["boolean"],
        "standardize": ["boolean"],
        "n_init": [_COUNT1],
        "w_tol": [Interval(Real, 0, np.inf, closed="neither")],
        "affinity_floor": [_WEIGHT],
        "eigen_solver": [StrOptions({"auto", "dense", "lobpcg", "arpack"})],
        "random_state": ["random_state"],
    }

    def _features(self, X):
        Z = np.array(X, dtype=np.float64, copy=True)
        if self.standardize:
            Z -= Z.mean(axis=0)
            sd = Z.std(axis=0)
            Z /= np.where(sd > 0, sd, 1.0)
        return normalise_rows(Z)

    def _weights(self, Q, c, w0):
        """The n weight QPs (Eqs. (1), (11)); warns when a block stops at the iteration cap."""
        from plcore_plc._simplex import solve_simplex_qps  # numba: imported when a fit needs it

        w, info = solve_simplex_qps(Q, c, x0=w0, tol=float(self.w_tol))
        if info["gap_ratio"] > 1.0:
            warnings.warn(f"PLC: a weight QP stopped at its iteration cap with duality gap {info['gap']:.3g}",
                          ConvergenceWarning, stacklevel=4)
        return w

    def _propagate(self, W, pseudo, n_labels, nbr, rng):
        """Eq. (14) for S and D; returns the W step's ``H`` (from D) and ``K`` (from S), (n, k)."""
        if self.sd_solver == "classwise":
            Sg, Dg, counts, obj = propagate_classwise(W, pseudo, n_labels, self.alpha, self.beta, self.gamma)
            self.sd_objectives_.append(np.array([obj]))
            return classwise_sqdist(Dg, counts, nbr), classwise_sqdist(Sg, counts, nbr)
        same = pseudo[:, None] == pseudo[None, :]
        S_, D_, obj = propagate_constraints(W, same, ~same, self.alpha, self.beta, self.gamma,
                                            max_iter=self.inner_iter, rng=rng, tol=self.sd_tol)
        self.sd_objectives_.append(obj)
        return neighbour_sqdist(D_, nbr), neighbour_sqdist(S_, nbr)  # symmetric: rows = columns

    def _fit(self, X, S):
        if self.lam == 0 and self.mu == 0:
            raise InvalidParameterError("lam and mu cannot both be 0 (Eq. (11) needs a quadratic term)")
        n = X.shape[0]
        if S is None:
            Y = np.ones((n, int(self.n_clusters or 8)))
        else:
            Y = np.asarray(S, dtype=np.float64)
        self.n_clusters_ = int(self.n_clusters or Y.shape[1])
        rng = check_random_state(self.random_state)
        km_seed = int(rng.randint(np.iinfo(np.int32).max))
        k = min(int(self.k), n - 1)
        self.sd_objectives_, self.f_objectives_ = [], []
        if k < 1 or n <= self.n_clusters_:
            self.labels_ = np.arange(n) % max(1, self.n_clusters_)
            self.confidences_ = uniform_confidences(Y)
            self.pseudo_labels_ = np.argmax(self.confidences_, axis=1)
            self.affinity_ = sp.csr_matrix((n, n))
            self.n_graph_components_ = n
            self.neighbors_ = np.zeros((n, 0), dtype=np.int64)
            self.f_init_info_ = {}
            return

        from plcore_plc._simplex import batched_pass, objective, sequential_pass, solve_eq12

        Z = self._features(X)
        nbr = knn(Z, k)
        Gx = gram_blocks(Z, nbr)
        # Eq. (1): reconstruction weights from the features only
        w = self._weights(Gx, np.zeros((n, k)), None)
        Wc = weights_matrix(w, nbr)
        # Eq. (12), exactly, with the unsymmetrised W (paper orientation W = Wc')
        F, self.f_init_info_ = solve_eq12(t_matrix(Wc.T), Y, tol=float(self.f_tol))
        if not self.f_init_info_["converged"]:
            warnings.warn(f"PLC: Eq. (12) stopped at its iteration cap with duality gap "
                          f"{self.f_init_info_['gap']:.3g}", ConvergenceWarning, stacklevel=3)
        self.f_objectives_.append(self.f_init_info_["objective"])
        W = symmetrise(Wc)
        pseudo = np.argmax(F, axis=1)
        H, K = self._propagate(W, pseudo, Y.shape[1], nbr, rng)

        for it in iterations(range(int(self.outer_iter)), "PLC outer iterations", int(self.outer_iter)):
            # W step, Eq. (11): n QPs over the simplex, warm-started
            Q = self.lam * Gx + self.mu * gram_blocks(F, nbr)
            w = self._weights(Q, self.alpha * H + self.beta * K, w)
            W = symmetrise(weights_matrix(w, nbr))
            # F step, Eq. (13) passes with T of the current W
            T = t_matrix(W)
            for _ in range(int(self.f_sweeps)):
                F = sequential_pass(T, F, Y) if self.f_step == "sequential" else batched_pass(T, F, Y)[0]
                self.f_objectives_.append(objective(T, F))
            if self.refresh_constraints:
                pseudo = np.argmax(F, axis=1)
            if it == int(self.outer_iter) - 1:
                break  # Algorithm 1's last S/D solve cannot change W, hence the clusters
            H, K = self._propagate(W, pseudo, Y.shape[1], nbr, rng)

        self.neighbors_ = nbr
        self.affinity_ = W
        self.confidences_ = F
        self.pseudo_labels_ = pseudo
        self.labels_ = self._spectral(W, nbr, km_seed)

    def _spectral(self, W, nbr, seed):
        """The final step: NJW spectral clustering of W, joined by the kNN floor where it falls apart."""
        labels, self.n_graph_components_, parts = floored_spectral_clustering(
            W, nbr, self.n_clusters_, floor=float(self.affinity_floor), n_init=int(self.n_init), random_state=seed,
            solver=self.eigen_solver)
        if parts > self.n_clusters_:
            warnings.warn(f"PLC: the final affinity has {parts} connected components for {self.n_clusters_} "
                          f"clusters; the spectral embedding is not unique (raise affinity_floor or k)",
                          UserWarning, stacklevel=4)
        return labels


# ---------------------------------------------------------------- the paper's baselines

def _n_clusters(est, S, n):
    if est.n_clusters is not None:
        q = int(est.n_clusters)
    else:
        q = S.shape[1] if S is not None else 8
    return min(q, n)


class KMeansClusterer(BaseClusterer):
    """k-means baseline (scikit-learn ``KMeans``); ``n_clusters`` defaults to the number of classes.

    Parameters
    ----------
    n_clusters : int, optional
        Default ``S.shape[1]`` (8 when ``y`` is None).
    n_init : int or "auto", default=10
        Seeded restarts (as :class:`sklearn.cluster.KMeans`).
    random_state : int, RandomState or None
    """

    def __init__(self, n_clusters=None, n_init=10, random_state=None):
        self.n_clusters = n_clusters
        self.n_init = n_init
        self.random_state = random_state

    _data_limits = {"n_clusters": ("n_samples", "n_classes")}  # a cluster per class at most
    _parameter_constraints = {
        "n_clusters": [_COUNT1, None],
        "n_init": [_COUNT1, StrOptions({"auto"})],
        "random_state": ["random_state"],
    }

    def _fit(self, X, S):
        self.n_clusters_ = _n_clusters(self, S, X.shape[0])
        km = KMeans(n_clusters=self.n_clusters_, n_init=self.n_init, random_state=self.random_state)
        self.labels_ = km.fit_predict(X)
        self.cluster_centers_ = km.cluster_centers_


class SpectralClusterer(BaseClusterer):
    """Spectral clustering baseline (scikit-learn ``SpectralClustering``, NJW normalisation).

    Parameters
    ----------
    n_clusters : int, optional
        Default ``S.shape[1]`` (8 when ``y`` is None).
    affinity : str, default="nearest_neighbors"
        ``"nearest_neighbors"`` (symmetrised kNN graph) or ``"rbf"``.
    n_neighbors : int, default=10
        Neighbours of the kNN affinity (same k as PLC).
    gamma : float, optional
        RBF width; default ``1 / n_features``.
    n_init : int, default=20
        k-means restarts on the embedding.
    random_state : int, RandomState or None
    """

    def __init__(self, n_clusters=None, affinity="nearest_neighbors", n_neighbors=10, gamma=None,
                 n_init=20, random_state=None):
        self.n_clusters = n_clusters
        self.affinity = affinity
        self.n_neighbors = n_neighbors
        self.gamma = gamma
        self.n_init = n_init
        self.random_state = random_state

    _data_limits = {"n_clusters": ("n_samples", "n_classes")}  # a cluster per class at most
    _parameter_constraints = {
        "n_clusters": [_COUNT1, None],
        "affinity": [StrOptions({"nearest_neighbors", "rbf"})],
        "n_neighbors": [_COUNT1],
        "gamma": [Interval(Real, 0, None, closed="left"), None],
        "n_init": [_COUNT1],
        "random_state": ["random_state"],
    }

    def _fit(self, X, S):
        n = X.shape[0]
        self.n_clusters_ = _n_clusters(self, S, n)
        if n < 2 or self.n_clusters_ < 2:
            self.labels_ = np.zeros(n, dtype=np.int64)
            return
        gamma = self.gamma if self.gamma is not None else 1.0 / X.shape[1]
        sc = SpectralClustering(n_clusters=self.n_clusters_, affinity=self.affinity,
                                n_neighbors=min(int(self.n_neighbors), n - 1), gamma=gamma,
                                n_init=self.n_init, random_state=self.random_state,
                                assign_labels="kmeans")
        self.labels_ = sc.fit_predict(X)
