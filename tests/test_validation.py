"""Shared parameter checks."""

import numpy as np
import pytest

from plcore.validation import check_int, check_option, check_real


def test_check_int():
    assert check_int(np.int64(3), "k", low=1) == 3
    for bad in (0, -2):
        with pytest.raises(ValueError, match=r"k must be an integer >= 1, got"):
            check_int(bad, "k", low=1)
    for bad in (2.5, True, "3", None):
        with pytest.raises(ValueError, match="k must be an integer, got"):
            check_int(bad, "k", low=1)
    with pytest.raises(ValueError, match=r"r must be an integer in \[0, 4\], got 5"):
        check_int(5, "r", 0, 4)


def test_check_real():
    assert check_real(0.5, "eta", 0, 1) == 0.5
    assert check_real(1, "eta", 0, 1) == 1.0
    with pytest.raises(ValueError, match=r"eta must be in \[0, 1\], got 1.5"):
        check_real(1.5, "eta", 0, 1)
    with pytest.raises(ValueError, match=r"mu must be in \(0, 1\], got 0"):
        check_real(0, "mu", 0, 1, closed_low=False)
    for bad in (float("nan"), float("inf"), "x", None, True):
        with pytest.raises(ValueError, match="must be a finite real number"):
            check_real(bad, "eta", 0, 1)


def test_check_option():
    assert check_option("linear", "weights", ("linear", "uniform")) == "linear"
    with pytest.raises(ValueError, match=r"weights must be one of \('linear', 'uniform'\), got 'x'"):
        check_option("x", "weights", ("linear", "uniform"))
