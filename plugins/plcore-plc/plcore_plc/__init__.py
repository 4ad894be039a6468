"""plcore-plc: partial-label clustering (PLC, Xie, Yang & Jia, IJCAI 2025) and its baselines."""

from plcore_plc.clusterers import KMeansClusterer, PlcClusterer, SpectralClusterer

__version__ = "0.1.0"
__all__ = ["PlcClusterer", "KMeansClusterer", "SpectralClusterer", "__version__"]
