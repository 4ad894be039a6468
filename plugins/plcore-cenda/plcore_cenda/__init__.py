"""plcore-cenda: CENDA partial-label dimensionality reduction (``+reducer=cenda``).

Also ships ``+learner=plknn_cenda``: CENDA followed by PL-KNN voting with CENDA's
disambiguated training confidences instead of the raw candidate sets.
"""

from importlib.metadata import version as _version
from typing import TYPE_CHECKING

from plcore.utils import lazy_exports

if TYPE_CHECKING:  # for static tools (the API docs); at run time the names are served lazily
    from plcore_cenda.exceptions import CendaConditioningWarning
    from plcore_cenda.learners import CendaPlKnnLearner
    from plcore_cenda.reducers import CendaReducer

__version__ = _version("plcore-cenda")   # from the package metadata: the version is pyproject.toml's

__all__ = ["CendaReducer", "CendaPlKnnLearner", "CendaConditioningWarning", "__version__"]

__getattr__, __dir__ = lazy_exports(globals(), {"CendaReducer": "plcore_cenda.reducers",
                                                "CendaPlKnnLearner": "plcore_cenda.learners",
                                                "CendaConditioningWarning": "plcore_cenda.exceptions"})
