"""plcore-example-plugin: a minimal plcore plugin (one learner, ``+learner=centroid``)."""

from plcore._lazy import lazy_exports

__all__ = ["CandidateCentroidLearner"]

__getattr__, __dir__ = lazy_exports(globals(), {"CandidateCentroidLearner": "plcore_example.learners"})
