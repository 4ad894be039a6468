"""plcore-plc: partial-label clustering (PLC, Xie, Yang & Jia, IJCAI 2025) and its baselines."""

from plcore._lazy import lazy_exports

__version__ = "0.1.0"
__all__ = ["PlcClusterer", "KMeansClusterer", "SpectralClusterer", "__version__"]

__getattr__, __dir__ = lazy_exports(globals(), dict.fromkeys(__all__[:-1], "plcore_plc.clusterers"))
