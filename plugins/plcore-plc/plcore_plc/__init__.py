"""plcore-plc: partial-label clustering (PLC, Xie, Yang & Jia, IJCAI 2025) and its baselines."""

from plcore_plc.baselines import KMeansClusterer, SpectralClusterer
from plcore_plc.plc import PlcClusterer

__version__ = "0.1.0"
__all__ = ["PlcClusterer", "KMeansClusterer", "SpectralClusterer", "__version__"]
