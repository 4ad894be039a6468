"""The module named by the ``plcore`` entry point ``cenda``: the plugin's hooks.

Components: ``reducer=cenda`` and ``learner=plknn_cenda``; experiment presets: the YAML
files of ``plcore_cenda/experiments/`` (``cenda_lost``, ``paper_cenda_lost``,
``paper_cenda_lost_transductive``).
"""

from plcore.registry import ComponentSpec, hookimpl, load_presets

#: Nested-selection grid of ``reducer=cenda`` (``protocol.select`` with no ``space``), from the
#: CENDA paper (Bao et al., KDD 2021), Section 4.4 "Sensitivity Analysis":
#: - ``thr`` in {0.9, 0.99, 0.999}: exactly the values of Table 7 ("no single value of thr ...
#:   can consistently lead to the best performance": the parameter worth tuning);
#: - ``mu``: Fig. 2 sweeps 0.2 .. 0.8 in steps of 0.1; we keep both ends and the default 0.5.
#: 3 x 3 = 9 points. Not searched, to keep the grid within ~12 points: ``k`` (Fig. 2 sweeps
#: 3 .. 10 and finds accuracy "relatively stable"; fixed at 8, Section 4.1) and ``alpha`` ("set
#: to the default value of 1", Section 3 under Eq. (13); the paper gives no grid). Name them in
#: ``protocol.select.space`` to search them too.
CENDA_SEARCH_SPACE = {"thr": [0.9, 0.99, 0.999], "mu": [0.2, 0.5, 0.8]}

#: ``learner=plknn_cenda``: the same paper grid on its forwarded CENDA parameters. Its own
#: PL-KNN ``k`` stays at 10, the configuration the paper couples CENDA with (Section 4.1,
#: "PL-KNN [suggested configuration: k=10]"; Table 7 varies thr at that k).
PLKNN_CENDA_SEARCH_SPACE = {f"cenda_{name}": values for name, values in CENDA_SEARCH_SPACE.items()}


@hookimpl
def plcore_components():
    return [
        ComponentSpec(kind="reducer", name="cenda", cls="plcore_cenda.reducers:CendaReducer",
                      display_name="CENDA",
                      config={"algorithm": "auto", "alpha": 1.0, "k": 8, "max_iter": 50, "mu": 0.5,
                              "n_components": None, "n_jobs": None, "thr": 0.999, "tol": 1e-06},
                      description="CENDA: partial-label dimensionality reduction by confidence-based "
                                  "dependence maximization (Bao et al., KDD 2021)",
                      # a few alternations, run to the end (tol=0: no ConvergenceWarning)
                      test_params={"max_iter": 5, "tol": 0.0},
                      search_space=CENDA_SEARCH_SPACE),
        ComponentSpec(kind="learner", name="plknn_cenda", cls="plcore_cenda.learners:CendaPlKnnLearner",
                      display_name="PL-KNN-CENDA",
                      config={"cenda_algorithm": "auto", "cenda_alpha": 1.0, "cenda_k": 8, "cenda_max_iter": 50,
                              "cenda_mu": 0.5, "cenda_n_components": None, "cenda_thr": 0.999, "cenda_tol": 1e-06,
                              "k": 10, "n_jobs": None, "vote": "confidences", "weights": "linear"},
                      description="CENDA projection + PL-KNN voting with CENDA's disambiguated "
                                  "training confidences",
                      test_params={"k": 3, "cenda_max_iter": 5, "cenda_tol": 0.0},
                      search_space=PLKNN_CENDA_SEARCH_SPACE),
    ]


@hookimpl
def plcore_experiments():
    return load_presets("plcore_cenda")
