"""plcore-example-plugin: a minimal plcore plugin (one learner, ``+learner=centroid``)."""

from plcore_example.learners import CandidateCentroidLearner

__all__ = ["CandidateCentroidLearner"]
