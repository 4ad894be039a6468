"""One validation mechanism for constructor parameters: scikit-learn's ``_parameter_constraints``.

Every estimator of the core and of the plugins declares a class attribute

    _parameter_constraints = {"k": [Interval(Integral, 1, None, closed="left")],
                              "weights": [StrOptions({"linear", "uniform"})],
                              "random_state": ["random_state"]}

and the base classes check it once, at the start of ``fit`` / ``partial_fit`` /
``generate`` (:func:`validate_params`), as scikit-learn does. A violation raises
:class:`~plcore.exceptions.InvalidParameterError`: scikit-learn's error type (a
``ValueError``) and a :class:`~plcore.exceptions.PlcoreError`, so the command line reports
it in one line. Parameters bounded by the data's shape are declared too, in a class attribute
``_data_limits = {"n_clusters": "n_samples", "n_features": "n_features"}`` (the value may
not exceed the data's number of rows, features or classes): :func:`check_data_limits` checks
them at the start of ``fit`` and, with the data set's shape, before a command-line run starts.
Other checks that depend on the data (``r <= q - 1``) stay in ``fit`` and raise
:class:`~plcore.exceptions.DataValidationError`.

The constraint types are re-exported here so that plugins depend on one spelling
(scikit-learn keeps them in a private module).
"""

from __future__ import annotations

from numbers import Integral, Real

from sklearn.utils._param_validation import HasMethods, Hidden, Options, RealNotInt, StrOptions
from sklearn.utils._param_validation import Interval as _SklearnInterval
from sklearn.utils._param_validation import InvalidParameterError as _SklearnInvalidParameterError

from plcore.exceptions import DataValidationError, InvalidParameterError

__all__ = ["validate_params", "check_data_limits", "Interval", "StrOptions", "Options", "HasMethods", "Hidden",
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


_DIMENSIONS = {"n_samples": "row(s)", "n_features": "feature(s)", "n_classes": "class(es)"}


def check_data_limits(estimator, *, n_samples: int | None = None, n_features: int | None = None,
                      n_classes: int | None = None) -> None:
    """Check the parameters the estimator bounds by the data's shape (its ``_data_limits``,
    ``{parameter: dimension or tuple of dimensions}``, each ``"n_samples"``, ``"n_features"``
    or ``"n_classes"``): an integer above the data's dimension (the smallest, for a tuple) raises
    :class:`~plcore.exceptions.DataValidationError` in one line. ``None`` (a parameter left to
    the data, or a dimension not given) and fractions are not checked."""
    shape = {"n_samples": n_samples, "n_features": n_features, "n_classes": n_classes}
    params = estimator.get_params(deep=False)
    for name, dimensions in getattr(estimator, "_data_limits", {}).items():
        value = params.get(name)
        if value is None or isinstance(value, bool) or not isinstance(value, Integral):
            continue
        for dimension in (dimensions,) if isinstance(dimensions, str) else tuple(dimensions):
            limit = shape[dimension]
            if limit is not None and value > limit:
                raise DataValidationError(f"{type(estimator).__name__}: {name}={value} exceeds the {limit} "
                                          f"{_DIMENSIONS[dimension]} of the data")
