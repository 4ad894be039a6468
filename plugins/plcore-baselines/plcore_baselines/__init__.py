"""plcore-baselines: the comparison methods of the CENDA / SAUTE / PLC papers.

IPAL (Zhang & Yu, IJCAI 2015), PL-SVM (Nguyen & Caruana, KDD 2008), PL-ECOC (Zhang, Yu &
Tang, TKDE 2017) and DST-PLL with its reject option (Fuchs, Kalinke & Boehm, TMLR 2025) as
learners and DELIN (Wu & Zhang, 2019) as a reducer.
"""

from importlib.metadata import version as _version
from typing import TYPE_CHECKING

from plcore.utils import lazy_exports

if TYPE_CHECKING:  # for static tools (the API docs); at run time the names are served lazily
    from plcore_baselines.delin import DelinReducer
    from plcore_baselines.dstpll import DstPllLearner
    from plcore_baselines.ipal import IpalLearner
    from plcore_baselines.plecoc import PlEcocLearner
    from plcore_baselines.plsvm import PlSvmLearner

__version__ = _version("plcore-baselines")   # from the package metadata: the version is pyproject.toml's

__all__ = ["IpalLearner", "PlSvmLearner", "PlEcocLearner", "DstPllLearner", "DelinReducer", "__version__"]

__getattr__, __dir__ = lazy_exports(globals(), {"IpalLearner": "plcore_baselines.ipal",
                                                "PlSvmLearner": "plcore_baselines.plsvm",
                                                "PlEcocLearner": "plcore_baselines.plecoc",
                                                "DstPllLearner": "plcore_baselines.dstpll",
                                                "DelinReducer": "plcore_baselines.delin"})
