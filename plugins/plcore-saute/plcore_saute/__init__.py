"""plcore-saute: SAUTE partial-label feature selection (KDD 2022) and the RS / MR / MJE baselines."""

from typing import TYPE_CHECKING

from plcore.utils import lazy_exports

if TYPE_CHECKING:  # for static tools (the API docs); at run time the names are served lazily
    from plcore_saute.reducers import (MaxJointEntropyReducer, MaxRelevanceReducer, RandomSelectionReducer,
                                       SauteReducer)

__all__ = ["SauteReducer", "MaxRelevanceReducer", "RandomSelectionReducer", "MaxJointEntropyReducer"]
__version__ = "0.1.0"

__getattr__, __dir__ = lazy_exports(globals(), dict.fromkeys(__all__, "plcore_saute.reducers"))
