"""The plugin module named by the ``plc`` entry point (group ``plcore``): hooks only."""

from plcore.hookspecs import hookimpl
from plcore.presets import load_presets
from plcore.registry import ComponentSpec

from plcore_plc.clusterers import KMeansClusterer, PlcClusterer, SpectralClusterer

#: PLC's grid, declared for later use: ``protocol.select`` searches learners and reducers only
#: today, not clusterers (the clustering protocol does not select yet). The paper (Section 5.1,
#: "Compared Methods") sets "alpha, beta in {0.01, 0.1, 1}, gamma = 10 and k in {10, 15, 20, 25,
#: 30, 40}": 3 x 3 x 6 = 54 points, too many for an affordable grid. Documented subset, 12
#: points, from Section 5.3 "Parameter Sensitivity" (Fig. 2): accuracy is "relative stable" in
#: alpha and beta ("we can directly fix alpha, beta = 0.1 in practice"), so they keep 0.1 and
#: 0.01 (the public demo's default, this class's) and drop 1; PLC is "relative sensitive" to k
#: ("k in {10, 15} for small-scale datasets and ... {20, 30, 40} for large-scale"), so k keeps
#: both ends and the middle of the paper's list: {10, 20, 40}.
PLC_SEARCH_SPACE = {"alpha": [0.01, 0.1], "beta": [0.01, 0.1], "k": [10, 20, 40]}


@hookimpl
def plcore_components():
    return [
        ComponentSpec(kind="clusterer", name="plc", cls=PlcClusterer,
                      test_params={"k": 5, "outer_iter": 1, "inner_iter": 3, "n_init": 2},
                      search_space=PLC_SEARCH_SPACE),
        ComponentSpec(kind="clusterer", name="kmeans", cls=KMeansClusterer,
                      test_params={"n_init": 2}),
        ComponentSpec(kind="clusterer", name="spectral", cls=SpectralClusterer,
                      test_params={"n_init": 2}),
    ]


@hookimpl
def plcore_experiments():
    """The presets in ``plcore_plc/experiments/*.yaml`` (plc_lost, plc_msrc, paper_plc_*)."""
    return load_presets("plcore_plc")
