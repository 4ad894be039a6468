"""One validation mechanism: scikit-learn's ``_parameter_constraints``, checked by the base classes."""

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError as SklearnInvalidParameterError

from plcore import PlKnnLearner
from plcore.base import BaseLearner
from plcore.datasets import ClusterNoisyBags, UniformBags
from plcore.exceptions import DataValidationError, InvalidParameterError, PlcoreError
from plcore.testing import check_parameter_constraints, make_pl_data
from plcore.validation import Integral, Interval, Real, StrOptions, validate_params


def test_invalid_parameter_error_is_every_kind_of_error_callers_catch():
    err = InvalidParameterError("x")
    for cls in (ValueError, TypeError, DataValidationError, PlcoreError, SklearnInvalidParameterError):
        assert isinstance(err, cls)


@pytest.mark.parametrize("value", [True, False, np.bool_(True)])
def test_interval_rejects_booleans(value):
    assert not Interval(Integral, 0, None, closed="left").is_satisfied_by(value)
    assert not Interval(Real, 0, 1, closed="both").is_satisfied_by(value)


def test_interval_accepts_numpy_scalars_in_range():
    assert Interval(Integral, 1, None, closed="left").is_satisfied_by(np.int64(3))
    assert Interval(Real, 0, 1, closed="both").is_satisfied_by(np.float32(0.5))
    assert not Interval(Real, 0, 1, closed="both").is_satisfied_by(1.5)


def test_fit_checks_constraints_once_with_sklearn_message():
    X, S, _ = make_pl_data()
    with pytest.raises(InvalidParameterError, match=r"The 'k' parameter of PlKnnLearner must be an int "
                                                   r"in the range \[1, inf\)\. Got 0 instead\."):
        PlKnnLearner(k=0).fit(X, S)
    with pytest.raises(InvalidParameterError, match="'weights' parameter"):
        PlKnnLearner(weights="inverse").fit(X, S)


def test_generate_checks_constraints_and_data_dependent_ranges_separately():
    y = np.array([0, 1, 2, 1])
    with pytest.raises(InvalidParameterError, match="'r' parameter of UniformBags"):
        UniformBags(r=-1).generate(y)
    with pytest.raises(DataValidationError, match="r must be <= 1") as info:
        UniformBags(r=3).generate(y)
    assert not isinstance(info.value, InvalidParameterError)
    with pytest.raises(InvalidParameterError, match="'eta' parameter of ClusterNoisyBags"):
        ClusterNoisyBags(eta=1.5).generate(y, np.zeros((4, 2)))


class Undeclared(BaseLearner):
    """Declares no constraints: it still works, but the conformance suite rejects it."""

    def __init__(self, k=1, mode="a"):
        self.k = k
        self.mode = mode

    def _fit(self, X, S):
        self.q_ = S.shape[1]

    def _scores(self, X):
        return np.zeros((X.shape[0], self.q_))


class PartlyDeclared(Undeclared):
    _parameter_constraints = {"k": [Interval(Integral, 1, None, closed="left")]}


class OverDeclared(Undeclared):
    _parameter_constraints = {"k": [Interval(Integral, 1, None, closed="left")], "mode": [StrOptions({"a"})],
                              "gone": [None]}


def test_undeclared_parameters_are_not_checked_but_fail_the_conformance_check():
    X, S, _ = make_pl_data()
    Undeclared(k=-5).fit(X, S)  # nothing declared, nothing checked (as in scikit-learn)
    validate_params(Undeclared(k=-5))
    for est, msg in ((Undeclared(), "declare|without constraints"), (PartlyDeclared(), "mode"),
                     (OverDeclared(), "unknown parameters: gone")):
        with pytest.raises(AssertionError, match=msg):
            check_parameter_constraints(type(est).__name__, est)


def test_cli_reports_a_violated_constraint_in_one_line(tmp_path):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "plcore", "learner.k=0", "+learner=plknn", "tracking=none",
                           "protocol.n_splits=2", "dataset=iris", "bags.r=1"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.strip().splitlines()
    assert err == ["error: The 'k' parameter of PlKnnLearner must be an int in the range [1, inf). Got 0 instead."]
