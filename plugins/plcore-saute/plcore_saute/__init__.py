"""plcore-saute: SAUTE partial-label feature selection (KDD 2022) and the RS / MR / MJE baselines."""

from plcore._lazy import lazy_exports

__all__ = ["SauteReducer", "MaxRelevanceReducer", "RandomSelectionReducer", "MaxJointEntropyReducer"]
__version__ = "0.1.0"

__getattr__, __dir__ = lazy_exports(globals(), dict.fromkeys(__all__, "plcore_saute.reducers"))
