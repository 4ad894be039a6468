"""The module named by the ``plcore`` entry point ``aknn``: registers the three learners."""

from plcore.hookspecs import hookimpl
from plcore.registry import ComponentSpec

from plcore_aknn.learners import AknnLearner, AknnMulticlassLearner, KnnOracleLearner


@hookimpl
def plcore_components():
    # Config nodes are derived from the classes' __init__ defaults.
    return [
        ComponentSpec(kind="learner", name="aknn", cls=AknnLearner,
                      description="PL A-kNN: adaptive nearest neighbours with label elimination"),
        ComponentSpec(kind="learner", name="aknn_multiclass", cls=AknnMulticlassLearner,
                      description="Multiclass A-kNN extension: grow k until the top label leads by Delta"),
        ComponentSpec(kind="learner", name="knn_oracle", cls=KnnOracleLearner,
                      description="PL-kNN with k chosen by leave-one-out candidate-hit rate"),
    ]
