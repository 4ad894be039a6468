"""plcore's public conformance suite on the four selectors of plcore-saute.

The registered defaults (with their ``test_params``) are checked by the core's common
test; here the configurations the plugin checks besides.
"""

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
