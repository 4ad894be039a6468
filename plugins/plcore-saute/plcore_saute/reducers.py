"""Partial-label feature selectors: SAUTE and the paper's RS / MR / MJE baselines.

Every selector is a :class:`plcore.base.BaseReducer` with the fitted attributes

* ``selected_features_`` -- column indices in the order they were selected;
* ``support_`` -- boolean mask of the selected columns, shape (d,);
* ``n_components_`` -- number of selected features ``d'``;
* ``confidences_`` -- (m, q) labelling confidences (rows on the candidates, sum 1).

``transform(X)`` returns ``X[:, selected_features_]`` (columns in selection order).
``n_features`` is the number of features to keep: ``None`` -> ``ceil(0.15 d)`` (the paper's
default), an int ``>= 1``, or a fraction in (0, 1] -> ``ceil(fraction * d)``.
"""

from __future__ import annotations

import math

import numpy as np
from sklearn.utils import check_random_state
from sklearn.utils.validation import check_is_fitted

from plcore.base import BaseReducer
from plcore.exceptions import DataValidationError
from plcore.utils import uniform_confidences
from plcore.validation import Integral, Interval, Real, RealNotInt

from plcore_saute._greedy import greedy_select, knn_update
from plcore_saute._info import (
    N_BINS,
    bin_counts,
    conditional_entropy,
    discretize,
    entropy_from_counts,
    joint_entropy_gain,
    standardize_columns,
)

__all__ = ["SauteReducer", "MaxRelevanceReducer", "RandomSelectionReducer",
           "MaxJointEntropyReducer", "resolve_n_features"]

DEFAULT_FRACTION = 0.15

_N_FEATURES_COUNT = Interval(Integral, 1, None, closed="left")
_N_FEATURES_FRACTION = Interval(RealNotInt, 0.0, 1.0, closed="right")
# ``n_features`` of every selector: None, a count >= 1 or a fraction in (0, 1].
_N_FEATURES_CONSTRAINT = [None, _N_FEATURES_COUNT, _N_FEATURES_FRACTION]


def resolve_n_features(n_features, d):
    """Number of features to select for ``d`` columns (see the module docstring).

    Raises :class:`~plcore.exceptions.DataValidationError` for a value outside the
    selectors' ``n_features`` constraint (booleans included) and for a count above ``d``.
    """
    if n_features is None:
        return max(1, math.ceil(DEFAULT_FRACTION * d - 1e-9))
    if not isinstance(n_features, (bool, np.bool_)):  # Integral to Python, never a count
        if _N_FEATURES_COUNT.is_satisfied_by(n_features):
            if n_features > d:
                raise DataValidationError(
                    f"n_features={n_features} exceeds the {d} feature(s) of X")
            return int(n_features)
        if _N_FEATURES_FRACTION.is_satisfied_by(n_features):
            return max(1, math.ceil(float(n_features) * d - 1e-9))
    raise DataValidationError(
        "n_features must be None, an int >= 1 or a fraction in (0, 1], got "
        f"{n_features!r}")


class _BaseSelector(BaseReducer):
    """Shared ``transform`` / ``get_support`` of the feature selectors."""

    def _set_selection(self, selected, d, confidences):
        self.selected_features_ = np.asarray(selected, dtype=np.intp)
        support = np.zeros(d, dtype=bool)
        support[self.selected_features_] = True
        self.support_ = support
        self.n_components_ = int(self.selected_features_.size)
        self.confidences_ = confidences

    def _transform(self, X):
        return X[:, self.selected_features_]

    def get_support(self, indices=False):
        """Mask (or, with ``indices=True``, sorted indices) of the selected columns."""
        check_is_fitted(self)
        return np.flatnonzero(self.support_) if indices else self.support_.copy()


class SauteReducer(_BaseSelector):
    """SAUTE: submodular mutual-information feature selection for partial labels.

    Bao, Hang & Zhang, "Submodular Feature Selection for Partial Label Learning", KDD 2022
    (Table 1). ``Y`` starts at ``1/|S_i|`` on the candidates (Eq. 1). Each outer
    iteration

    1. estimates ``H(c|f)`` for every feature from class-conditional Gaussians fitted on
       ``D_l = {i : Y(i, l) >= 1/|S_i|}`` with ``p(l) = mean_i Y(i, l)`` (Eq. 8-10);
    2. greedily selects ``d'`` features by
       ``argmax_f -H(c|f) - (1/|A|) sum_{f_i in A} I(f; f_i)`` (Eq. 7; no redundancy term
       for the first pick), ``I`` estimated on the 5-bin discretisation of Eq. (11);
    3. updates ``Y`` by kNN aggregation in the selected features,
       ``L(i, j) = sum_a omega_a Y(i_a, j)`` with ``omega_a = k - a + 1`` (Eq. 12),
       ``Y' = (1 - alpha) Y + alpha L`` (Eq. 13), renormalised over ``S_i`` (Eq. 14);

    and the loop stops when the selected set equals the previous iteration's (as a set), or
    after ``max_iter`` iterations. Cost of one iteration: O(m d q) for ``H(c|f)`` (once,
    vectorised), O(d) per pick for the incremental redundancy sums, plus one kNN search;
    each ``I(., f_j)`` column (O(m d)) is computed once per fit, when ``f_j`` is first picked.

    Parameters
    ----------
    n_features : int, float or None, default=None
        Number of selected features ``d'``: ``None`` -> ``ceil(0.15 d)`` (paper default),
        an int, or a fraction of ``d`` in (0, 1].
    alpha : float, default=0.6
        Learning rate of Eq. (13), in (0, 1).
    k : int, default=8
        Number of nearest neighbours of Eq. (12).
    max_iter : int, default=20
        Maximum number of outer iterations.
    var_smoothing : float, default=0.3
        Floor of each class-conditional variance, relative to the feature's overall
        variance (see :mod:`plcore_saute._info` for all smoothing rules). Chosen on
        development data no SAUTE figure is reported on (digits, semeion, ecoli;
        ``benchmarks/saute_smoothing.py``).
    random_state : int, RandomState or None, default=None
        Unused (SAUTE is deterministic; ties go to the lowest feature index); accepted
        for a uniform interface.

    Attributes
    ----------
    selected_features_ : ndarray of int, shape (d',)
        Selected columns in the order the last iteration picked them.
    support_ : ndarray of bool, shape (d,)
    n_components_ : int
    confidences_ : ndarray, shape (m, q)
        Final labelling confidences ``Y``.
    conditional_entropy_ : ndarray, shape (d,)
        ``H(c|f)`` of the last iteration (natural log).
    n_iter_ : int
        Outer iterations run.
    selection_history_ : list of ndarray
        Selected features of every iteration.
    """

    _redundancy = True

    _data_limits = {"n_features": "n_features"}
    _parameter_constraints = {
        "n_features": _N_FEATURES_CONSTRAINT,
        "alpha": [Interval(Real, 0.0, 1.0, closed="neither")],
        "k": [Interval(Integral, 1, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "var_smoothing": [Interval(Real, 0.0, np.inf, closed="neither")],
        "random_state": ["random_state"],
    }

    def __init__(self, n_features=None, alpha=0.6, k=8, max_iter=20, var_smoothing=0.3,
                 random_state=None):
        self.n_features = n_features
        self.alpha = alpha
        self.k = k
        self.max_iter = max_iter
        self.var_smoothing = var_smoothing
        self.random_state = random_state

    def _fit(self, X, S):
        n_select = resolve_n_features(self.n_features, X.shape[1])
        Z, constant = standardize_columns(X)
        B = discretize(X) if self._redundancy else None
        marginals = bin_counts(B) if self._redundancy else None
        Y = uniform_confidences(S)  # Eq. (1); S: dense bool (m, q) from the base class
        redundancy_cache = {} if self._redundancy else None   # I(., f_j) depends on B only
        previous = None
        history = []
        H = None
        for _ in range(int(self.max_iter)):
            H = conditional_entropy(Z, constant, Y, S, float(self.var_smoothing))
            selected = greedy_select(H, B, n_select, redundancy=self._redundancy,
                                     marginals=marginals, cache=redundancy_cache)
            history.append(np.asarray(selected, dtype=np.intp))
            Y = knn_update(X[:, selected], Y, S, self.k, float(self.alpha))
            current = frozenset(selected)
            if current == previous:
                break
            previous = current
        self.conditional_entropy_ = H
        self.n_iter_ = len(history)
        self.selection_history_ = history
        self._set_selection(history[-1], X.shape[1], Y)


class MaxRelevanceReducer(SauteReducer):
    """MR baseline: SAUTE without the redundancy term (greedy on Eq. 5).

    Under the paper's feature-independence assumption the greedy step reduces to
    ``argmax_f I(f; c) = argmax_f -H(c|f)`` (Eq. 5), i.e. the ``d'`` features of lowest
    ``H(c|f)``. ``H(c|f)`` needs the latent label density, so MR runs SAUTE's alternating
    procedure unchanged (same Gaussian estimate, kNN update of ``Y``, stopping rule) and
    differs only in dropping ``(1/|A|) sum I(f; f_i)``; ``confidences_`` is its final
    ``Y``. Parameters and attributes are those of :class:`SauteReducer`.
    """

    _redundancy = False


class RandomSelectionReducer(_BaseSelector):
    """RS baseline: ``d'`` features drawn uniformly at random without replacement.

    ``confidences_`` is the uniform initialisation of Eq. (1), ``1/|S_i|`` on each candidate
    set: RS uses no labels and does not disambiguate.

    Parameters
    ----------
    n_features : int, float or None, default=None
        As for :class:`SauteReducer`.
    random_state : int, RandomState or None, default=None
        Seed of the draw.
    """

    _data_limits = {"n_features": "n_features"}
    _parameter_constraints = {"n_features": _N_FEATURES_CONSTRAINT, "random_state": ["random_state"]}

    def __init__(self, n_features=None, random_state=None):
        self.n_features = n_features
        self.random_state = random_state

    def _fit(self, X, S):
        d = X.shape[1]
        n_select = resolve_n_features(self.n_features, d)
        rng = check_random_state(self.random_state)
        selected = rng.choice(d, size=n_select, replace=False)
        self._set_selection(selected, d, uniform_confidences(S))


class MaxJointEntropyReducer(_BaseSelector):
    """MJE baseline: greedy maximisation of the joint entropy ``H(A)`` of the selected set.

    ``A_MJE = argmax_{|A| = d'} H(A)`` is approximated greedily, each step adding the feature
    that maximises ``H(A + {f})``. The paper does not say how ``H(A)`` is estimated; we use
    the same 5-bin discretisation as for ``I(f; f_i)`` (Eq. 11) and the plug-in entropy of
    the joint bin cells. Once the cells of ``A`` separate (almost) every example, ``H``
    cannot grow; candidates within 1e-10 of the best are then ranked by their own
    entropy ``H(f)``, then by index. Unsupervised: ``confidences_`` is the uniform
    initialisation of Eq. (1).

    Parameters
    ----------
    n_features : int, float or None, default=None
        As for :class:`SauteReducer`.

    Attributes
    ----------
    joint_entropy_ : ndarray, shape (d',)
        ``H(A_p)`` after each pick (natural log).
    """

    _data_limits = {"n_features": "n_features"}
    _parameter_constraints = {"n_features": _N_FEATURES_CONSTRAINT}

    def __init__(self, n_features=None):
        self.n_features = n_features

    def _fit(self, X, S):
        m, d = X.shape
        n_select = resolve_n_features(self.n_features, d)
        B = discretize(X)
        own = entropy_from_counts(bin_counts(B), axis=1)
        cell = np.zeros(m, dtype=np.intp)
        n_cells = 1
        available = np.ones(d, dtype=bool)
        selected, joint = [], []
        for _ in range(n_select):
            gain = joint_entropy_gain(cell, n_cells, B)
            gain[~available] = -np.inf
            best = gain.max()
            tied = np.flatnonzero(gain >= best - 1e-10)
            j = int(tied[np.argmax(own[tied])])  # first index among equal own entropies
            selected.append(j)
            joint.append(float(gain[j]))
            available[j] = False
            _, cell = np.unique(cell * N_BINS + B[:, j], return_inverse=True)
            cell = cell.ravel().astype(np.intp)
            n_cells = int(cell.max()) + 1
        self.joint_entropy_ = np.asarray(joint)
        self._set_selection(selected, d, uniform_confidences(S))
