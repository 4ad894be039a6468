"""plcore's public conformance suite (scikit-learn's checks + the partial-label checks).

The registered defaults (with their ``test_params``) are checked by the core's common
test; here the non-default variants the plugin tests besides.
"""

import warnings

import pytest
from sklearn.exceptions import ConvergenceWarning

from plcore.testing import parametrize_with_checks

from plcore_cenda import CendaPlKnnLearner, CendaReducer


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@parametrize_with_checks([CendaReducer(), CendaReducer(n_components=1, max_iter=3, tol=0.0),
                          CendaPlKnnLearner(k=3)])
def test_conformance(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)
