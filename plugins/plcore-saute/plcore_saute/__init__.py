"""plcore-saute: SAUTE partial-label feature selection (KDD 2022) and the RS / MR / MJE baselines."""

from importlib.metadata import version as _version
from typing import TYPE_CHECKING

from plcore.utils import lazy_exports

if TYPE_CHECKING:  # for static tools (the API docs); at run time the names are served lazily
    from plcore_saute.reducers import (MaxJointEntropyReducer, MaxRelevanceReducer, RandomSelectionReducer,
                                       SauteReducer)

__version__ = _version("plcore-saute")   # from the package metadata: the version is pyproject.toml's

__all__ = ["SauteReducer", "MaxRelevanceReducer", "RandomSelectionReducer", "MaxJointEntropyReducer", "__version__"]

__getattr__, __dir__ = lazy_exports(globals(), dict.fromkeys(
    ("SauteReducer", "MaxRelevanceReducer", "RandomSelectionReducer", "MaxJointEntropyReducer"),
    "plcore_saute.reducers"))
