"""plcore-saute: SAUTE partial-label feature selection (KDD 2022) and the RS / MR / MJE baselines."""

from plcore_saute.reducers import (
    MaxJointEntropyReducer,
    MaxRelevanceReducer,
    RandomSelectionReducer,
    SauteReducer,
)

__all__ = ["SauteReducer", "MaxRelevanceReducer", "RandomSelectionReducer", "MaxJointEntropyReducer"]
__version__ = "0.1.0"
