"""The module named by the ``plcore`` entry point ``online``: registers the six learners,
their compiled prequential kernel and the plugin's experiment presets."""

from plcore.registry import ComponentSpec, hookimpl, load_presets

#: the option table: option name (``+learner=<name>``) -> class name in :mod:`plcore_online.learners`,
#: in the order of the paper's figures
LEARNER_OPTIONS = {
    "perceptron": "PerceptronLearner",
    "avg_perceptron": "AvgPerceptronLearner",
    "max_perceptron": "MaxPerceptronLearner",
    "pegasos": "PegasosLearner",
    "avg_pegasos": "AvgPegasosLearner",
    "max_pegasos": "MaxPegasosLearner",
}

#: fast settings for the common conformance test (one pass instead of five)
_TEST_PARAMS = {"n_epochs": 1}

#: Nested-selection grids (``protocol.select`` with no ``space``; kfold and holdout, where
#: ``fit`` runs ``n_epochs`` passes -- the online protocol does not select yet). The paper
#: (Bhattacharjee & Manwani, PAKDD 2020) gives no values and no grid: Algorithms 1-4 take eta
#: and lambda as inputs and Section 5 states neither. So: small log grids around the defaults
#: (eta 1, lam 0.1), one decade wider on each side than the plugin's pilot grid that chose them
#: (eta in {0.1, 1, 10}, lam in {1e-3, 1e-2, 0.1, 1}; README "Parameters"). eta matters for the
#: Perceptrons although W starts at 0: the hinge's margin 1 is not scaled with it.
#: The exact-label baselines (perceptron, pegasos) declare none: the protocols train them on
#: the true labels, and nested selection refuses them (its inner folds would score truth).
ETA_GRID = [0.01, 0.1, 1.0, 10.0, 100.0]
LAM_GRID = [1e-4, 1e-3, 1e-2, 0.1, 1.0]
SEARCH_SPACES = {
    "avg_perceptron": {"eta": ETA_GRID},    # 5 points each
    "max_perceptron": {"eta": ETA_GRID},
    "avg_pegasos": {"lam": LAM_GRID},
    "max_pegasos": {"lam": LAM_GRID},
}


_PERCEPTRON = {"eta": 1.0, "fit_intercept": True, "n_epochs": 5, "random_state": None, "shuffle": True}
_PEGASOS = {"fit_intercept": True, "lam": 0.1, "n_epochs": 5, "random_state": None,
            "shrink_on_zero_loss": False, "shuffle": True}
#: option name -> (config node, one line for listings, the name the paper's figures print)
_DECLARED = {
    "perceptron": (_PERCEPTRON, "Multiclass Perceptron on exact labels (baseline of the online paper)", "Perceptron"),
    "avg_perceptron": (_PERCEPTRON, "Avg Perceptron: Perceptron on the average prediction hinge loss (Algorithm 1)",
                       "Avg Perceptron"),
    "max_perceptron": (_PERCEPTRON, "Max Perceptron: Perceptron on the max prediction hinge loss (Algorithm 2)",
                       "Max Perceptron"),
    "pegasos": (_PEGASOS, "Multiclass Pegasos on exact labels (baseline of the online paper)", "Pegasos"),
    "avg_pegasos": (_PEGASOS, "Avg Pegasos: Pegasos on the average prediction hinge loss (Algorithm 3)", "Avg Pegasos"),
    "max_pegasos": (_PEGASOS, "Max Pegasos: Pegasos on the max prediction hinge loss (Algorithm 4)", "Max Pegasos"),
}


@hookimpl
def plcore_components():
    return [ComponentSpec(kind="learner", name=name, cls=f"plcore_online.learners:{cls}",
                          config=dict(_DECLARED[name][0]), description=_DECLARED[name][1],
                          display_name=_DECLARED[name][2],
                          prequential="plcore_online.learners:prequential",
                          test_params=dict(_TEST_PARAMS), search_space=SEARCH_SPACES.get(name))
            for name, cls in LEARNER_OPTIONS.items()]


@hookimpl
def plcore_experiments():
    # the paper's figure set-ups: plcore_online/experiments/*.yaml
    return load_presets("plcore_online")
