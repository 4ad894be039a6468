"""plcore: a framework for partial-label learning.

Interfaces (:mod:`plcore.base`), data (:mod:`plcore.data`, :mod:`plcore.datasets`),
bag generators, metrics, evaluation protocols and the built-in PL-KNN learner.
"""

__version__ = "0.1.0"

from plcore.base import BaseBagGenerator, BaseClusterer, BaseLearner, BaseReducer  # noqa: E402
from plcore.data import PLDataset, check_partial_labels  # noqa: E402
from plcore.exceptions import DataValidationError, DatasetNotFoundError, PlcoreError  # noqa: E402
from plcore.hookspecs import hookimpl  # noqa: E402
from plcore.learners import PlKnnLearner  # noqa: E402

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
