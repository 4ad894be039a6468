"""The plugin module named by the ``plcore`` entry point: its hook implementations.

It imports none of the plugin's modules: the learner is named by its import path, with its
config node (the constructor's defaults) and description, so ``python -m plcore list`` and
``--help`` stay fast; plcore imports the class when a run creates it.
"""

from plcore.registry import ComponentSpec, hookimpl


@hookimpl
def plcore_components():
    # ``config``: the Hydra node (``_target_`` is added from ``cls``): the constructor's parameters
    # and defaults; plcore's common conformance test checks the keys and that it makes a valid learner.
    # ``test_params``: the (small, fast) instance plcore's common conformance test checks once
    # the plugin is installed (tests/test_common.py of plcore discovers it through the registry).
    return [ComponentSpec(kind="learner", name="centroid", cls="plcore_example.learners:CandidateCentroidLearner",
                          config={"n_iter": 5, "temperature": 0.1},
                          description="Nearest class centroid, with centroids estimated from the candidate sets.",
                          display_name="Candidate centroid",
                          test_params={"n_iter": 3})]
