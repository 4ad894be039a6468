"""The module named by the ``plcore`` entry point ``online``: registers the six learners."""

from plcore.hookspecs import hookimpl
from plcore.registry import ComponentSpec

from plcore_online import LEARNERS


@hookimpl
def plcore_components():
    # Config nodes are derived from the classes ({"_target_": ..., **get_params()}).
    return [ComponentSpec(kind="learner", name=name, cls=cls) for name, cls in LEARNERS.items()]
