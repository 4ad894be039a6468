"""Parameter checks shared by components: one wording for every out-of-range parameter.

Each raises :class:`~plcore.exceptions.DataValidationError` (a ``ValueError``) naming the
parameter, the accepted range and the value given. Call them in ``fit`` (scikit-learn
estimators validate parameters in ``fit``, never in ``__init__``).
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from plcore.exceptions import DataValidationError

__all__ = ["check_int", "check_real", "check_option"]


def _range(low, high, closed_low=True, closed_high=True):
    if high is None:
        return f">= {low}" if closed_low else f"> {low}"
    lo = "[" if closed_low else "("
    hi = "]" if closed_high else ")"
    return f"in {lo}{low}, {high}{hi}"


def check_int(value, name: str, low=None, high=None) -> int:
    """``value`` must be an integer (not bool) in ``[low, high]``; returns ``int(value)``."""
    if not isinstance(value, (numbers.Integral, np.integer)) or isinstance(value, (bool, np.bool_)):
        raise DataValidationError(f"{name} must be an integer, got {value!r}")
    if (low is not None and value < low) or (high is not None and value > high):
        raise DataValidationError(f"{name} must be an integer {_range(low, high)}, got {value}")
    return int(value)


def check_real(value, name: str, low=None, high=None, *, closed_low=True, closed_high=True) -> float:
    """``value`` must be a finite real number in the given (closed or open) interval."""
    if (not isinstance(value, (numbers.Real, np.floating, np.integer)) or isinstance(value, (bool, np.bool_))
            or not math.isfinite(float(value))):
        raise DataValidationError(f"{name} must be a finite real number, got {value!r}")
    v = float(value)
    bad_low = low is not None and (v < low if closed_low else v <= low)
    bad_high = high is not None and (v > high if closed_high else v >= high)
    if bad_low or bad_high:
        raise DataValidationError(f"{name} must be {_range(low, high, closed_low, closed_high)}, got {value}")
    return v


def check_option(value, name: str, options) -> str:
    """``value`` must be one of ``options``."""
    if value not in tuple(options):
        raise DataValidationError(f"{name} must be one of {tuple(options)}, got {value!r}")
    return value
