"""plcore's public conformance suite (scikit-learn's checks + the partial-label checks)."""

from plcore.testing import parametrize_with_checks

from plcore_example import CandidateCentroidLearner


@parametrize_with_checks([CandidateCentroidLearner()])
def test_conformance(estimator, check):
    check(estimator)
