"""plcore-aknn: PL A-kNN adaptive nearest neighbours for partial labels, with its kNN baselines.

Learners ``aknn`` (:class:`AknnLearner`), ``aknn_multiclass``
(:class:`AknnMulticlassLearner`) and ``knn_oracle`` (:class:`KnnOracleLearner`), and the
paper's Appendix D.2 feature preprocessing (:class:`AknnPreprocessor`, a scikit-learn
transformer registered as the preprocessor ``aknn``: ``protocol.preprocessing=aknn``).
"""

from importlib.metadata import version as _version
from typing import TYPE_CHECKING

from plcore.utils import lazy_exports

if TYPE_CHECKING:  # for static tools (the API docs); at run time the names are served lazily
    from plcore_aknn.learners import AknnLearner, AknnMulticlassLearner, KnnOracleLearner
    from plcore_aknn.preprocessing import AknnPreprocessor

__version__ = _version("plcore-aknn")   # from the package metadata: the version is pyproject.toml's

__all__ = ["AknnLearner", "AknnMulticlassLearner", "KnnOracleLearner", "AknnPreprocessor", "__version__"]

__getattr__, __dir__ = lazy_exports(globals(), {
    **dict.fromkeys(("AknnLearner", "AknnMulticlassLearner", "KnnOracleLearner"), "plcore_aknn.learners"),
    "AknnPreprocessor": "plcore_aknn.preprocessing",
})
