"""The plugin module named by the ``plc`` entry point (group ``plcore``)."""

from plcore.hookspecs import hookimpl
from plcore.registry import ComponentSpec

from plcore_plc.baselines import KMeansClusterer, SpectralClusterer
from plcore_plc.plc import PlcClusterer


@hookimpl
def plcore_components():
    return [
        ComponentSpec(kind="clusterer", name="plc", cls=PlcClusterer),
        ComponentSpec(kind="clusterer", name="kmeans", cls=KMeansClusterer),
        ComponentSpec(kind="clusterer", name="spectral", cls=SpectralClusterer),
    ]
