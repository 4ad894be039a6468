"""The plugin module named by the ``plc`` entry point (group ``plcore``): hooks only."""

from plcore.hookspecs import hookimpl
from plcore.presets import load_presets
from plcore.registry import ComponentSpec

from plcore_plc.clusterers import KMeansClusterer, PlcClusterer, SpectralClusterer


@hookimpl
def plcore_components():
    return [
        ComponentSpec(kind="clusterer", name="plc", cls=PlcClusterer,
                      test_params={"k": 5, "outer_iter": 1, "inner_iter": 3, "n_init": 2}),
        ComponentSpec(kind="clusterer", name="kmeans", cls=KMeansClusterer,
                      test_params={"n_init": 2}),
        ComponentSpec(kind="clusterer", name="spectral", cls=SpectralClusterer,
                      test_params={"n_init": 2}),
    ]


@hookimpl
def plcore_experiments():
    """The presets in ``plcore_plc/experiments/*.yaml`` (plc_lost, plc_msrc, paper_plc_*)."""
    return load_presets("plcore_plc")
