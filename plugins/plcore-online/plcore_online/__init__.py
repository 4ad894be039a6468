"""plcore-online: Avg/Max Perceptron and Avg/Max Pegasos for streaming partial labels.

Bhattacharjee & Manwani, "Online Algorithms for Multiclass Classification Using Partial
Labels", PAKDD 2020. Learners ``avg_perceptron``, ``max_perceptron``, ``avg_pegasos``,
``max_pegasos`` and the exact-label baselines ``perceptron`` and ``pegasos``.
"""

from importlib.metadata import version as _version
from typing import TYPE_CHECKING

from plcore.utils import lazy_exports

if TYPE_CHECKING:  # for static tools (the API docs); at run time the names are served lazily
    from plcore_online.learners import (AvgPegasosLearner, AvgPerceptronLearner, MaxPegasosLearner,
                                        MaxPerceptronLearner, PegasosLearner, PerceptronLearner)

__version__ = _version("plcore-online")   # from the package metadata: the version is pyproject.toml's

__all__ = ["PerceptronLearner", "AvgPerceptronLearner", "MaxPerceptronLearner",
           "PegasosLearner", "AvgPegasosLearner", "MaxPegasosLearner", "__version__"]

__getattr__, __dir__ = lazy_exports(globals(), dict.fromkeys(
    ("PerceptronLearner", "AvgPerceptronLearner", "MaxPerceptronLearner",
     "PegasosLearner", "AvgPegasosLearner", "MaxPegasosLearner"), "plcore_online.learners"))
