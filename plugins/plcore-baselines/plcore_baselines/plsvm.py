"""PL-SVM: maximum margin between the best candidate and the best non-candidate.

Nguyen & Caruana, "Classification with partial labels", KDD 2008 (the CENDA paper's [30];
its Section 4.1 summary: "maximizing the classification margin over candidate label set and
non-candidate label set", regularisation parameter chosen from {10^-3, ..., 10^3}).

Objective (linear model ``f_m(x) = w_m.x (+ b_m)``, ``S_i`` the candidates of example
``i``, ``N_i`` the others)::

    min_W  lam/2 ||W||^2 + 1/n sum_i max(0, 1 - max_{m in S_i} f_m(x_i) + max_{m in N_i} f_m(x_i))

which we write with ``C = 1/lam`` as ``1/2 ||W||^2 + (C/n) sum_i loss_i``. ``C`` is
independent of ``n``, so the paper's pool lam in {1e-3, ..., 1e3} is the same set of ``C``
values, and a ``C`` tuned on inner folds means the same thing on the full training set.
Examples whose candidate set holds every label have no non-candidate: their loss is 0.

Optimisation. The objective is non-convex (the max over candidates). Nguyen & Caruana
minimise it with a Pegasos-style projected sub-gradient method (step ``1/(lam t)``,
projection onto ``||W|| <= 1/sqrt(lam)``); we could not retrieve the paper's algorithm
section itself, but both public re-implementations we found do exactly that (the MATLAB
``PLSVM_train`` of the PALM group: full-batch Pegasos from a random ``W``, ``T = 1000``; a
Python benchmark port: stochastic Pegasos). We minimise the *same objective* by an
alternating (majorise-minimise) scheme instead:
fix ``p_i = argmax_{m in S_i} f_m(x_i)`` (ties keep the previous choice), which turns the
objective into a convex upper bound that is tight at the current ``W``; solve that convex
problem exactly (a Crammer-Singer SVM in which example ``i`` competes only against
``N_i``, by the sequential dual method of Keerthi et al. 2008 = liblinear's Crammer-Singer
solver, see :mod:`plcore_baselines._plsvm_dual`); repeat until no ``p_i`` changes. With
exact solves no round can increase the objective (tested); by default a round is capped
at ``max_epochs`` passes and the next round continues from its dual state. Starting ``p_i``: argmax over the candidates of a ridge
regression on the candidate indicators ``S_i / |S_i|``. The intercept is a constant feature
(regularised, liblinear's convention), so with singleton candidate sets the learner is
exactly ``LinearSVC(multi_class="crammer_singer", C=C/n)``.

``C`` is chosen like every other hyperparameter in plcore, by the nested selection of
``protocol.select`` over the pool the plugin declares (``PLSVM_SEARCH_SPACE`` = the paper's
{1e-3, ..., 1e3}), scored from candidate sets only; the default ``C=1.0`` is the middle of the
pool (and liblinear's default), not a value tuned on any reported data set. Cost: 0.1-0.3 s of
one core per fit on Lost / MSRCv2 (z-scored).
"""

from __future__ import annotations

import numpy as np
from sklearn.utils import check_random_state

from plcore.base import BaseLearner
from plcore.validation import Integral, Interval, Real

from plcore_baselines._plsvm import fit_plsvm

__all__ = ["PlSvmLearner", "C_POOL"]

#: the CENDA paper's regularisation pool {1e-3, ..., 1e3} (C = 1/lambda)
C_POOL = (1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0)


class PlSvmLearner(BaseLearner):
    """PL-SVM (Nguyen & Caruana, KDD 2008): a linear max-margin partial-label classifier.

    Follows the published objective (max-margin between the best candidate and the best
    non-candidate, L2 regularisation, regularisation pool {1e-3, ..., 1e3} as in the CENDA
    paper's Section 4.1); optimised by alternating best-candidate selection with exact
    convex solves (the authors used Pegasos-style sub-gradient steps; see the module
    docstring).

    Parameters
    ----------
    C : float, default=1.0
        Inverse regularisation ``1/lambda`` of ``lambda/2 ||W||^2 + mean hinge loss``.
        Tune it with ``protocol.select`` (the declared pool is :data:`C_POOL`).
    fit_intercept : bool, default=True
        Append a constant feature ``intercept_scaling`` (its weight is regularised).
    intercept_scaling : float, default=1.0
    tol : float, default=1e-2
        Stopping tolerance of the dual solver (largest KKT violation in an epoch;
        liblinear's Crammer-Singer default is 0.1).
    max_iter : int, default=50
        Maximum alternating (best-candidate re-selection) rounds.
    max_epochs : int, default=100
        Maximum passes of the dual solver per round (rounds are warm-started, so a capped
        round is continued by the next one; raise it for an exact solve of every round).
    random_state : int, RandomState or None, default=None
        The dual solver's visiting order.

    Attributes
    ----------
    coef_ : ndarray of shape (n_classes, n_features)
    intercept_ : ndarray of shape (n_classes,)
    confidences_ : ndarray of shape (n_samples, n_classes)
        One-hot on the selected best candidate ``p_i`` of each training example.
    objective_ : float
        Final value of ``1/2 ||W||^2 + (C/n) sum_i loss_i``.
    n_iter_ : int
        Alternating rounds of the final fit.
    """

    def __init__(self, C=1.0, fit_intercept=True, intercept_scaling=1.0,
                 tol=1e-2, max_iter=50, max_epochs=100, random_state=None):
        self.C = C
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.tol = tol
        self.max_iter = max_iter
        self.max_epochs = max_epochs
        self.random_state = random_state

    _parameter_constraints = {
        "C": [Interval(Real, 0.0, np.inf, closed="neither")],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [Interval(Real, 0.0, np.inf, closed="neither")],
        "tol": [Interval(Real, 0.0, np.inf, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "max_epochs": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    # ------------------------------------------------------------------ helpers
    def _augment(self, X):
        if not self.fit_intercept:
            return np.ascontiguousarray(X)
        return np.hstack([X, np.full((X.shape[0], 1), float(self.intercept_scaling))])

    # ------------------------------------------------------------------ fit / scores
    def _fit(self, X, S):
        seed = int(check_random_state(self.random_state).randint(np.iinfo(np.int32).max))
        X1 = self._augment(X)
        n = X1.shape[0]
        res = fit_plsvm(X1, S, float(self.C), tol=float(self.tol), max_iter=int(self.max_iter),
                        max_epochs=int(self.max_epochs), seed=seed)
        W, p = res["W"], res["p"]
        self.coef_ = W[:, :X.shape[1]].copy()
        self.intercept_ = (W[:, -1] * float(self.intercept_scaling) if self.fit_intercept
                           else np.zeros(W.shape[0]))
        self.n_iter_ = int(res["n_iter"])
        self.objective_ = float(res["objective"])
        self.converged_ = bool(res["converged"])
        conf = np.zeros(S.shape)
        conf[np.arange(n), p] = 1.0
        self.confidences_ = conf
        return self

    def _scores(self, X):
        return X @ self.coef_.T + self.intercept_
