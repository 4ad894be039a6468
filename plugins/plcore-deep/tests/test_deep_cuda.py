"""The deep learners on a CUDA device (skipped where PyTorch sees none, as on CI): each of the 28
trains there, learns where the answer is known, returns its confidences and pickles to a model
that predicts on the CPU; each that stacks gives every configuration what its own CUDA fit gives."""

import pickle

import numpy as np
import pytest
import torch

from plcore.registry import get_registry
from plcore.testing import check_confidences, check_fit_path, check_learns_on_separable_data, make_pl_data
import plcore_deep
from plcore_deep.plugin import LEARNER_OPTIONS

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="PyTorch sees no CUDA device")

_CLASSES = {name: getattr(plcore_deep, path.split(":")[1]) for name, path in LEARNER_OPTIONS.items()}


def _on_cuda(name):
    """The learner with the plugin's conformance settings, on CUDA."""
    params = dict(get_registry().components[("learner", name)].spec.test_params)
    return _CLASSES[name](**{**params, "device": "cuda", "random_state": 0})


@pytest.mark.parametrize("name", sorted(_CLASSES))
def test_every_learner_learns_on_cuda_and_its_pickle_predicts_on_the_cpu(name):
    learner = _on_cuda(name)
    check_learns_on_separable_data(name, learner)
    check_confidences(name, learner)
    X, S, _ = make_pl_data(n_samples=80, random_state=4)
    fitted = learner.fit(X[:60], S[:60])
    proba = fitted.predict_proba(X[60:])
    assert np.isfinite(proba).all() and np.allclose(proba.sum(axis=1), 1.0, atol=1e-5)
    restored = pickle.loads(pickle.dumps(fitted)).set_params(device="cpu")
    np.testing.assert_allclose(restored.predict_proba(X[60:]), proba, atol=1e-5)


@pytest.mark.parametrize("name", sorted(n for n, c in _CLASSES.items() if c._stacks))
def test_every_stacking_learner_fits_each_configuration_on_cuda_as_its_own_fit(name, monkeypatch):
    from plcore_deep import _stacked

    stacked, real = [], _stacked.train_stacked
    monkeypatch.setattr(_stacked, "train_stacked", lambda *a, **k: (stacked.append(1), real(*a, **k))[1])
    check_fit_path(name, _on_cuda(name))
    assert stacked, f"{name}: fit_path did not stack on CUDA"
