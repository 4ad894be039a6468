"""plcore-deep: deep partial-label learners on PyTorch.

PRODEN (Lv et al., ICML 2020), RC and CC (Feng et al., NeurIPS 2020), LWS (Wen et al., ICML
2021), CAVL (Zhang et al., ICLR 2022), POP (Xu et al., ICML 2023), PiCO (Wang et al., ICLR
2022) and VALEN (Xu et al., NeurIPS 2021) on an MLP, a LeNet or a linear model. Importing this package does not import PyTorch (nor the learners'
module: names are served on first use).
"""

from importlib.metadata import version as _version
from typing import TYPE_CHECKING

from plcore.utils import lazy_exports

if TYPE_CHECKING:  # for static tools (the API docs); at run time the names are served lazily
    from plcore_deep.learners import (CavlLearner, CcLearner, LwsLearner, PicoLearner, PopLearner, ProdenLearner,
                                      RcLearner, ValenLearner)

__version__ = _version("plcore-deep")   # from the package metadata: the version is pyproject.toml's

__all__ = ["ProdenLearner", "RcLearner", "CcLearner", "LwsLearner", "CavlLearner", "PopLearner", "PicoLearner",
           "ValenLearner", "__version__"]

__getattr__, __dir__ = lazy_exports(globals(), dict.fromkeys(
    ("ProdenLearner", "RcLearner", "CcLearner", "LwsLearner", "CavlLearner", "PopLearner", "PicoLearner",
     "ValenLearner"), "plcore_deep.learners"))
