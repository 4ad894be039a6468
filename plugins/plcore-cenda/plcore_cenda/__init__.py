"""plcore-cenda: CENDA partial-label dimensionality reduction (``+reducer=cenda``).

Also ships ``+learner=plknn_cenda``: CENDA followed by PL-KNN voting with CENDA's
disambiguated training confidences instead of the raw candidate sets.
"""

from plcore_cenda._core import CendaConditioningWarning
from plcore_cenda.learners import CendaPlKnnLearner
from plcore_cenda.reducers import CendaReducer

__all__ = ["CendaReducer", "CendaPlKnnLearner", "CendaConditioningWarning"]
__version__ = "0.1.0"
