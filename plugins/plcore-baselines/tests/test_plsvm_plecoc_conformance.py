"""plcore's public conformance suite (scikit-learn's checks + the partial-label checks) for PL-SVM and PL-ECOC."""

import pytest

from plcore.testing import parametrize_with_checks

from plcore_baselines import PlEcocLearner, PlSvmLearner


# PL-ECOC warns when tiny or degenerate data force relaxed columns (e.g. q = 3 with every
# candidate set of size 2): expected on the suite's small data sets.
@pytest.mark.filterwarnings("ignore:PL-ECOC:UserWarning")
@parametrize_with_checks([PlSvmLearner(), PlSvmLearner(C=10.0, fit_intercept=False),
                          PlEcocLearner(), PlEcocLearner(code_length=5, min_side=1)])
def test_plsvm_plecoc_conformance(estimator, check):
    check(estimator)
