"""plcore: a framework for partial-label learning.

Interfaces (:mod:`plcore.base`), data (:mod:`plcore.data`, :mod:`plcore.datasets`),
bag generators, metrics, evaluation protocols and the built-in PL-KNN learner.
The public names below are imported on first use, so that ``import plcore`` (and
``python -m plcore list`` / ``--help``) does not load scikit-learn.
"""

from typing import TYPE_CHECKING

from plcore._version import __version__
from plcore.exceptions import DataValidationError, DatasetNotFoundError, PlcoreError
from plcore.utils import lazy_exports

if TYPE_CHECKING:  # for static tools (the API docs); at run time the names are served lazily
    from plcore.base import BaseBagGenerator, BaseClusterer, BaseLearner, BaseReducer
    from plcore.data import PLDataset, check_partial_labels
    from plcore.learners import PlKnnLearner
    from plcore.registry import hookimpl

__all__ = [
    "__version__",
    "BaseBagGenerator",
    "BaseClusterer",
    "BaseLearner",
    "BaseReducer",
    "PLDataset",
    "check_partial_labels",
    "DataValidationError",
    "DatasetNotFoundError",
    "PlcoreError",
    "PlKnnLearner",
    "hookimpl",
]

__getattr__, __dir__ = lazy_exports(globals(), {
    "BaseBagGenerator": "plcore.base", "BaseClusterer": "plcore.base", "BaseLearner": "plcore.base",
    "BaseReducer": "plcore.base", "PLDataset": "plcore.data", "check_partial_labels": "plcore.data",
    "PlKnnLearner": "plcore.learners", "hookimpl": "plcore.registry",
})
