"""Avg/Max Perceptron and Avg/Max Pegasos learners (Bhattacharjee & Manwani, PAKDD 2020).

Six scikit-learn classifiers share one implementation, :class:`_OnlineLinearLearner`:

============================  ========================  ==================================
class (``+learner=``)          loss                      algorithm
============================  ========================  ==================================
``AvgPerceptronLearner``       APH, Eq. (2) / (4)        Algorithm 1 (step ``eta``)
``MaxPerceptronLearner``       MPH, Eq. (3) / (5)        Algorithm 2 (step ``eta``)
``AvgPegasosLearner``          APH, Eq. (2) / (4)        Algorithm 3 (step ``1/(lam t)``)
``MaxPegasosLearner``          MPH, Eq. (3) / (5)        Algorithm 4 (step ``1/(lam t)``)
``PerceptronLearner``          exact labels (baseline)   Algorithm 1 on singleton sets
``PegasosLearner``             exact labels (baseline)   Algorithm 3 on singleton sets
============================  ========================  ==================================

The model is linear: ``W`` of shape ``(d, K)`` (one column ``w_k`` per class), started at
0, prediction ``argmax_k w_k . x`` (ties to the lowest class index). With
``fit_intercept=True`` a constant feature 1 is appended to every ``x`` (so ``d`` counts
it): the bias is the last row of ``W``; for Pegasos it is regularised and projected
like every other weight, exactly as if the data had that column.

The exact-label baselines are the same code: on a singleton candidate set ``{y}`` APH
and MPH coincide and both are the multiclass hinge loss ``[1 - w_y.x + max_{j != y}
w_j.x]_+``. They carry the tag ``exact_label_baseline``, so plcore's protocols feed
them the true label instead of the candidate set. Given real candidate sets directly
they act as the Avg variant.

All six carry the tag ``online``: :meth:`~_OnlineLinearLearner.partial_fit` is the
streaming primitive. Prequential evaluation (predict each example, then learn from it)
is :func:`prequential`, the compiled kernel the plugin registers with plcore's ``online``
protocol (``ComponentSpec(prequential=...)``); it gives the predictions of ``predict`` +
``partial_fit`` row by row in one call.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from plcore.base import BaseLearner
from plcore.data import candidate_classes, check_candidates, check_features, labels_to_candidates
from plcore.exceptions import DataValidationError
from plcore.utils import dense_candidates
from plcore.validation import Integral, Interval, Real, validate_params

import plcore_online._stream as _stream
from plcore_online._stream import StreamState, run_stream

__all__ = [
    "AvgPerceptronLearner",
    "MaxPerceptronLearner",
    "AvgPegasosLearner",
    "MaxPegasosLearner",
    "PerceptronLearner",
    "PegasosLearner",
    "prequential",
]

#: single-row fast path of ``partial_fit`` / ``predict`` (see ``_OnlineLinearLearner.partial_fit``);
#: False sends every call through the full validation (the old per-call path, kept for the
#: benchmark and the bit-identity tests)
SINGLE_ROW_FAST_PATH = True

_F64 = np.dtype(np.float64)
_BOOL = np.dtype(bool)


class _RowSpec:
    """What a one-row call must look like to skip the full validation (set once validated).

    ``x_shape`` = ``(1, n_features_in_)``, ``s_shape`` = ``(1, K)``, ``fit_intercept`` as
    when the weights were shaped, ``codes`` maps each class to its column (1-D label
    input) and ``rows[k]`` is the singleton candidate row of class ``k``. Immutable once
    built, so concurrent ``predict`` calls share it safely.
    """

    __slots__ = ("x_shape", "s_shape", "fit_intercept", "codes", "rows")

    def __init__(self, n_features, classes, fit_intercept):
        K = len(classes)
        self.x_shape = (1, int(n_features))
        self.s_shape = (1, K)
        self.fit_intercept = bool(fit_intercept)
        eye = np.eye(K, dtype=bool)
        self.rows = tuple(eye[k:k + 1] for k in range(K))
        try:
            codes = {c: k for k, c in enumerate(classes.tolist())}
        except TypeError:  # unhashable classes: labels always take the full path
            codes = {}
        self.codes = codes if len(codes) == K else {}

    def __getstate__(self):
        return {k: getattr(self, k) for k in self.__slots__}

    def __setstate__(self, state):
        for k, v in state.items():
            setattr(self, k, v)


class _OnlineLinearLearner(BaseLearner):
    """Shared implementation; subclasses fix ``_loss`` and ``_algorithm``."""

    _loss = "avg"
    _algorithm = "perceptron"

    _parameter_constraints = {
        "n_epochs": [Interval(Integral, 1, None, closed="left")],
        "fit_intercept": ["boolean"],
        "shuffle": ["boolean"],
        "random_state": ["random_state"],
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.pll_tags.online = True
        return tags

    # ------------------------------------------------------------------ parameters
    def _stream_kwargs(self):
        if self._algorithm == "perceptron":
            return {"eta": float(self.eta)}
        return {"lam": float(self.lam), "shrink_on_zero_loss": bool(self.shrink_on_zero_loss)}

    # ------------------------------------------------------------------ helpers
    def _augment(self, X):
        if self.fit_intercept:
            return np.hstack([X, np.ones((X.shape[0], 1))])
        return X

    def _reset(self, n_features):
        self._state = StreamState(len(self.classes_), n_features + int(bool(self.fit_intercept)))
        self._row_spec = None if hasattr(self, "feature_names_in_") else _RowSpec(
            n_features, self.classes_, self.fit_intercept)

    def _run(self, X, S):
        """Stream validated ``X`` (no intercept column yet) and dense bool ``S``."""
        preds = run_stream(self._state, self._augment(X), S, loss=self._loss,
                           algorithm=self._algorithm, **self._stream_kwargs())
        self._sync()
        return preds

    def _sync(self):
        st = self._state
        self.t_ = st.t
        self.n_updates_ = st.n_updates

    # ------------------------------------------------------------------ BaseLearner steps
    def _fit(self, X, S):
        """Reset, then ``n_epochs`` passes over the data (shuffled when ``shuffle``)."""
        self._reset(X.shape[1])
        rng = check_random_state(self.random_state)
        n = X.shape[0]
        for _ in range(int(self.n_epochs)):
            order = rng.permutation(n) if self.shuffle else np.arange(n)
            self._run(X[order], S[order])
        return self

    def _scores(self, X):
        """``X W``: one column per class, shape (n, K)."""
        return self._augment(X) @ self._state.Wt.T

    # ------------------------------------------------------------------ public API
    @property
    def W_(self):
        """The paper's weight matrix ``W``, shape ``(d, K)`` (bias in the last row if fitted)."""
        check_is_fitted(self)
        return self._state.Wt.T.copy()

    @property
    def coef_(self):
        """scikit-learn layout: ``(K, n_features)`` (without the bias column)."""
        check_is_fitted(self)
        Wt = self._state.Wt
        return (Wt[:, :-1] if self.fit_intercept else Wt).copy()

    @property
    def intercept_(self):
        """Per-class bias, shape ``(K,)`` (zeros when ``fit_intercept=False``)."""
        check_is_fitted(self)
        Wt = self._state.Wt
        return Wt[:, -1].copy() if self.fit_intercept else np.zeros(Wt.shape[0])

    def decision_function(self, X):
        """Class scores ``w_k . x``: shape (n, K); for K = 2 the margin ``w_1.x - w_0.x`` (n,)."""
        check_is_fitted(self)
        scores = self._scores(self._validate_predict(X))
        if scores.shape[1] == 2:
            return scores[:, 1] - scores[:, 0]
        return scores

    def predict(self, X):
        """Predicted labels, one per row of ``X``, taken from ``classes_``.

        A single row that passes the cheap checks of :meth:`partial_fit`'s one-row path
        (float64 C-contiguous ndarray of shape ``(1, n_features_in_)``; NaN/inf checked in
        the copy that appends the intercept) skips scikit-learn's validation; the scores are
        the same ``X W`` product, so the prediction is the same.
        """
        spec = self.__dict__.get("_row_spec")
        if (spec is not None and SINGLE_ROW_FAST_PATH and type(X) is np.ndarray
                and X.shape == spec.x_shape and X.dtype == _F64 and X.flags.c_contiguous
                and self.fit_intercept == spec.fit_intercept):
            row = _stream.augment_row(X, spec.fit_intercept)
            if row is not None:
                return self.classes_[np.argmax(row @ self._state.Wt.T, axis=1)]
        return super().predict(X)

    def partial_fit(self, X, y, classes=None):
        """Learn from one more chunk of the stream, in row order; return self.

        Parameters
        ----------
        X : array-like of shape (n, d)
            Features; ``n`` may be 0 (initialises the model only).
        y : array-like of shape (n,) or (n, K)
            Labels from ``classes`` or a 0/1 candidate matrix with one column per class.
        classes : array-like of shape (K,), optional
            All classes; required on the first call unless ``y`` is a candidate matrix
            (then ``classes`` are a DataFrame's columns, else ``arange(K)``).

        Notes
        -----
        The first call (and every call after ``fit``) validates everything. A later call
        with **one row** takes a fast path when the input already has the validated form:
        ``X`` a float64 C-contiguous ``numpy.ndarray`` of shape ``(1, n_features_in_)``,
        ``y`` a boolean C-contiguous ndarray of shape ``(1, K)`` or a 1-D ndarray of one
        integer, boolean or string label that is in ``classes_``, ``classes`` None or the
        ``classes_`` object itself, and the learner not fitted on a DataFrame. The fast path
        checks only these types, shapes and dtypes in Python, and in the compiled kernel
        that every feature is finite and the candidate set is not empty before anything is
        updated. Whatever fails a check goes through the full validation instead, so bad
        input (wrong width, wrong number of label columns, an empty candidate set, NaN or
        inf, unknown labels) raises the same error as before and the model is unchanged.
        The update is the same compiled call on the same numbers, so the weights are
        bit-identical. The fast path needs numba (the compiled path, ``USE_JIT``); the
        numpy reference path always validates fully.
        """
        if not self._partial_one_row(X, y, classes):
            self._partial(X, y, classes)
        return self

    def _partial_one_row(self, X, y, classes):
        """The one-row fast path of :meth:`partial_fit`; False if the call needs the full path."""
        spec = self.__dict__.get("_row_spec")
        if (spec is None or not SINGLE_ROW_FAST_PATH or not _stream.USE_JIT
                or type(X) is not np.ndarray or X.shape != spec.x_shape or X.dtype != _F64
                or not X.flags.c_contiguous or type(y) is not np.ndarray
                or (classes is not None and classes is not self.classes_)
                or self.fit_intercept != spec.fit_intercept or not _stream.jit_available()):
            return False
        if y.ndim == 2:
            if y.shape != spec.s_shape or y.dtype != _BOOL or not y.flags.c_contiguous:
                return False
            S = y
        elif y.shape == (1,) and y.dtype.kind in "biuU":
            code = spec.codes.get(y[0])
            if code is None:
                return False
            S = spec.rows[code]
        else:
            return False
        if not _stream.run_one_row(self._state, X, S, fit_intercept=spec.fit_intercept,
                                 loss=self._loss, algorithm=self._algorithm, **self._stream_kwargs()):
            return False   # NaN/inf or an empty candidate set: the full path raises the error
        self._sync()
        return True

    def _partial(self, X, y, classes):
        """Validate one chunk and stream it; return the class indices predicted before each update.

        The constructor parameters are checked on the first call only (they cannot change
        between calls of one stream), so one-row calls pay no validation per row.
        """
        first = not hasattr(self, "_state")
        if first:
            validate_params(self)
        X = validate_data(self, X, reset=first, dtype=np.float64, ensure_all_finite=False,
                          accept_sparse=False, ensure_min_samples=0)
        if X.shape[0]:
            check_features(X)
        S, classes = self._partial_targets(y, X.shape[0], classes, first)
        if first:
            self.classes_ = classes
            self._reset(X.shape[1])
        return self._run(X, S)

    def _partial_targets(self, y, n, classes, first):
        """Candidate matrix (dense bool) of a ``partial_fit`` chunk, and the classes."""
        if y is None:
            raise DataValidationError("partial_fit needs y: labels or an (n, K) candidate matrix")
        matrix = sp.issparse(y) or (np.ndim(y) == 2 and np.shape(y)[1] != 1)
        names = candidate_classes(y) if matrix else None  # a candidate DataFrame's columns
        if names is not None:
            expected = classes if classes is not None else (None if first else self.classes_)
            if expected is not None and not np.array_equal(names, np.asarray(expected)):
                raise DataValidationError(f"the candidate DataFrame's columns {names.tolist()} differ from the "
                                          f"classes {np.asarray(expected).tolist()}")
        if classes is not None:
            classes = np.asarray(classes)
            if classes.ndim != 1 or len(np.unique(classes)) != len(classes):
                raise DataValidationError("classes must be a 1-D array of distinct labels")
            if not first and not np.array_equal(classes, self.classes_):
                raise DataValidationError(
                    f"classes={classes.tolist()} differs from classes_={self.classes_.tolist()} "
                    "of the first partial_fit call")
        elif first:
            if not matrix:
                raise DataValidationError(
                    "classes must be passed on the first call to partial_fit (labels given)")
            classes = names if names is not None else np.arange(np.shape(y)[1])
        else:
            classes = self.classes_
        if len(classes) < 2:
            raise DataValidationError(f"need at least 2 classes (q >= 2), got {len(classes)}")
        if matrix:
            S = check_candidates(y, n_samples=n)
            if S.shape[1] != len(classes):
                raise DataValidationError(
                    f"candidate matrix has {S.shape[1]} columns but there are {len(classes)} classes")
            return dense_candidates(S), classes
        y = column_or_1d(y, warn=True)
        if y.shape[0] != n:
            raise DataValidationError(f"X has {n} rows but y has {y.shape[0]} labels; they must match")
        if n:
            check_classification_targets(y)
        S, _ = labels_to_candidates(y, classes)
        return S, classes


_DOC_COMMON = """    n_epochs : int, default=5
        Passes over the data in :meth:`fit` (``partial_fit`` is always one pass).
    fit_intercept : bool, default=True
        Append a constant feature 1 to every example; its weights are the class biases
        (for Pegasos they are regularised and projected like the other weights).
    shuffle : bool, default=True
        Shuffle the rows before each pass of :meth:`fit`.
    random_state : int, RandomState or None, default=None
        Seeds the shuffling of :meth:`fit`.

    Attributes
    ----------
    classes_ : ndarray of shape (K,)
    W_ : ndarray of shape (d, K)
        The weight matrix (last row: biases when ``fit_intercept``).
    coef_, intercept_ : ndarray of shape (K, n_features) and (K,)
        The same weights in scikit-learn's layout.
    t_ : int
        Examples processed since the last reset.
    n_updates_ : int
        Examples on which the loss was positive (weights updated).
    n_features_in_ : int
"""


class _PerceptronBase(_OnlineLinearLearner):
    _algorithm = "perceptron"

    _parameter_constraints = {
        **_OnlineLinearLearner._parameter_constraints,
        "eta": [Interval(Real, 0, None, closed="neither")],
    }

    def __init__(self, eta=1.0, n_epochs=5, fit_intercept=True, shuffle=True, random_state=None):
        self.eta = eta
        self.n_epochs = n_epochs
        self.fit_intercept = fit_intercept
        self.shuffle = shuffle
        self.random_state = random_state


class _PegasosBase(_OnlineLinearLearner):
    _algorithm = "pegasos"

    _parameter_constraints = {
        **_OnlineLinearLearner._parameter_constraints,
        "lam": [Interval(Real, 0, None, closed="neither")],
        "shrink_on_zero_loss": ["boolean"],
    }

    def __init__(self, lam=0.1, shrink_on_zero_loss=False, n_epochs=5, fit_intercept=True,
                 shuffle=True, random_state=None):
        self.lam = lam
        self.shrink_on_zero_loss = shrink_on_zero_loss
        self.n_epochs = n_epochs
        self.fit_intercept = fit_intercept
        self.shuffle = shuffle
        self.random_state = random_state


class _ExactLabelBaseline:
    """Mixin of the exact-label baselines: tags them ``exact_label_baseline``, so plcore's
    protocols feed them the true labels instead of the candidate sets."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.pll_tags.exact_label_baseline = True
        return tags


_DOC_PERCEPTRON = """
    Parameters
    ----------
    eta : float, default=1.0
        Step size; the update is ``w_k <- w_k + eta * tau_k * x`` when the loss is > 0.
""" + _DOC_COMMON

_DOC_PEGASOS = """
    Parameters
    ----------
    lam : float, default=0.1
        Regularisation constant lambda: step ``eta_t = 1 / (lam * t)`` and projection
        onto ``||W||_F <= 1 / sqrt(lam)``.
    shrink_on_zero_loss : bool, default=False
        The choice the paper leaves open. Algorithms 3-4 as printed keep ``W`` unchanged
        when the loss is 0 (False). True applies the regulariser's gradient step
        ``W <- (1 - 1/t) W`` on those trials too, as the original Pegasos does
        (Shalev-Shwartz et al. 2007); ``t`` counts every trial either way.
""" + _DOC_COMMON


class AvgPerceptronLearner(_PerceptronBase):
    """Avg Perceptron: Perceptron on the average prediction hinge loss (Algorithm 1)."""

    _loss = "avg"


class MaxPerceptronLearner(_PerceptronBase):
    """Max Perceptron: Perceptron on the max prediction hinge loss (Algorithm 2)."""

    _loss = "max"


class PerceptronLearner(_ExactLabelBaseline, _PerceptronBase):
    """Multiclass Perceptron on exact labels (baseline of the online paper)."""

    _loss = "avg"


class AvgPegasosLearner(_PegasosBase):
    """Avg Pegasos: Pegasos on the average prediction hinge loss (Algorithm 3)."""

    _loss = "avg"


class MaxPegasosLearner(_PegasosBase):
    """Max Pegasos: Pegasos on the max prediction hinge loss (Algorithm 4)."""

    _loss = "max"


class PegasosLearner(_ExactLabelBaseline, _PegasosBase):
    """Multiclass Pegasos on exact labels (baseline of the online paper)."""

    _loss = "avg"


for _cls, _what in (
    (AvgPerceptronLearner, "APH loss, Eq. (2), sub-gradient Eq. (4); Algorithm 1"),
    (MaxPerceptronLearner, "MPH loss, Eq. (3), sub-gradient Eq. (5); Algorithm 2"),
    (PerceptronLearner, "exact labels: multiclass hinge loss; plcore's protocols feed it "
                        "the true label (tag ``exact_label_baseline``)"),
):
    _cls.__doc__ += f"\n\n    {_what}.\n" + _DOC_PERCEPTRON
for _cls, _what in (
    (AvgPegasosLearner, "APH loss, Eq. (2), sub-gradient Eq. (4), step Eq. (6); Algorithm 3"),
    (MaxPegasosLearner, "MPH loss, Eq. (3), sub-gradient Eq. (5), step Eq. (6); Algorithm 4"),
    (PegasosLearner, "exact labels: multiclass hinge loss; plcore's protocols feed it "
                     "the true label (tag ``exact_label_baseline``)"),
):
    _cls.__doc__ += f"\n\n    {_what}.\n" + _DOC_PEGASOS


def prequential(learner, X, S, classes):
    """Prequential evaluation of one stream: predict each example, then learn from it.

    The compiled predict-then-update kernel registered with plcore's ``online`` protocol
    (``ComponentSpec(prequential=prequential)``, see :mod:`plcore_online.plugin`). It gives
    the predictions of the protocol's generic loop -- ``partial_fit(X[:0], S[:0],
    classes=classes)``, then for each row ``predict(X[i:i+1])`` followed by
    ``partial_fit(X[i:i+1], S[i:i+1])`` -- with one call of the stream kernel
    (:func:`plcore_online._stream.run_stream`) instead of two Python calls per example.

    Parameters
    ----------
    learner : one of the six learners of this module
        Unfitted (a fresh clone); it is initialised as ``partial_fit(X[:0], S[:0],
        classes=classes)`` would and ends fitted on the whole stream. (A fitted learner
        continues its stream, as ``partial_fit`` would; ``classes`` must then equal
        ``classes_``.)
    X : ndarray of shape (n, d)
        Features in stream order (float64).
    S : ndarray of shape (n, q)
        Dense boolean candidate matrix, rows in the same order.
    classes : ndarray of shape (q,)
        All classes (the protocol passes ``arange(q)``).

    Returns
    -------
    ndarray of shape (n,)
        For each row in order, the label (from ``classes``) predicted before learning from it.
    """
    if not isinstance(learner, _OnlineLinearLearner):
        raise TypeError(f"prequential() streams the plcore-online learners, not {type(learner).__name__}")
    preds = learner._partial(X, S, classes)
    return learner.classes_[preds]
