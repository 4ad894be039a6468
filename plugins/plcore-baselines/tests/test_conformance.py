"""plcore's public conformance suite (scikit-learn's checks + the partial-label checks) for the
plugin's estimators: the defaults and the non-default variants. The core's common test checks
every registered component with its ``test_params`` (plugin.py) as well."""

import pytest

from plcore.testing import parametrize_with_checks

from plcore_baselines import DelinReducer, DstPllLearner, IpalLearner, PlEcocLearner, PlSvmLearner


# PL-ECOC warns when tiny or degenerate data force relaxed columns (e.g. q = 3 with every
# candidate set of size 2), DELIN's vote update may not settle within max_iter: both expected
# on the suite's small data sets.
@pytest.mark.filterwarnings("ignore:PL-ECOC:UserWarning")
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@parametrize_with_checks([IpalLearner(), DstPllLearner(), DstPllLearner(n_neighbors=3),
                          PlSvmLearner(), PlSvmLearner(C=10.0, fit_intercept=False),
                          PlEcocLearner(), PlEcocLearner(code_length=5, min_side=1),
                          DelinReducer(), DelinReducer(n_components=1, update="aggregate", max_iter=3)])
def test_conformance(estimator, check):
    check(estimator)
