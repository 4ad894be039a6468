"""The module named by the ``plcore`` entry point ``deep``: registers the six learners and the
plugin's presets. Importing it imports no PyTorch (the learners load it at their first fit)."""

from plcore.hookspecs import hookimpl
from plcore.presets import load_presets
from plcore.registry import ComponentSpec

from plcore_deep import LEARNERS

#: fast settings for the common conformance test
_TEST_PARAMS = {"hidden_layer_sizes": (16,), "n_epochs": 40, "batch_size": 32, "learning_rate": 1e-2,
                "device": "cpu"}

#: Nested-selection grid (``protocol.select`` with no ``space``), searched from candidate sets
#: only: the optimiser's step and L2 penalty, the two knobs every paper tunes. Inside PLENCH's
#: ranges for tabular data (Wang et al., ICLR 2025: lr 10^U(-4.5, -2.5), weight decay
#: 10^U(-6, -3)), half a decade either side of the default lr and two decades apart in weight
#: decay: 4 points, so that a nested 10-fold run is 130 fits, not 490.
SEARCH_SPACE = {"learning_rate": [3e-4, 3e-3], "weight_decay": [1e-5, 1e-3]}


#: CAVL commits to one hard target per row from the first step on, so a small network can lock
#: onto a wrong class on the raw (unscaled) blobs of the conformance data; a wider one does not
_TEST_OVERRIDES = {"cavl": {"hidden_layer_sizes": (64,)}}


@hookimpl
def plcore_components():
    return [ComponentSpec(kind="learner", name=name, cls=cls, search_space=SEARCH_SPACE,
                          test_params={**_TEST_PARAMS, **_TEST_OVERRIDES.get(name, {})})
            for name, cls in LEARNERS.items()]


@hookimpl
def plcore_experiments():
    """The presets in ``plcore_deep/experiments/*.yaml``."""
    return load_presets("plcore_deep")
