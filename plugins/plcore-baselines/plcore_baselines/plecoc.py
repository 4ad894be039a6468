"""PL-ECOC: disambiguation-free partial-label learning with error-correcting output codes.

Zhang, Yu & Tang, "Disambiguation-free partial label learning", IEEE TKDE 29(10), 2017
(the CENDA paper's [49]; its Section 4.1 summary: "decomposing the PL learning problem into
a group of binary learning problems via adapting the error-correcting output codes (ECOC)
techniques", coding length ``ceil(10 log2 q)``). We follow the paper's abstract and
algorithm as summarised there and as implemented by the public Python port of the method
(``RandPLECOC``: libsvm ``-t 2 -c 1``, ``|B| >= ceil(0.1 n)``, at least 5 examples a side,
at most 2000 random draws):

Encoding. Repeat until ``L = ceil(10 log2 q)`` columns are kept: draw ``v`` uniformly from
``{+1, -1}^q``; ``Y+ = {l : v_l = +1}``, ``Y- = {l : v_l = -1}``; example ``i`` is a
*positive* binary example if ``S_i`` lies inside ``Y+``, *negative* if inside ``Y-``, else
unused ("its candidate label set entirely falls into the coding dichotomy"). Keep ``v``
when the binary set has ``|B| >= ceil(min_fraction * n)`` examples and each side at least
``min(min_side, floor(|B|_min / 2))`` of them (``min_side`` 5 as in the port, smaller only
for tiny training sets); train a binary classifier ``h_v`` on it (default: SVC with the
Gaussian kernel and ``C = 1`` as the port's libsvm call, ``gamma = 1 / (d Var(X))``, which
is libsvm's default ``1/d`` on standardised features; with ``gamma = 1/d`` on min-max
scaled features accuracy on Lost collapses from ~0.66 to ~0.4). A column equal to a kept
one or to its negation (the same binary problem) is not drawn twice.

Weights. ``G[y, v]`` = accuracy of ``sign(h_v)`` against the code bit ``M[y, v]`` on the
training examples whose candidate set contains ``y``, each row normalised to sum 1
("binary classifiers' empirical performance").

Decoding (loss-based, exponential loss): ``y(x) = argmin_y sum_v G[y, v] exp(-M[y, v] h_v(x))``
with the real-valued output ``h_v(x)`` ("predictive margin"); ``_scores`` is the negative
of that loss. (The opposite sign gives near-chance accuracy: DESIGN.md section 8.)

Degenerate inputs (our addition). When ``max_draws`` random draws (or all ``2^(q-1) - 1``
distinct dichotomies) give fewer than ``L`` admissible columns -- e.g. ``q = 3`` with every
candidate set of size 2, where no dichotomy has examples on both sides -- the code is
filled up with *relaxed* columns, oriented dichotomies in which example ``i`` is positive
when ``S_i`` meets ``Y+`` (the true label *may* be positive), with sample weight
``|S_i n Y+| / |S_i|``, and negative (weight 1) when ``S_i`` lies inside ``Y-`` (it
certainly is negative). With singleton candidate sets this is the strict rule.
A ``UserWarning`` says so and ``n_strict_columns_`` records it. With no usable column at
all (e.g. every candidate set holds every label) the learner predicts the label most
frequent in the training candidate sets.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
from sklearn.base import clone
from sklearn.svm import SVC
from sklearn.utils import check_random_state
from sklearn.utils.validation import has_fit_parameter

from plcore.base import BaseLearner
from plcore.neighbors import LastQueryCache
from plcore.validation import HasMethods, Integral, Interval, Real, StrOptions, validate_params

from plcore_baselines._plecoc import (
    column_split,
    decoding_loss,
    default_code_length,
    generate_code,
    performance_weights,
    relaxed_split,
)

__all__ = ["PlEcocLearner"]


class PlEcocLearner(BaseLearner):
    """PL-ECOC (Zhang, Yu & Tang, TKDE 2017): candidate sets as a whole in random ECOC dichotomies.

    Follows the published description as summarised in the CENDA paper (Section 4.1):
    coding length ``ceil(10 log2 q)``, binary training sets from candidate sets that fall
    entirely on one side of a column, performance-weighted loss-based decoding (see the
    module docstring for the exact rules and the fallback for degenerate inputs).

    Parameters
    ----------
    estimator : scikit-learn binary classifier or None, default=None
        Binary learner, cloned per column. None = ``SVC(kernel="rbf", C=1.0, gamma="scale")``
        (libsvm ``-t 2 -c 1`` on standardised features). Needs ``decision_function`` or
        ``predict_proba``.
    code_length : int or "auto", default="auto"
        Columns wanted, "auto" = ``ceil(10 log2 q)``.
    min_fraction : float in (0, 1], default=0.1
        A column is kept when its binary training set holds at least
        ``ceil(min_fraction * n)`` examples.
    min_side : int, default=5
        ... and each side at least ``min(min_side, that number // 2)`` examples.
    max_draws : int, default=2000
        Random columns drawn at most (then the fallback of the module docstring).
    random_state : int, RandomState or None, default=None
        Column draws (and the binary learner's ``random_state``, when it has one).

    Attributes
    ----------
    code_ : ndarray of shape (n_classes, n_columns)
        Coding matrix ``M`` in {+1, -1}.
    performance_ : ndarray of shape (n_classes, n_columns)
        Weights ``G`` (rows sum to 1).
    estimators_ : list of fitted binary classifiers, one per column
    n_strict_columns_ : int
        Columns obtained by the paper's rule (the rest are relaxed fall-backs).
    column_strict_ : ndarray of shape (n_columns,)
        True for the paper's columns (they come first), False for relaxed ones.
    code_length_ : int
        Columns used (at most ``2^(q-1) - 1``, the number of distinct dichotomies).
    """

    def __init__(self, estimator=None, code_length="auto", min_fraction=0.1, min_side=5,
                 max_draws=2000, random_state=None):
        self.estimator = estimator
        self.code_length = code_length
        self.min_fraction = min_fraction
        self.min_side = min_side
        self.max_draws = max_draws
        self.random_state = random_state

    _parameter_constraints = {
        "estimator": [HasMethods(["fit"]), None],
        "code_length": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "min_fraction": [Interval(Real, 0.0, 1.0, closed="right")],
        "min_side": [Interval(Integral, 1, None, closed="left")],
        "max_draws": [Interval(Integral, 1, None, closed="left")],
        "random_state": ["random_state"],
    }

    def _code_length(self, q):
        """Columns wanted: ``code_length``, or ``ceil(10 log2 q)`` for "auto"."""
        return default_code_length(q) if self.code_length == "auto" else int(self.code_length)

    def _base_estimator(self):
        if self.estimator is None:
            return SVC(kernel="rbf", C=1.0, gamma="scale")
        return clone(self.estimator)

    @staticmethod
    def _margin(est, X):
        if hasattr(est, "decision_function"):
            return np.asarray(est.decision_function(X), dtype=float).ravel()
        proba = est.predict_proba(X)
        col = int(np.flatnonzero(est.classes_ == 1)[0])
        return 2.0 * proba[:, col] - 1.0

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.pll_tags.path_params = ("code_length",)
        return tags

    def _draw_code(self, S, rng):
        """The random code of ``code_length`` columns (``generate_code``), drawn from ``rng``."""
        return generate_code(S, self._code_length(S.shape[1]), rng, min_fraction=float(self.min_fraction),
                             min_side=int(self.min_side), max_draws=int(self.max_draws))

    def _fit(self, X, S):
        self.__dict__.pop("_shared", None)   # a fit_path learner refitted: the shared margins are another fit's
        rng = check_random_state(self.random_state)
        code, strict = self._draw_code(S, rng)
        estimators, H = self._fit_columns(X, S, code, strict, rng)
        self._set_code(S, code, strict, estimators, H)
        return self

    def _fit_columns(self, X, S, code, strict, rng):
        """One binary classifier per column of ``code`` and its margins on the training rows, (n, L)."""
        estimators = []
        H = np.empty((S.shape[0], code.shape[1]))
        for col in range(code.shape[1]):
            v = code[:, col]
            est = self._base_estimator()
            if "random_state" in est.get_params():
                est.set_params(random_state=int(rng.randint(np.iinfo(np.int32).max)))
            if strict[col]:
                pos, neg = column_split(S, v)
                weight = None
            else:
                pos, neg, share = relaxed_split(S, v)
                weight = np.concatenate([share[pos], np.ones(neg.sum())])
            rows = np.concatenate([np.flatnonzero(pos), np.flatnonzero(neg)])
            target = np.concatenate([np.ones(pos.sum()), -np.ones(neg.sum())])
            if weight is not None and has_fit_parameter(est, "sample_weight"):
                est.fit(X[rows], target, sample_weight=weight)
            else:
                est.fit(X[rows], target)
            estimators.append(est)
            H[:, col] = self._margin(est, X)
        return estimators, H

    def _set_code(self, S, code, strict, estimators, H):
        """The fitted attributes from the columns' code, classifiers and training margins ``H``."""
        n, q = S.shape
        self.prior_ = S.sum(axis=0) / n
        self.n_strict_columns_ = int(strict.sum())
        self.code_length_ = int(code.shape[1])
        self.column_strict_ = strict
        length = min(self._code_length(q), 2 ** (q - 1) - 1)
        if self.code_length_ == 0:
            warnings.warn("PL-ECOC: no usable coding column (every dichotomy leaves one side "
                          "empty); predicting the label most frequent in the candidate sets",
                          UserWarning, stacklevel=4)
        elif self.n_strict_columns_ < length:
            warnings.warn(
                f"PL-ECOC: only {self.n_strict_columns_} of {length} columns satisfy the paper's "
                f"rule (candidate set inside one side, enough examples per side) among "
                f"max_draws={self.max_draws} random dichotomies; using {self.code_length_ - self.n_strict_columns_} "
                "relaxed columns (positive: candidate set meets the positive side)",
                UserWarning, stacklevel=4)
        self.code_ = np.where(code, 1, -1).astype(np.int8)
        self.estimators_ = list(estimators)
        self.performance_ = performance_weights(S, code, H)

    def fit_path(self, X, y, points):
        """One fitted learner per ``{code_length}`` dict of ``points`` (tag ``path_params``), each
        predicting as ``clone(self).set_params(**point).fit(X, y)``.

        The columns are drawn one after another until ``code_length`` are kept, so a seeded code of
        ``L`` columns is the first ``L`` columns of the longest code drawn from the same seed (each
        point's own code is drawn, which is cheap, and compared: a point whose code is not such a
        prefix is fitted alone). The default binary learner (SVC; its ``random_state`` only seeds
        probability estimates, which it does not make) is trained once per column of the longest
        code; each point takes its first ``L`` classifiers and its own weights ``G``, and the points
        share the margins of the last query set. Without a seed, or with another binary learner
        (whose fit may use the seed each column gets), every point is fitted alone.
        """
        unknown = sorted({p for point in points for p in point} - {"code_length"})
        if unknown:
            raise ValueError(f"PlEcocLearner.fit_path searches code_length only, got {', '.join(unknown)}")
        if self.estimator is not None or self.random_state is None or len(points) < 2:
            return [clone(self).set_params(**point).fit(X, y) for point in points]
        base = clone(self)
        X_in, (X, S) = X, base._validate_fit(X, y)
        learners = [copy.copy(base).set_params(**{"code_length": self.code_length, **point}) for point in points]
        for learner in learners:
            validate_params(learner)
        longest = max(learners, key=lambda learner: learner._code_length(S.shape[1]))
        rng = check_random_state(clone(longest).random_state)
        code, strict = longest._draw_code(S, rng)
        estimators, H = longest._fit_columns(X, S, code, strict, rng)
        margins = LastQueryCache()
        fitted = []
        for learner in learners:
            own_code, own_strict = learner._draw_code(S, check_random_state(clone(learner).random_state))
            L = own_code.shape[1]
            if not (L <= code.shape[1] and np.array_equal(own_code, code[:, :L])
                    and np.array_equal(own_strict, strict[:L])):
                fitted.append(clone(learner).fit(X_in, y))   # clone: a RandomState seed stays unused
                continue
            learner._set_code(S, own_code, own_strict, estimators[:L], H[:, :L])
            learner._shared = (margins, estimators)
            fitted.append(learner)
        return fitted

    def _margins(self, X):
        """Real outputs ``h_v(x)`` of every column, shape (n, n_columns); a :meth:`fit_path`
        learner reads them from the margins of the longest code's columns on the last query set."""
        if not self.estimators_:
            return np.zeros((X.shape[0], 0))
        shared = self.__dict__.get("_shared")
        if shared is not None:
            cache, columns = shared
            return cache.get(X, lambda Q: self._column_margins(columns, Q))[:, :self.code_length_]
        return self._column_margins(self.estimators_, X)

    def __getstate__(self):
        """Pickled without the shared margins (the last query set's), which its own columns recompute."""
        state = dict(super().__getstate__())   # a copy: the fitted learner keeps its own
        state.pop("_shared", None)
        return state

    def _column_margins(self, estimators, X):
        return np.column_stack([self._margin(est, X) for est in estimators])

    def _scores(self, X):
        if self.code_length_ == 0:
            return np.tile(self.prior_, (X.shape[0], 1))
        return -decoding_loss(self.performance_, self.code_ > 0, self._margins(X))
