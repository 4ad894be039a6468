"""The module named by the ``plcore`` entry point ``cenda``: registers the components."""

from plcore.hookspecs import hookimpl
from plcore.registry import ComponentSpec

from plcore_cenda.learner import CendaPlKnnLearner
from plcore_cenda.reducer import CendaReducer


@hookimpl
def plcore_components():
    return [
        ComponentSpec(kind="reducer", name="cenda", cls=CendaReducer,
                      description="CENDA: partial-label dimensionality reduction by confidence-based "
                                  "dependence maximization (Bao et al., KDD 2021)"),
        ComponentSpec(kind="learner", name="plknn_cenda", cls=CendaPlKnnLearner,
                      description="CENDA projection + PL-KNN voting with CENDA's disambiguated "
                                  "training confidences"),
    ]
