"""plcore-example-plugin: a minimal plcore plugin (one learner, ``+learner=centroid``)."""

from typing import TYPE_CHECKING

from plcore.utils import lazy_exports

if TYPE_CHECKING:  # for static tools (the API docs); at run time the names are served lazily
    from plcore_example.learners import CandidateCentroidLearner

__all__ = ["CandidateCentroidLearner"]

__getattr__, __dir__ = lazy_exports(globals(), {"CandidateCentroidLearner": "plcore_example.learners"})
