"""The module named by the ``plcore`` entry point ``cenda``: the plugin's hooks.

Components: ``reducer=cenda`` and ``learner=plknn_cenda``; experiment presets: the YAML
files of ``plcore_cenda/experiments/`` (``cenda_lost``, ``paper_cenda_lost``,
``paper_cenda_lost_transductive``).
"""

from plcore.hookspecs import hookimpl
from plcore.presets import load_presets
from plcore.registry import ComponentSpec

from plcore_cenda.learners import CendaPlKnnLearner
from plcore_cenda.reducers import CendaReducer


@hookimpl
def plcore_components():
    return [
        ComponentSpec(kind="reducer", name="cenda", cls=CendaReducer,
                      description="CENDA: partial-label dimensionality reduction by confidence-based "
                                  "dependence maximization (Bao et al., KDD 2021)",
                      # a few alternations, run to the end (tol=0: no ConvergenceWarning)
                      test_params={"max_iter": 5, "tol": 0.0}),
        ComponentSpec(kind="learner", name="plknn_cenda", cls=CendaPlKnnLearner,
                      description="CENDA projection + PL-KNN voting with CENDA's disambiguated "
                                  "training confidences",
                      test_params={"k": 3, "cenda_max_iter": 5, "cenda_tol": 0.0}),
    ]


@hookimpl
def plcore_experiments():
    return load_presets("plcore_cenda")
