"""plcore-online: Avg/Max Perceptron and Avg/Max Pegasos for streaming partial labels.

Bhattacharjee & Manwani, "Online Algorithms for Multiclass Classification Using Partial
Labels", PAKDD 2020. Learners ``avg_perceptron``, ``max_perceptron``, ``avg_pegasos``,
``max_pegasos`` and the exact-label baselines ``perceptron`` and ``pegasos``.
"""

from plcore_online.learners import (
    AvgPegasosLearner,
    AvgPerceptronLearner,
    MaxPegasosLearner,
    MaxPerceptronLearner,
    PegasosLearner,
    PerceptronLearner,
)

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

#: option name -> class, in the order of the paper's figures
LEARNERS = {
    "perceptron": PerceptronLearner,
    "avg_perceptron": AvgPerceptronLearner,
    "max_perceptron": MaxPerceptronLearner,
    "pegasos": PegasosLearner,
    "avg_pegasos": AvgPegasosLearner,
    "max_pegasos": MaxPegasosLearner,
}
