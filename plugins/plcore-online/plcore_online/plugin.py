"""The module named by the ``plcore`` entry point ``online``: registers the six learners,
their compiled prequential kernel and the plugin's experiment presets."""

from plcore.hookspecs import hookimpl
from plcore.presets import load_presets
from plcore.registry import ComponentSpec

from plcore_online import LEARNERS
from plcore_online.learners import prequential

#: fast settings for the common conformance test (one pass instead of five)
_TEST_PARAMS = {"n_epochs": 1}


@hookimpl
def plcore_components():
    # Config nodes are derived from the classes ({"_target_": ..., **get_params()}).
    return [ComponentSpec(kind="learner", name=name, cls=cls, prequential=prequential,
                          test_params=dict(_TEST_PARAMS))
            for name, cls in LEARNERS.items()]


@hookimpl
def plcore_experiments():
    # the paper's figure set-ups: plcore_online/experiments/*.yaml
    return load_presets("plcore_online")
