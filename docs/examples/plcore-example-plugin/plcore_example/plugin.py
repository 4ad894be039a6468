"""The plugin module named by the ``plcore`` entry point: its hook implementations."""

from plcore.hookspecs import hookimpl
from plcore.registry import ComponentSpec

from plcore_example.learners import CandidateCentroidLearner


@hookimpl
def plcore_components():
    # No ``config``: plcore derives the Hydra node from the class,
    # {"_target_": "plcore_example.learners.CandidateCentroidLearner", "n_iter": 5, "temperature": 0.1}.
    # No ``description``: the listing shows the first line of the class docstring.
    # ``test_params``: the (small, fast) instance plcore's common conformance test checks once
    # the plugin is installed (tests/test_common.py of plcore discovers it through the registry).
    return [ComponentSpec(kind="learner", name="centroid", cls=CandidateCentroidLearner,
                          test_params={"n_iter": 3})]
