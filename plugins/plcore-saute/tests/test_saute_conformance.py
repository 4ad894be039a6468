"""plcore's public conformance suite on the four selectors of plcore-saute."""

from plcore.testing import parametrize_with_checks

from plcore_saute import (
    MaxJointEntropyReducer,
    MaxRelevanceReducer,
    RandomSelectionReducer,
    SauteReducer,
)


@parametrize_with_checks([SauteReducer(), SauteReducer(n_features=2, k=3, max_iter=3),
                          MaxRelevanceReducer(), RandomSelectionReducer(random_state=0),
                          MaxJointEntropyReducer()])
def test_conformance(estimator, check):
    check(estimator)
