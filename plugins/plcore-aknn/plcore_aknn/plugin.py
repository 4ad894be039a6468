"""The module named by the ``plcore`` entry point ``aknn``: hooks only.

Registers the three learners, the paper's preprocessing (preprocessor ``aknn``:
``protocol.preprocessing=aknn``) and the presets in ``plcore_aknn/experiments/``.
"""

from plcore.hookspecs import hookimpl
from plcore.presets import load_presets
from plcore.registry import ComponentSpec

from plcore_aknn.learners import AknnLearner, AknnMulticlassLearner, KnnOracleLearner
from plcore_aknn.preprocessing import AknnPreprocessor

_TRAIN_VS_NEW = ("fit_transform returns the training rows smoothed without themselves "
                 "(paper, Appendix D.2) while transform treats rows as new: they differ by design")


@hookimpl
def plcore_components():
    # Config nodes are derived from the classes' __init__ defaults.
    return [
        ComponentSpec(kind="learner", name="aknn", cls=AknnLearner,
                      description="PL A-kNN: adaptive nearest neighbours with label elimination",
                      test_params={"c": 0.25, "k_max": 8}),
        ComponentSpec(kind="learner", name="aknn_multiclass", cls=AknnMulticlassLearner,
                      description="Multiclass A-kNN extension: grow k until the top label leads by Delta",
                      test_params={"k_max": 8}),
        ComponentSpec(kind="learner", name="knn_oracle", cls=KnnOracleLearner,
                      description="PL-kNN with k chosen by leave-one-out candidate-hit rate",
                      test_params={"k_max": 8}),
        ComponentSpec(kind="preprocessor", name="aknn", cls=AknnPreprocessor,
                      description="PL A-kNN paper preprocessing (Appendix D.2): cube root, L2, "
                                  "kNN smoothing, density scaling",
                      test_params={"mix_k": 3, "density_k": 5},
                      expected_failed_checks={"check_transformer_general": _TRAIN_VS_NEW,
                                              "check_transformer_data_not_an_array": _TRAIN_VS_NEW}),
    ]


@hookimpl
def plcore_experiments():
    """The presets in ``plcore_aknn/experiments/*.yaml`` (aknn_lost, paper_aknn_lost)."""
    return load_presets("plcore_aknn")
