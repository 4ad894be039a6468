"""The learners inside plcore's ``online`` protocol (fast path, exact-label baselines, real data)."""

from __future__ import annotations

import numpy as np
import pytest

from plcore.data import PLDataset
from plcore.datasets.bags import FixedSizeBags
from plcore.protocols import Setup, online
from plcore_online import LEARNERS, AvgPerceptronLearner, MaxPegasosLearner, PerceptronLearner


class _NoFastPath(AvgPerceptronLearner):
    """Hides ``predict_partial_fit`` so the protocol takes its generic per-example loop."""

    @property
    def predict_partial_fit(self):
        raise AttributeError("predict_partial_fit")


class _NoFastPathPegasos(MaxPegasosLearner):
    @property
    def predict_partial_fit(self):
        raise AttributeError("predict_partial_fit")


def _blobs(n=150, seed=0):
    rng = np.random.RandomState(seed)
    centers = rng.uniform(-4, 4, size=(5, 3))
    y = rng.randint(0, 5, n)
    X = centers[y] + rng.randn(n, 3)
    return PLDataset(X, None, y, name="blobs")


@pytest.mark.parametrize("fast, slow", [(AvgPerceptronLearner, _NoFastPath),
                                        (MaxPegasosLearner, _NoFastPathPegasos)])
def test_fast_path_equals_generic_loop(fast, slow):
    ds = _blobs()
    assert not hasattr(slow(), "predict_partial_fit")
    kw = dict(n_runs=3, preprocessing="standardize", random_state=4, progress=False)
    a = online(Setup(learner=fast(), bags=FixedSizeBags(2)), ds, **kw)
    b = online(Setup(learner=slow(), bags=FixedSizeBags(2)), ds, **kw)
    np.testing.assert_array_equal(a.curves["mistake_rate"], b.curves["mistake_rate"])


def test_exact_label_baseline_is_fed_the_truth():
    ds = _blobs(seed=1)
    kw = dict(n_runs=2, random_state=0, progress=False)
    base = online(Setup(learner=PerceptronLearner(), bags=FixedSizeBags(4)), ds, **kw)
    truth = online(Setup(learner=AvgPerceptronLearner(), bags=FixedSizeBags(4)), ds, exact_labels="always", **kw)
    partial = online(Setup(learner=AvgPerceptronLearner(), bags=FixedSizeBags(4)), ds, **kw)
    np.testing.assert_array_equal(base.curves["mistake_rate"], truth.curves["mistake_rate"])
    assert base.summary["mistake_rate_final_mean"] < partial.summary["mistake_rate_final_mean"]


@pytest.mark.data
def test_ecoli_online_learns(data_home):
    """On ecoli (q = 8, chance 0.875) every learner ends far below chance; candidate sets of
    size 2 hurt less than size 6."""
    from plcore.datasets.loaders import load_dataset

    ds = load_dataset("ecoli", data_home)
    finals = {}
    for name, cls in LEARNERS.items():
        for s in (2, 6):
            r = online(Setup(learner=cls(), bags=FixedSizeBags(s)), ds, n_runs=3,
                       preprocessing="standardize", random_state=0, progress=False)
            finals[name, s] = r.summary["mistake_rate_final_mean"]
    for (name, s), rate in finals.items():
        assert rate < 0.6, (name, s, rate)
    for name in ("avg_perceptron", "max_perceptron", "avg_pegasos", "max_pegasos"):
        assert finals[name, 2] < finals[name, 6], name
    assert finals["perceptron", 2] == finals["perceptron", 6]  # exact labels: s does not matter
