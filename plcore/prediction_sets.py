"""Split-conformal prediction sets for any scored learner, calibrated on candidate sets only.

:class:`ConformalSetLearner` wraps a learner that gives scores (``predict_proba``, else
``decision_function``): it fits a clone on part of the training rows, scores the held-out
calibration rows with the nonconformity of their *candidate sets* (Fuchs & Kalinke's conformal
candidate cleaning), ``a(x, S) = 1 - max_{j in S} p_j(x)``, and answers each new row with the
p-value of every class, ``pi_j(x) = (#{i : a_i >= 1 - p_j(x)} + 1) / (n_cal + 1)``, and the set
``C(x) = {j : pi_j(x) > alpha}``. No true label is used anywhere. What the sets guarantee (and
what they do not) is written in the class docstring and in docs/prediction_sets.md.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import clone
from sklearn.utils import check_random_state
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from plcore.base import BaseLearner
from plcore.exceptions import DataValidationError, InvalidParameterError
from plcore.validation import HasMethods, Interval, Real

__all__ = ["ConformalSetLearner", "conformal_p_values"]


def conformal_p_values(calibration_scores, scores) -> np.ndarray:
    """The conformal p-value of every entry of ``scores`` (any shape; larger = more conforming,
    e.g. probabilities): ``(#{i : a_i >= 1 - s} + 1) / (n_cal + 1)`` for the nonconformity
    scores ``calibration_scores`` (``a_i``, sorted ascending)."""
    a = np.asarray(calibration_scores, dtype=np.float64)
    s = 1.0 - np.asarray(scores, dtype=np.float64)
    at_least = a.shape[0] - np.searchsorted(a, s, side="left")
    return (at_least + 1.0) / (a.shape[0] + 1.0)


def _has_proba(self):
    return hasattr(self._base(), "predict_proba")


class ConformalSetLearner(BaseLearner):
    """Split-conformal prediction sets around a scored learner, calibrated on candidate sets.

    ``fit(X, S)`` holds out a seeded random ``calibration_fraction`` of the rows, fits a clone of
    ``estimator`` on the others and scores each calibration row by the nonconformity of its
    candidate set, ``a_i = 1 - max_{j in S_i} p_j(x_i)`` (``p`` from ``predict_proba``, else
    ``decision_function``). :meth:`predict_set` returns, for a new row ``x``, every class ``j``
    whose p-value ``pi_j(x) = (#{i : a_i >= 1 - p_j(x)} + 1) / (n_cal + 1)`` exceeds ``alpha``
    (:meth:`p_values`). ``predict`` and ``predict_proba`` are the fitted clone's: wrapping
    changes no prediction, only the rows the model is fitted on (the calibration rows are not).
    The calibration rows are never refitted on: a model that had seen them would void the
    guarantee below.

    **Guarantee.** Let a new row ``(X, S)`` be exchangeable with the calibration rows (e.g. rows
    drawn i.i.d. and split at random) and ``j* = argmax_{j in S} p_j(X)`` the label the model
    scores highest among the row's own candidate set, which is not seen at prediction time. Then

        P(j* in C(X)) >= 1 - alpha,

    marginally over the calibration rows and the new row, for any model and any data
    distribution, whatever the ties. As ``C(X)`` is an upper level set of the scores, this event
    is the same as ``C(X)`` meeting the candidate set ``S``. Without ties the probability is also
    at most ``1 - alpha + 1 / (n_cal + 1)``.

    **Not guaranteed.** Coverage of the true label ``y``: ``y in C(X)`` follows only where ``y``
    is scored as high as ``j*`` (``y = j*``; always where ``S = {y}``, so on exact labels this is
    ordinary split-conformal coverage, ``P(y in C(X)) >= 1 - alpha``). In general the candidate
    score ``a(X, S) <= 1 - p_y(X)`` is optimistic, so the sets can be smaller than true-label
    conformal sets and cover ``y`` less often than ``1 - alpha``; measure it on data with true
    labels (the ``set_coverage`` metric). Nothing holds conditionally on ``x`` or per class, an
    empty set may occur (it counts as a miss), and with ``n_cal + 1 <= 1 / alpha`` every set is
    all classes.

    Parameters
    ----------
    estimator : learner or None, default=None
        The scored learner to wrap (cloned; it needs ``predict_proba`` or ``decision_function``
        and must fit on a candidate matrix). None: :class:`plcore.learners.PlKnnLearner` with its
        defaults. From the command line, ``learner.estimator=<registered learner name>``.
    alpha : float in (0, 1), default=0.1
        Miscoverage level of the sets (also a keyword of :meth:`predict_set`).
    calibration_fraction : float in (0, 1), default=0.2
        Fraction of the rows held out for calibration (``floor(fraction * n)``, at least 1 and at
        most ``n - 1``).
    random_state : int, RandomState or None, default=None
        Seeds the split into fitting and calibration rows.

    Attributes
    ----------
    estimator_ : learner
        The clone fitted on the non-calibration rows.
    calibration_scores_ : ndarray of shape (n_cal,)
        The calibration rows' nonconformity scores ``a_i``, sorted ascending.
    calibration_indices_ : ndarray of shape (n_cal,)
        Positions of the calibration rows in the training data.
    classes_ : ndarray of shape (q,)
    n_features_in_ : int
    """

    _parameter_constraints = {
        "estimator": [HasMethods(["fit", "predict"]), None],
        "alpha": [Interval(Real, 0, 1, closed="neither")],
        "calibration_fraction": [Interval(Real, 0, 1, closed="neither")],
        "random_state": ["random_state"],
    }

    def __init__(self, estimator=None, alpha=0.1, calibration_fraction=0.2, random_state=None):
        self.estimator = estimator
        self.alpha = alpha
        self.calibration_fraction = calibration_fraction
        self.random_state = random_state

    def _base(self):
        if self.estimator is None:
            from plcore.learners import PlKnnLearner

            return PlKnnLearner()
        return self.estimator

    def _fit(self, X, S):
        n = X.shape[0]
        if n < 2:
            raise DataValidationError(f"{type(self).__name__} needs at least 2 samples (one to fit, one to "
                                      f"calibrate), got n_samples = {n}")
        base = self._base()
        if not (hasattr(base, "predict_proba") or hasattr(base, "decision_function")):
            raise InvalidParameterError(f"{type(self).__name__}: estimator {type(base).__name__} gives no scores "
                                        "(predict_proba or decision_function)")
        n_cal = min(max(1, int(np.floor(self.calibration_fraction * n))), n - 1)
        order = check_random_state(self.random_state).permutation(n)
        cal, fit_rows = np.sort(order[:n_cal]), np.sort(order[n_cal:])
        S = S.toarray() if hasattr(S, "toarray") else np.asarray(S, dtype=bool)
        self.estimator_ = clone(base).fit(X[fit_rows], S[fit_rows])
        P = self._estimator_scores(X[cal])
        self.calibration_scores_ = np.sort(1.0 - np.max(np.where(S[cal], P, -np.inf), axis=1))
        self.calibration_indices_ = cal

    def _estimator_scores(self, X):
        """The fitted clone's scores, ``(n, q)``, larger = more conforming."""
        est = self.estimator_
        P = est.predict_proba(X) if hasattr(est, "predict_proba") else est.decision_function(X)
        return np.asarray(P, dtype=np.float64)

    def _scores(self, X):
        return self._estimator_scores(X)

    def predict(self, X):
        """The wrapped learner's predictions, labels from ``classes_``."""
        check_is_fitted(self)
        X = self._validate_predict(X)
        return self.classes_[np.asarray(self.estimator_.predict(X)).astype(np.intp)]

    @available_if(_has_proba)
    def predict_proba(self, X):
        """The wrapped learner's ``predict_proba``, columns in ``classes_`` order."""
        check_is_fitted(self)
        return self.estimator_.predict_proba(self._validate_predict(X))

    def p_values(self, X):
        """The conformal p-value ``pi_j(x)`` of every class, shape ``(n, q)``, columns in ``classes_``
        order."""
        check_is_fitted(self)
        return conformal_p_values(self.calibration_scores_, self._estimator_scores(self._validate_predict(X)))

    def predict_set(self, X, alpha=None):
        """The prediction sets ``C(x) = {j : pi_j(x) > alpha}``: a boolean ``(n, q)`` matrix, columns
        in ``classes_`` order (``alpha`` defaults to the parameter)."""
        check_is_fitted(self)
        alpha = self.alpha if alpha is None else alpha
        if not 0 < alpha < 1:
            raise InvalidParameterError(f"alpha must be in (0, 1), got {alpha!r}")
        return self.p_values(X) > alpha
