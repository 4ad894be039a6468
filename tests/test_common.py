"""The common conformance test: every installed component, discovered through the registry.

Core components and those of every installed plugin (including third-party ones) are
checked at their ``ComponentSpec.test_params`` -- the same checks a plugin runs on its own
variants in its ``tests/test_conformance.py``.
"""

import warnings

import pytest
from sklearn.exceptions import ConvergenceWarning

from plcore.testing import parametrize_with_registry


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@parametrize_with_registry()
def test_common(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)
