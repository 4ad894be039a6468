"""plcore-example-plugin: a minimal plcore plugin (one learner, ``+learner=centroid``)."""

from plcore_example.learner import CandidateCentroidLearner

__all__ = ["CandidateCentroidLearner"]
