"""CroSel (Tian et al., CVPR 2024): the selection rule against its literal statement, the averaged
prediction of the two networks, both variants learning, and Fuchs & Kalinke's variant's own rules."""

import pickle

import numpy as np
import pytest
import torch

from plcore.testing import make_pl_data
from plcore_deep import ConformalCroselLearner, CroselLearner
from plcore_deep._crosel import CroSel, co_mix_loss, selection
from plcore_deep._networks import Twin

_FAST = {"hidden_layer_sizes": (32,), "n_epochs": 20, "batch_size": 32, "learning_rate": 1e-2, "device": "cpu",
         "random_state": 0}


def _literal_selection(history, S, threshold):
    """Row by row: the same argmax in all epochs, mean largest probability above ``threshold``, the
    latest argmax a candidate."""
    chosen, pseudo = [], []
    for i in range(S.shape[0]):
        tops = [int(np.argmax(h[i])) for h in history]
        mean_top = np.max(np.mean([h[i] for h in history], axis=0))
        chosen.append(len(set(tops)) == 1 and mean_top > threshold and bool(S[i, tops[-1]]))
        pseudo.append(tops[-1])
    return np.array(chosen), np.array(pseudo)


def test_selection_is_the_papers_rule_row_by_row():
    rng = np.random.default_rng(0)
    S = rng.random((60, 4)) < 0.5
    S[:, 0] = True
    peaked = np.eye(4)[rng.integers(0, 4, 60)] * 0.9 + 0.025
    history = [peaked + rng.normal(0, 0.02, peaked.shape) for _ in range(3)]
    history[0][:10] = np.roll(history[0][:10], 1, axis=1)   # ten rows changed their mind
    history = [np.clip(h, 0, None) / np.clip(h, 0, None).sum(axis=1, keepdims=True) for h in history]
    for threshold in (0.8, 0.9):
        got, top = selection([torch.tensor(h) for h in history], torch.tensor(S, dtype=torch.float32), threshold)
        want, want_top = _literal_selection(history, S, threshold)
        np.testing.assert_array_equal(got.numpy(), want)
        np.testing.assert_array_equal(top.numpy(), want_top)
        assert 0 < want.sum() < 60


def test_the_twin_predicts_the_mean_of_the_two_posteriors():
    torch.manual_seed(0)
    a, b = torch.nn.Linear(3, 4), torch.nn.Linear(3, 4)
    x = torch.randn(5, 3)
    mean = (torch.softmax(a(x), dim=1) + torch.softmax(b(x), dim=1)) / 2
    torch.testing.assert_close(torch.softmax(Twin(a, b)(x), dim=1), mean)
    torch.testing.assert_close(torch.exp(Twin(a, b)(x)), mean)


def test_co_mix_targets_are_the_swapped_views_posterior_on_the_candidates():
    torch.manual_seed(1)
    net = torch.nn.Linear(3, 3)
    xw, xs = torch.randn(4, 3), torch.randn(4, 3)
    S = torch.tensor([[1.0, 1, 0], [0, 1, 1], [1, 0, 0], [1, 1, 1]])
    perm = torch.tensor([3, 2, 1, 0, 7, 6, 5, 4])
    lam = 0.8
    wl, sl = net(xw), net(xs)
    loss = co_mix_loss(net, sl, wl, xw, xs, S, lam, perm)
    t = torch.softmax(torch.cat([sl, wl]), dim=1).detach() * torch.cat([S, S])
    t = t / t.sum(dim=1, keepdim=True)
    inputs = torch.cat([xw, xs])
    literal = 0.0
    for i in range(8):
        mixed_x = lam * inputs[i] + (1 - lam) * inputs[perm[i]]
        mixed_t = lam * t[i] + (1 - lam) * t[perm[i]]
        literal += -(mixed_t * torch.log_softmax(net(mixed_x[None]), dim=1)[0]).sum() / 8
    torch.testing.assert_close(loss, literal)


@pytest.mark.parametrize("variant", ["paper", "fuchs"])
def test_both_variants_learn_a_separable_problem_and_select_rows(variant):
    X, S, y = make_pl_data(n_samples=300, n_classes=4, random_state=5)
    est = CroselLearner(variant=variant, **_FAST).fit(X, S)
    assert np.mean(est.predict(X) == y) > 0.9
    assert np.mean(est.confidences_.argmax(axis=1) == y) > 0.9
    again = pickle.loads(pickle.dumps(est))                 # the two networks are stored and read back
    np.testing.assert_allclose(again.predict_proba(X), est.predict_proba(X))


def test_fuchs_variant_starts_both_networks_from_the_same_weights_and_the_paper_not():
    X, S, _ = make_pl_data(n_samples=64, random_state=0)
    for variant, same in (("fuchs", True), ("paper", False)):
        est = CroselLearner(variant=variant, warm_up=0, **{**_FAST, "n_epochs": 1})
        from plcore_deep import _loop

        config = est._loop_config(X)
        method = est._make_method()
        state, _, _ = _loop.prepare(X, S, method, config)
        first = [p.clone() for p in state.model.parameters()]
        method.setup(state)
        second = list(state.model.second.parameters())
        assert all(torch.equal(a, b) for a, b in zip(first, second)) == same


def test_the_fuchs_partial_label_weights_are_the_other_bank_on_the_candidates_unnormalised():
    method = CroSel("fuchs", 10, 0.9, 2.0, 0.75, "identity", 0.0)
    bank = torch.tensor([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]])
    S = torch.tensor([[1.0, 1, 0], [1, 0, 1]])
    torch.testing.assert_close(method._weights(bank, S, S), torch.tensor([[0.5, 0.3, 0.0], [0.1, 0.0, 0.8]]))


def test_conformal_crosel_runs_and_is_reproducible():
    X, S, y = make_pl_data(n_samples=200, n_classes=3, random_state=2)
    a = ConformalCroselLearner(variant="fuchs", cleaning_warm_up=2, **_FAST).fit(X, S)
    b = ConformalCroselLearner(variant="fuchs", cleaning_warm_up=2, **_FAST).fit(X, S)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    assert np.mean(a.predict(X) == y) > 0.9
