"""Hook implementations of plcore-saute (entry point ``saute``).

Components: the reducers ``saute``, ``random_selection``, ``max_relevance`` and
``max_joint_entropy``; experiment presets: the YAML files of ``plcore_saute/experiments/``
(``saute_lost``, ``paper_saute_lost``).
"""

from plcore.hookspecs import hookimpl
from plcore.presets import load_presets
from plcore.registry import ComponentSpec

from plcore_saute.reducers import (
    MaxJointEntropyReducer,
    MaxRelevanceReducer,
    RandomSelectionReducer,
    SauteReducer,
)


@hookimpl
def plcore_components():
    return [
        ComponentSpec(kind="reducer", name="saute", cls=SauteReducer,
                      description="SAUTE: submodular mutual-information feature selection (KDD 2022)",
                      test_params={"max_iter": 3}),
        ComponentSpec(kind="reducer", name="random_selection", cls=RandomSelectionReducer,
                      description="RS: d' features drawn at random (SAUTE paper baseline)",
                      test_params={"random_state": 0}),
        ComponentSpec(kind="reducer", name="max_relevance", cls=MaxRelevanceReducer,
                      description="MR: SAUTE without the redundancy term, greedy on Eq. (5)",
                      test_params={"max_iter": 3}),
        ComponentSpec(kind="reducer", name="max_joint_entropy", cls=MaxJointEntropyReducer,
                      description="MJE: greedy maximum joint entropy of the discretised features"),
    ]


@hookimpl
def plcore_experiments():
    return load_presets("plcore_saute")
