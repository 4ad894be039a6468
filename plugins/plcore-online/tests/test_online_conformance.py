"""plcore's conformance suite (scikit-learn's checks + the partial-label checks) on all six learners."""

from plcore.testing import parametrize_with_checks

from plcore_online import LEARNERS


@parametrize_with_checks([cls() for cls in LEARNERS.values()])
def test_conformance(estimator, check):
    check(estimator)
