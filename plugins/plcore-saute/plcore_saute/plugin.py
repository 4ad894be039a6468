"""Hook implementations of plcore-saute (entry point ``saute``)."""

from plcore.hookspecs import hookimpl
from plcore.registry import ComponentSpec

from plcore_saute.selectors import (
    MaxJointEntropyReducer,
    MaxRelevanceReducer,
    RandomSelectionReducer,
    SauteReducer,
)


@hookimpl
def plcore_components():
    return [
        ComponentSpec(kind="reducer", name="saute", cls=SauteReducer,
                      description="SAUTE: submodular mutual-information feature selection (KDD 2022)"),
        ComponentSpec(kind="reducer", name="random_selection", cls=RandomSelectionReducer,
                      description="RS: d' features drawn at random (SAUTE paper baseline)"),
        ComponentSpec(kind="reducer", name="max_relevance", cls=MaxRelevanceReducer,
                      description="MR: SAUTE without the redundancy term, greedy on Eq. (5)"),
        ComponentSpec(kind="reducer", name="max_joint_entropy", cls=MaxJointEntropyReducer,
                      description="MJE: greedy maximum joint entropy of the discretised features"),
    ]
