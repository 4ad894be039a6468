"""A fitted deep learner written as a run's model: skops writes it (the network as its
architecture and NumPy weights, no PyTorch object), only types plcore trusts are in it, and the
learner read back predicts bit for bit the same without touching PyTorch's global generator."""

import pickle

import numpy as np
import pytest
import skops.io as sio
import torch

from plcore.registry import model_packages
from plcore.tracking.models import choose_format
from plcore_deep import CcLearner, ProdenLearner, ValenLearner


def _data(n=60, d=6, q=3, seed=0):
    rng = np.random.RandomState(seed)
    y = rng.randint(q, size=n)
    X = rng.randn(n, d) + 2.0 * np.eye(q, d)[y]
    S = np.eye(q, dtype=bool)[y] | (rng.rand(n, q) < 0.3)
    return X, S


@pytest.mark.parametrize("est, d", [
    (ProdenLearner(hidden_layer_sizes=(8, 5), batch_norm=True, n_epochs=3, device="cpu", random_state=0), 6),
    (ValenLearner(warm_up=1, hidden_layer_sizes=(8,), n_epochs=3, device="cpu", random_state=0), 6),
    (CcLearner(network="lenet", n_epochs=1, device="cpu", random_state=0), 144),
])
def test_a_fitted_deep_learner_is_written_with_skops_and_reads_back_identical(est, d):
    X, S = _data(d=d)
    est.fit(X, S)
    fmt, types, why = choose_format(est, model_packages())
    assert (fmt, why) == ("skops", None)
    assert not any(t.startswith("torch") for t in types)
    state = torch.get_rng_state()
    back = sio.loads(sio.dumps(est), trusted=types)
    assert torch.equal(state, torch.get_rng_state())
    assert isinstance(back.network_, torch.nn.Module) and not back.network_.training
    np.testing.assert_array_equal(back.decision_function(X), est.decision_function(X))
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(est)).predict_proba(X), est.predict_proba(X))
    assert isinstance(est.network_, torch.nn.Module)  # writing it left the fitted learner as it was
