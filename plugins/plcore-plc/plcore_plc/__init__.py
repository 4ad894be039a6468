"""plcore-plc: partial-label clustering (PLC, Xie, Yang & Jia, IJCAI 2025) and its baselines."""

from importlib.metadata import version as _version
from typing import TYPE_CHECKING

from plcore.utils import lazy_exports

if TYPE_CHECKING:  # for static tools (the API docs); at run time the names are served lazily
    from plcore_plc.clusterers import KMeansClusterer, PlcClusterer, SpectralClusterer

__version__ = _version("plcore-plc")   # from the package metadata: the version is pyproject.toml's

__all__ = ["PlcClusterer", "KMeansClusterer", "SpectralClusterer", "__version__"]

__getattr__, __dir__ = lazy_exports(globals(), dict.fromkeys(("PlcClusterer", "KMeansClusterer", "SpectralClusterer"),
                                                             "plcore_plc.clusterers"))
