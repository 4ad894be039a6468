"""plcore-aknn: PL A-kNN adaptive nearest neighbours for partial labels, with its kNN baselines.

Learners ``aknn`` (:class:`AknnLearner`), ``aknn_multiclass``
(:class:`AknnMulticlassLearner`) and ``knn_oracle`` (:class:`KnnOracleLearner`), and the
paper's Appendix D.2 feature preprocessing (:class:`AknnPreprocessor`, a scikit-learn
transformer registered as the preprocessor ``aknn``: ``protocol.preprocessing=aknn``).
"""

from typing import TYPE_CHECKING

from plcore.utils import lazy_exports

if TYPE_CHECKING:  # for static tools (the API docs); at run time the names are served lazily
    from plcore_aknn._rules import aknn_rule, multiclass_rule, threshold
    from plcore_aknn.learners import AknnLearner, AknnMulticlassLearner, KnnOracleLearner
    from plcore_aknn.preprocessing import AknnPreprocessor

__version__ = "0.1.0"

__all__ = ["AknnLearner", "AknnMulticlassLearner", "KnnOracleLearner", "AknnPreprocessor",
           "aknn_rule", "multiclass_rule", "threshold", "__version__"]

__getattr__, __dir__ = lazy_exports(globals(), {
    **dict.fromkeys(("AknnLearner", "AknnMulticlassLearner", "KnnOracleLearner"), "plcore_aknn.learners"),
    "AknnPreprocessor": "plcore_aknn.preprocessing",
    **dict.fromkeys(("aknn_rule", "multiclass_rule", "threshold"), "plcore_aknn._rules"),
})
