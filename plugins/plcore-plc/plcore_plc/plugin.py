"""The plugin module named by the ``plc`` entry point (group ``plcore``): hooks only."""

from plcore.hookspecs import hookimpl
from plcore.presets import load_presets
from plcore.registry import ComponentSpec

from plcore_plc.clusterers import KMeansClusterer, PlcClusterer, SpectralClusterer

#: PLC's grid, the paper's (Section 5.1, "Compared Methods"): "alpha, beta in {0.01, 0.1, 1},
#: gamma = 10 and k in {10, 15, 20, 25, 30, 40}", 3 x 3 x 6 = 54 points. The presets draw
#: ``protocol.select.n_iter=8`` of them at random and choose on each partition by the labelled
#: rows' candidate sets (``plcore.selection.select_clusterer``).
PLC_SEARCH_SPACE = {"alpha": [0.01, 0.1, 1.0], "beta": [0.01, 0.1, 1.0], "k": [10, 15, 20, 25, 30, 40]}


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
