"""plcore-cenda: CENDA partial-label dimensionality reduction (``+reducer=cenda``).

Also ships ``+learner=plknn_cenda``: CENDA followed by PL-KNN voting with CENDA's
disambiguated training confidences instead of the raw candidate sets.
"""

from typing import TYPE_CHECKING

from plcore.utils import lazy_exports

if TYPE_CHECKING:  # for static tools (the API docs); at run time the names are served lazily
    from plcore_cenda._core import CendaConditioningWarning
    from plcore_cenda.learners import CendaPlKnnLearner
    from plcore_cenda.reducers import CendaReducer

__all__ = ["CendaReducer", "CendaPlKnnLearner", "CendaConditioningWarning"]
__version__ = "0.1.0"

__getattr__, __dir__ = lazy_exports(globals(), {"CendaReducer": "plcore_cenda.reducers",
                                                "CendaPlKnnLearner": "plcore_cenda.learners",
                                                "CendaConditioningWarning": "plcore_cenda._core"})
