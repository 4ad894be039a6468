"""One validation mechanism for constructor parameters: scikit-learn's ``_parameter_constraints``.

Every estimator of the core and of the plugins declares a class attribute

    _parameter_constraints = {"k": [Interval(Integral, 1, None, closed="left")],
                              "weights": [StrOptions({"linear", "uniform"})],
                              "random_state": ["random_state"]}

and the base classes check it once, at the start of ``fit`` / ``partial_fit`` /
``generate`` (:func:`validate_params`), as scikit-learn does. A violation raises
:class:`~plcore.exceptions.InvalidParameterError`: scikit-learn's error type (a
``ValueError``) and a :class:`~plcore.exceptions.PlcoreError`, so the command line reports
it in one line. Checks that depend on the data (``r <= q - 1``) stay in ``fit`` and raise
:class:`~plcore.exceptions.DataValidationError`.

The constraint types are re-exported here so that plugins depend on one spelling
(scikit-learn keeps them in a private module).
"""

from __future__ import annotations

from numbers import Integral, Real

from sklearn.utils._param_validation import HasMethods, Hidden, Options, RealNotInt, StrOptions
from sklearn.utils._param_validation import Interval as _SklearnInterval
from sklearn.utils._param_validation import InvalidParameterError as _SklearnInvalidParameterError

from plcore.exceptions import InvalidParameterError

__all__ = ["validate_params", "Interval", "StrOptions", "Options", "HasMethods", "Hidden",
           "Integral", "Real", "RealNotInt"]


class Interval(_SklearnInterval):
    """scikit-learn's ``Interval`` that also rejects booleans (``k=True`` is a mistake, not 1)."""

    def is_satisfied_by(self, val):
        if isinstance(val, bool):
            return False
        return super().is_satisfied_by(val)


def validate_params(estimator) -> None:
    """Check ``estimator.get_params(deep=False)`` against its ``_parameter_constraints``."""
    try:
        estimator._validate_params()
    except _SklearnInvalidParameterError as err:
        raise InvalidParameterError(str(err)) from None
