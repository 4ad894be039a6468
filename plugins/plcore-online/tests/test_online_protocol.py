"""The learners inside plcore's ``online`` protocol (registered kernel, exact-label baselines, real data)."""

from __future__ import annotations

import numpy as np
import pytest

from plcore.data import PLDataset
from plcore.datasets.bags import FixedSizeBags
from plcore.run.protocols import Setup, online
from plcore.registry import get_registry
from plcore_online import AvgPerceptronLearner, MaxPegasosLearner, PerceptronLearner, learners
from plcore_online.learners import prequential
from plcore_online.plugin import LEARNER_OPTIONS

#: option name -> class, from the plugin's option table (plugin.py)
LEARNERS = {option: getattr(learners, cls) for option, cls in LEARNER_OPTIONS.items()}


def _blobs(n=150, seed=0):
    rng = np.random.RandomState(seed)
    centers = rng.uniform(-4, 4, size=(5, 3))
    y = rng.randint(0, 5, n)
    X = centers[y] + rng.randn(n, 3)
    return PLDataset(X, None, y, name="blobs")


def test_prequential_is_registered_for_every_learner():
    registry = get_registry()
    for name, cls in LEARNERS.items():
        assert registry.get("learner", name).spec.cls is cls
        assert registry.prequential_kernel(cls()) is prequential, name


@pytest.mark.parametrize("cls", [AvgPerceptronLearner, MaxPegasosLearner])
def test_prequential_equals_generic_loop(cls):
    """The registered kernel gives the predictions of the protocol's generic loop
    (``partial_fit(X[:0], ...)``, then ``predict`` + ``partial_fit`` per row) and the same model."""
    ds = _blobs()
    X = (ds.X - ds.X.mean(0)) / ds.X.std(0)
    S = FixedSizeBags(2).generate(ds.y_true, random_state=3, n_classes=5)
    order = np.random.RandomState(4).permutation(ds.n_samples)
    X, S, classes = X[order], S[order], np.arange(5)
    fast = cls()
    preds = prequential(fast, X, S, classes)
    slow = cls().partial_fit(X[:0], S[:0], classes=classes)
    ref = []
    for i in range(len(X)):
        ref.append(slow.predict(X[i:i + 1])[0])
        slow.partial_fit(X[i:i + 1], S[i:i + 1])
    np.testing.assert_array_equal(preds, ref)
    np.testing.assert_allclose(fast.W_, slow.W_, rtol=1e-12, atol=1e-12)
    assert (fast.t_, fast.n_updates_) == (slow.t_, slow.n_updates_)


class _Unregistered(MaxPegasosLearner):
    """Not a registered class (the registry matches exact classes): the protocol's generic loop."""


def test_protocol_kernel_equals_protocol_loop():
    ds = _blobs()
    assert get_registry().prequential_kernel(_Unregistered()) is None
    kw = dict(n_runs=3, preprocessing="standardize", random_state=4, progress=False)
    a = online(Setup(learner=MaxPegasosLearner(), bags=FixedSizeBags(2)), ds, **kw)
    b = online(Setup(learner=_Unregistered(), bags=FixedSizeBags(2)), ds, **kw)
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
