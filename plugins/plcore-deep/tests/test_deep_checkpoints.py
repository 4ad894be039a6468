"""Per-epoch checkpoints: every deep learner is tagged ``epoch_checkpoints`` and its
``fit(X, y, on_epoch=...)`` shows each epoch's network without changing the training."""

import numpy as np
import pytest

import plcore_deep
from plcore.tags import get_pll_tags
from plcore.testing import make_pl_data
from plcore_deep import ProdenLearner
from plcore_deep.plugin import LEARNER_OPTIONS

FAST = {"hidden_layer_sizes": (16,), "batch_size": 32, "learning_rate": 1e-2, "device": "cpu", "random_state": 0}


def _data(n=90):
    X, S, y = make_pl_data(n_samples=n)
    return X, S, y


@pytest.mark.parametrize("option", sorted(LEARNER_OPTIONS))
def test_every_deep_learner_offers_per_epoch_checkpoints(option):
    cls = getattr(plcore_deep, LEARNER_OPTIONS[option].split(":")[1])
    assert get_pll_tags(cls()).epoch_checkpoints


def test_on_epoch_sees_each_epochs_model_and_leaves_training_unchanged():
    X, S, _ = _data()
    seen = []

    def on_epoch(epoch, learner):
        seen.append((epoch, learner.predict_proba(X), learner.predict(X)))

    hooked = ProdenLearner(n_epochs=4, **FAST).fit(X, S, on_epoch=on_epoch)
    plain = ProdenLearner(n_epochs=4, **FAST).fit(X, S)
    assert [e for e, _, _ in seen] == [0, 1, 2, 3]
    assert not np.allclose(seen[0][1], seen[-1][1])                        # the model moves between epochs
    # the last epoch's checkpoint is the fitted model (float32 in training, float64 once fitted)
    assert np.allclose(seen[-1][1], hooked.predict_proba(X), atol=1e-5)
    assert np.array_equal(seen[-1][2], hooked.predict(X))
    for a, b in zip(hooked.network_.parameters(), plain.network_.parameters()):
        assert np.array_equal(a.detach().numpy(), b.detach().numpy())        # the hook changes nothing
    assert not hooked.network_.training and str(next(hooked.network_.parameters()).dtype) == "torch.float64"


def test_with_on_epoch_every_epoch_runs_without_early_stopping():
    X, S, _ = _data()
    calls = []
    est = ProdenLearner(n_epochs=6, early_stopping=True, n_iter_no_change=1, tol=1.0, **FAST)
    est.fit(X, S, on_epoch=lambda epoch, learner: calls.append(epoch))
    assert calls == list(range(6)) and est.n_epochs_ == 6 and est.validation_scores_ == []
    stopped = ProdenLearner(n_epochs=6, early_stopping=True, n_iter_no_change=1, tol=1.0, **FAST).fit(X, S)
    assert stopped.n_epochs_ < 6                                              # without the hook it stops
