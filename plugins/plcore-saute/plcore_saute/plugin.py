"""Hook implementations of plcore-saute (entry point ``saute``).

Components: the reducers ``saute``, ``random_selection``, ``max_relevance`` and
``max_joint_entropy``; experiment presets: the YAML files of ``plcore_saute/experiments/``
(``saute_lost``, ``paper_saute_lost``).
"""

from plcore.registry import ComponentSpec, hookimpl, load_presets

#: Nested-selection grid (``protocol.select`` with no ``space``) of every selector, from the
#: SAUTE paper (KDD 2022), Section 4.4 "Sensitivity Analysis" and Figs. 1-2: d' = ceil(beta d)
#: with beta from 0.05 to 0.6 in steps of 0.05 -- the paper's whole grid, 12 points, given as
#: ``n_features`` fractions. Section 4.4 calls d' "an essential parameter" whose fine-tuning
#: "could achieve further improvement" (default ceil(0.15 d)). Not searched: ``alpha`` and ``k``
#: (Fig. 3 sweeps alpha 0.2 .. 0.8 and k 3 .. 10 and finds accuracy "relatively stable"; the paper
#: fixes 0.6 and 8), nor ``var_smoothing`` (ours, not the paper's). Fig. 2 sweeps the same beta
#: grid for the paper's comparison selectors RS, MR and MJE, so they declare it too: a
#: comparison that tunes SAUTE's d' tunes theirs alike.
N_FEATURES_GRID = [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6]
SEARCH_SPACE = {"n_features": N_FEATURES_GRID}

_REDUCERS = "plcore_saute.reducers"
_GREEDY = {"alpha": 0.6, "k": 8, "max_iter": 20, "n_features": None, "random_state": None, "var_smoothing": 0.3}


@hookimpl
def plcore_components():
    return [
        ComponentSpec(kind="reducer", name="saute", cls=f"{_REDUCERS}:SauteReducer", config=dict(_GREEDY),
                      display_name="SAUTE",
                      description="SAUTE: submodular mutual-information feature selection (KDD 2022)",
                      test_params={"max_iter": 3},
                      search_space=SEARCH_SPACE),
        ComponentSpec(kind="reducer", name="random_selection", cls=f"{_REDUCERS}:RandomSelectionReducer",
                      config={"n_features": None, "random_state": None},
                      display_name="RS",
                      description="RS: d' features drawn at random (SAUTE paper baseline)",
                      test_params={"random_state": 0},
                      search_space=SEARCH_SPACE),
        ComponentSpec(kind="reducer", name="max_relevance", cls=f"{_REDUCERS}:MaxRelevanceReducer", config=dict(_GREEDY),
                      display_name="MR",
                      description="MR: SAUTE without the redundancy term, greedy on Eq. (5)",
                      test_params={"max_iter": 3},
                      search_space=SEARCH_SPACE),
        ComponentSpec(kind="reducer", name="max_joint_entropy", cls=f"{_REDUCERS}:MaxJointEntropyReducer", config={"n_features": None},
                      display_name="MJE",
                      description="MJE: greedy maximum joint entropy of the discretised features",
                      search_space=SEARCH_SPACE),
    ]


@hookimpl
def plcore_experiments():
    return load_presets("plcore_saute")
