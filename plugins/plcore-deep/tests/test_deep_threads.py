"""The CPU threads of a deep fit (``n_threads``): the rule of ``"auto"``, the arithmetic it reads,
the threads set for the fit only, and the count reported to the run."""

import numpy as np
import pytest
import torch

from plcore.data import PLDataset
from plcore.exceptions import InvalidParameterError
from plcore.run.protocols import Setup, kfold
from plcore.testing import make_pl_data
from plcore_deep import ProdenLearner
from plcore_deep._networks import build_lenet, build_network
from plcore_deep._threads import (SMALL_STEP_FLOPS, _macs_per_row, available_cores, choose_threads, step_flops,
                                  torch_threads)

FAST = {"hidden_layer_sizes": (16,), "batch_size": 32, "n_epochs": 2, "device": "cpu", "random_state": 0}


def _counted_macs(model, n_features):
    """Multiply-adds of one row's forward pass, counted on the network itself by hooks."""
    total = []

    def hook(module, inputs, output):
        if isinstance(module, torch.nn.Linear):
            total.append(module.in_features * module.out_features)
        elif isinstance(module, torch.nn.Conv2d):
            k = module.kernel_size[0] * module.kernel_size[1] * module.in_channels
            total.append(output[0].numel() * k)

    handles = [m.register_forward_hook(hook) for m in model.modules()]
    model.eval()
    with torch.no_grad():
        model(torch.zeros(1, n_features))
    for h in handles:
        h.remove()
    return sum(total)


@pytest.mark.parametrize("hidden", [(), (500,), (300, 300, 300)])
def test_macs_per_row_count_the_mlps_layers(hidden):
    model = build_network(108, 16, hidden, False)
    assert _macs_per_row("mlp", 108, 16, hidden) == _counted_macs(model, 108)


def test_macs_per_row_count_lenets_convolutions_and_layers():
    assert _macs_per_row("lenet", 784, 10, ()) == _counted_macs(build_lenet(784, 10), 784)


def test_step_flops_literal():
    assert step_flops("mlp", 108, 16, (500,), 16) == 6.0 * (108 * 500 + 500 * 16) * 16


def test_auto_takes_one_thread_below_the_threshold_and_the_available_cores_above(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    cores = available_cores()
    assert 1 <= cores <= 3
    assert choose_threads("auto", SMALL_STEP_FLOPS / 2) == 1
    assert choose_threads("auto", SMALL_STEP_FLOPS * 2) == cores
    assert choose_threads(2, 1.0) == 2
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert available_cores() == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "not a number")
    assert available_cores() >= 1


def test_the_fit_trains_on_the_chosen_threads_and_restores_pytorchs():
    X, S, _ = make_pl_data(n_samples=90)
    before = torch.get_num_threads()
    for n_threads, expected in (("auto", 1), (2, 2)):
        seen = []
        est = ProdenLearner(n_threads=n_threads, **FAST)
        est.fit(X, S, on_epoch=lambda epoch, learner: seen.append(torch.get_num_threads()))
        assert seen == [expected, expected] and est.n_threads_ == expected
        assert torch.get_num_threads() == before
    with torch_threads(before):   # unchanged count: nothing set
        assert torch.get_num_threads() == before


def test_threads_do_not_change_what_a_fit_learns_beyond_float_tolerance():
    X, S, _ = make_pl_data(n_samples=90)
    one = ProdenLearner(n_threads=1, **FAST).fit(X, S)
    two = ProdenLearner(n_threads=2, **FAST).fit(X, S)
    np.testing.assert_allclose(one.predict_proba(X), two.predict_proba(X), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("bad", [0, -1, "many", 1.5])
def test_bad_thread_counts_are_refused(bad):
    X, S, _ = make_pl_data(n_samples=30)
    with pytest.raises(InvalidParameterError, match="n_threads"):
        ProdenLearner(n_threads=bad, **FAST).fit(X, S)


def test_the_run_reports_the_threads_it_trained_on():
    X, S, y = make_pl_data(n_samples=90)
    res = kfold(Setup(learner=ProdenLearner(**FAST)), PLDataset(X, S, y), n_splits=2, refit=False, progress=False)
    assert [s["n_threads"] for s in res.steps] == [1, 1]
    assert res.params["learner.n_threads_used"] == "1"


def test_the_plan_sizes_threads_and_stacking_from_one_step_size():
    """The threads and the stacking decision read one :func:`plcore_deep._loop.plan`: a step of
    all the rows' batch, capped at the rows (``auto``: 16 below 5,000 rows, else 256)."""
    from plcore_deep._loop import LoopConfig, plan
    from plcore_deep._threads import step_flops

    config = LoopConfig(batch_size="auto", hidden_layer_sizes=(32,))
    assert plan(config, 4999, 10, 3).batch_size == 16 and plan(config, 5000, 10, 3).batch_size == 256
    assert plan(LoopConfig(batch_size=128), 50, 10, 3).batch_size == 50
    assert plan(config, 6000, 10, 3).step_flops == step_flops("mlp", 10, 3, (32,), 256)
