"""plcore-online: Avg/Max Perceptron and Avg/Max Pegasos for streaming partial labels.

Bhattacharjee & Manwani, "Online Algorithms for Multiclass Classification Using Partial
Labels", PAKDD 2020. Learners ``avg_perceptron``, ``max_perceptron``, ``avg_pegasos``,
``max_pegasos`` and the exact-label baselines ``perceptron`` and ``pegasos``.
"""

from typing import TYPE_CHECKING

from plcore.utils import lazy_exports

if TYPE_CHECKING:  # for static tools (the API docs); at run time the names are served lazily
    from plcore_online.learners import (AvgPegasosLearner, AvgPerceptronLearner, MaxPegasosLearner,
                                        MaxPerceptronLearner, PegasosLearner, PerceptronLearner)

__version__ = "0.1.0"

__all__ = [
    "AvgPerceptronLearner",
    "MaxPerceptronLearner",
    "AvgPegasosLearner",
    "MaxPegasosLearner",
    "PerceptronLearner",
    "PegasosLearner",
    "LEARNERS",
]

#: option name -> class name in :mod:`plcore_online.learners`, in the order of the paper's figures
LEARNER_CLASSES = {
    "perceptron": "PerceptronLearner",
    "avg_perceptron": "AvgPerceptronLearner",
    "max_perceptron": "MaxPerceptronLearner",
    "pegasos": "PegasosLearner",
    "avg_pegasos": "AvgPegasosLearner",
    "max_pegasos": "MaxPegasosLearner",
}

__getattr__, __dir__ = lazy_exports(globals(), dict.fromkeys(LEARNER_CLASSES.values(), "plcore_online.learners"),
                                    tables={"LEARNERS": LEARNER_CLASSES})   # LEARNERS: option name -> class
