"""FREDIS and ALIM (noisy candidate sets): each loss, refinement and confidence update against its
literal formula on a fixed batch, ALIM against PiCO where its additions are switched off, and
each learner on a separable problem whose candidate sets miss the true label on some rows."""

import copy
import math

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.preprocessing import StandardScaler

import torch  # noqa: E402  (installed by the Makefile; a missing torch must fail, not skip)

import plcore_deep
from plcore.datasets.bags import NoisyBags
from plcore_deep import _contrastive, _noise_robust as _nr  # noqa: E402
from plcore_deep._loop import LoopConfig, State  # noqa: E402
from plcore_deep._methods import candidate_posterior, weighted_nll  # noqa: E402
from plcore_deep._networks import build_network  # noqa: E402
from plcore_deep.plugin import LEARNER_OPTIONS

# three rows, four classes: row 0 {0, 1}, row 1 {2}, row 2 {0, 1, 3}
LOGITS = [[2.0, 0.5, -1.0, 0.3], [0.3, -0.2, 1.1, -0.7], [0.9, -1.4, 0.2, 0.0]]
S = [[1, 1, 0, 0], [0, 0, 1, 0], [1, 1, 0, 1]]
W = [[0.3, 0.7, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.5, 0.2, 0.0, 0.3]]
Q = 4


def _t(a):
    return torch.tensor(a, dtype=torch.float64)


def _softmax(row):
    e = [math.exp(v) for v in row]
    return [v / sum(e) for v in e]


# ----------------------------------------------------------------------------------- FREDIS
@pytest.mark.parametrize("lam, alpha", [(10.0, 1.0), (1.0, 1e-3)])
def test_fredis_loss_literal(lam, alpha):
    p = [_softmax(r) for r in LOGITS]
    kl = sum(W[i][j] * (math.log(W[i][j]) - math.log(p[i][j])) for i in range(3) for j in range(Q) if W[i][j] > 0) / 3
    sup = sum(-math.log(1 - p[i][j]) for i in range(3) for j in range(Q) if not S[i][j]) / 3
    got = float(_nr.fredis_loss(_t(LOGITS), _t(S), _t(W), lam, alpha))
    assert got == pytest.approx(lam * kl + alpha * sup, rel=1e-12)


def test_fredis_supervised_term_is_finite_where_p_rounds_to_one():
    logits = torch.tensor([[60.0, 0.0, 0.0]], dtype=torch.float64)
    loss = _nr.fredis_loss(logits, _t([[0, 1, 1]]), _t([[0, 0.5, 0.5]]), lam=0.0, alpha=1.0)
    assert math.isfinite(float(loss)) and float(loss) == pytest.approx(60.0 - math.log(2), rel=1e-9)


def _refine_literally(P, S_, theta, delta, dec, times):
    """The authors' refinement, entry by entry, where no cap binds (no random draw)."""
    n, q = len(P), len(P[0])
    d = [[max(P[i]) - P[i][j] for j in range(q)] for i in range(n)]
    out = [row[:] for row in S_]
    joined = 0
    for i in range(n):
        for j in range(q):
            if d[i][j] < theta and not S_[i][j]:
                out[i][j], joined = 1, joined + 1
    while sum(1 for i in range(n) for j in range(q) if S_[i][j] and d[i][j] > delta) < joined * times:
        delta -= dec
    for i in range(n):
        for j in range(q):
            if S_[i][j] and d[i][j] > delta:
                out[i][j] = 0
        if not any(out[i]):
            out[i] = S_[i][:]
    return out, delta


P_FIXED = [[0.50, 0.30, 0.15, 0.05], [0.10, 0.60, 0.25, 0.05], [0.40, 0.40, 0.10, 0.10], [0.05, 0.05, 0.05, 0.85]]
S_FIXED = [[1, 1, 1, 0], [1, 0, 1, 1], [1, 0, 1, 0], [1, 1, 0, 0]]


@pytest.mark.parametrize("theta, delta, dec, times", [(1e-6, 1.0, 1e-3, 2), (0.2, 1.0, 1e-2, 1), (0.2, 0.6, 0.05, 2)])
def test_fredis_refine_literal(theta, delta, dec, times):
    """``delta`` to one ``dec``: the literal loop's repeated subtraction rounds, plcore's
    ``delta - k dec`` does not (they differ where a gap equals ``delta - k dec`` exactly)."""
    expected, delta_expected = _refine_literally(P_FIXED, S_FIXED, theta, delta, dec, times)
    got, delta_got = _nr.fredis_refine(_t(P_FIXED), _t(S_FIXED), theta, delta, dec, times, change_size=100,
                                       generator=torch.Generator().manual_seed(0))
    assert got.tolist() == expected
    assert abs(delta_got - delta_expected) <= dec + 1e-9


def test_fredis_refine_adds_each_rows_top_label_and_removes_the_far_ones():
    """theta = 1e-6, times = 2: rows 1, 2, 3 miss a top label (row 2 has two), which joins; then six
    candidates leave, the farthest below their row's top (delta lowered in steps of 1e-3 to just
    below 0.35, the 6th largest gap among the candidates)."""
    got, delta = _nr.fredis_refine(_t(P_FIXED), _t(S_FIXED), 1e-6, 1.0, 1e-3, 2, 100, torch.Generator())
    assert got.tolist() == [[1, 1, 0, 0], [0, 1, 0, 0], [1, 1, 1, 0], [0, 0, 0, 1]]
    assert 0.349 - 1e-9 <= delta < 0.35


def test_fredis_refine_never_removes_a_rows_top_label():
    """More leaves needed than candidates below their row's top (the authors' loop would lower
    delta past 0, or forever): every such candidate leaves, the top labels stay."""
    got, _ = _nr.fredis_refine(_t(P_FIXED), _t(S_FIXED), 0.2, 0.3, 0.05, 3, 100, torch.Generator())
    assert got.tolist() == [[1, 0, 0, 0], [0, 1, 0, 0], [1, 1, 0, 0], [0, 0, 0, 1]]


def test_fredis_refine_draws_at_most_change_size_and_keeps_no_row_empty():
    torch.manual_seed(0)
    n, q = 200, 6
    P = torch.softmax(3 * torch.randn(n, q, dtype=torch.float64), dim=1)
    S_ = (torch.rand(n, q) < 0.3).double()
    S_[P.argmax(dim=1) < 3, :] = 0                              # many rows miss their top label
    S_[S_.sum(dim=1) == 0, 5] = 1
    d = P.max(dim=1, keepdim=True).values - P
    refined, delta = _nr.fredis_refine(P, S_, 1e-6, 1.0, 1e-6, 2, change_size=10,
                                       generator=torch.Generator().manual_seed(3))
    joined, left = (refined > S_), (refined < S_)
    assert int(joined.sum()) == 10 and bool(torch.all(d[joined] < 1e-6))
    assert int(left.sum()) <= 20 and bool(torch.all(d[left] > delta))
    assert bool(torch.all(refined.sum(dim=1) > 0))


def _state(n=10, d=5, q=4, b=4, n_epochs=10, epoch=0):
    torch.manual_seed(0)
    X = torch.randn(n, d)
    Sm = (torch.rand(n, q) < 0.5).float()
    Sm[torch.arange(n), torch.randint(0, q, (n,))] = 1.0
    model = build_network(d, q, (6,))
    W0 = Sm / Sm.sum(dim=1, keepdim=True)
    config = LoopConfig(hidden_layer_sizes=(6,), n_epochs=n_epochs, batch_size=b)
    return State(model, X, Sm, W0, torch.arange(n), b, epoch=epoch, n_epochs=n_epochs,
                 generator=torch.Generator().manual_seed(1), config=config)


def test_fredis_step_and_refinement_schedule():
    state = _state()
    method = _nr.Fredis(theta=1e-6, inc=1e-3, delta=1.0, dec=1e-2, times=2, change_size=500, update_interval=3,
                        lam=10.0, alpha=1.0)
    assert method.setup(state) == []
    assert torch.allclose(method.posterior, torch.full((10, 4), 0.25))
    idx = torch.tensor([3, 7, 0, 9])
    xb, sb = state.X[idx], state.S[idx]
    loss, logits = method.batch_loss(state, idx, xb, sb)
    with torch.no_grad():
        expected = _nr.fredis_loss(state.model(xb), sb, state.W[idx], 10.0, 1.0)
    assert float(loss.detach()) == pytest.approx(float(expected))
    method.after_step(state, idx, xb, sb, logits)
    assert torch.allclose(state.W[idx], candidate_posterior(logits.detach(), sb))
    assert torch.allclose(method.posterior[idx], torch.softmax(logits.detach(), dim=1))
    method.posterior = torch.softmax(torch.randn(10, 4), dim=1)
    S_before = state.S.clone()
    for epoch in (0, 1):                                        # no round before the 3rd epoch's end
        state.epoch = epoch
        method.end_epoch(state)
        assert torch.equal(state.S, S_before) and method.theta == 1e-6
    state.epoch = 2
    expected, delta = _nr.fredis_refine(method.posterior, S_before, 1e-6, 1.0, 1e-2, 2, 500, torch.Generator())
    method.end_epoch(state)
    assert torch.equal(state.S, expected)
    W_expected = method.posterior * expected
    assert torch.allclose(state.W, W_expected / W_expected.sum(dim=1, keepdim=True))
    changed = int((expected != S_before).sum())
    assert state.n_purified == changed and changed < 500
    assert method.theta == pytest.approx(1e-6 + 1e-3) and method.delta == pytest.approx(delta - 1e-2)


# -------------------------------------------------------------------------------------- ALIM
def test_alim_confidence_update_literal():
    scores = [[0.5, 0.1, 0.3, 0.1], [0.05, 0.05, 0.1, 0.8], [0.2, 0.1, 0.6, 0.1]]
    for prior in (0.0, 0.1, 0.5, 1.0):
        expected = []
        for i in range(3):
            adjusted = [scores[i][j] * (1.0 if S[i][j] else prior) for j in range(Q)]
            best = adjusted.index(max(adjusted))
            expected.append([0.9 * W[i][j] + 0.1 * (j == best) for j in range(Q)])
        got = _nr.alim_confidence_update(_t(W), _t(scores), _t(S), prior, 0.9)
        np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)
    # prior 0 is PiCO's update; with prior 0.5 row 1's non-candidate 3 (0.8 x 0.5 > 0.1) wins
    np.testing.assert_array_equal(_nr.alim_confidence_update(_t(W), _t(scores), _t(S), 0.0, 0.9).numpy(),
                                  _contrastive.confidence_update(_t(W), _t(scores), _t(S), 0.9).numpy())
    assert float(_nr.alim_confidence_update(_t(W), _t(scores), _t(S), 0.5, 0.9)[1, 3]) == pytest.approx(0.1)


def test_alim_margins_literal():
    scores = [[0.5, 0.1, 0.3, 0.1], [0.05, 0.05, 0.1, 0.8], [0.2, 0.1, 0.6, 0.1]]
    expected = [0.5 / 0.3, 0.1 / 0.8, 0.2 / 0.6]
    np.testing.assert_allclose(_nr.alim_margins(_t(scores), _t(S)).numpy(), expected, rtol=1e-12)
    assert math.isinf(float(_nr.alim_margins(_t([[0.3, 0.7]]), _t([[1, 1]]))[0]))


def _alim(**kw):
    pico = dict(feat_dim=8, queue_size=16, moco_m=0.9, proto_m=0.9, temperature=0.07, loss_weight=0.5,
                prot_start=0, conf_ema=(0.95, 0.8), noise_scale=0.1, augmentation="identity")
    return _nr.Alim(**{"start_epoch": 2, "noise_rate": 0.25, "mixup_weight": 1.0, "mixup_alpha": 4.0, **kw}, **pico)


def test_alim_prior_is_the_noise_rate_quantile_of_last_epochs_margins():
    state = _state()
    method = _alim()
    method.setup(state)
    margins = [torch.tensor([3.0, 0.5, 2.0]), torch.tensor([9.0, 1.5, 0.2, 4.0, 0.7])]
    for epoch, expected in ((1, 0.0), (2, sorted([3.0, 0.5, 2.0, 9.0, 1.5, 0.2, 4.0, 0.7])[int(8 * 0.25)])):
        method.margins = list(margins)
        state.epoch = epoch
        method.start_epoch(state)
        assert method.prior == pytest.approx(expected) and method.margins == []
    assert method.prior == pytest.approx(0.7)


def test_one_alim_step_is_picos_plus_the_mixup_term():
    state = _state(epoch=3)
    method = _alim()
    method.setup(state)
    method.prior = 0.3
    idx = torch.tensor([3, 7, 0, 9])
    xb, sb = state.X[idx], state.S[idx]
    pico_state, pico = copy.deepcopy(state), copy.deepcopy(method)
    torch.manual_seed(5)
    loss, logits = method.batch_loss(state, idx, xb, sb)
    # restated: PiCO's step with ALIM's confidence target, then the mixup term
    torch.manual_seed(5)
    scores_w = pico_state.W.clone()
    base, _ = _contrastive.Pico.batch_loss(pico, pico_state, idx, xb, sb)
    expected_w = _nr.alim_confidence_update(scores_w[idx], pico.scores, sb, 0.3, pico.m)
    np.testing.assert_allclose(state.W[idx].numpy(), expected_w.numpy(), rtol=1e-6)
    lam = float(torch.distributions.Beta(torch.tensor(4.0), torch.tensor(4.0)).sample())
    lam = max(lam, 1 - lam)
    partner = torch.randint(10, (4,))
    x_mix = lam * xb + (1 - lam) * state.X[partner]
    w_mix = lam * state.W[idx] + (1 - lam) * state.W[partner]
    expected = base + weighted_nll(pico_state.model(x_mix), w_mix)
    assert float(loss.detach()) == pytest.approx(float(expected.detach()), rel=1e-6)
    assert len(method.margins) == 1 and torch.allclose(method.margins[0], _nr.alim_margins(method.scores, sb))


def test_alim_without_its_additions_is_pico():
    """mixup_weight 0 and start_epoch past the run: the fit is PiCO's."""
    X, S_, _, _ = _noisy_blobs(n=200)
    kw = dict(hidden_layer_sizes=(16,), n_epochs=3, batch_size=32, queue_size=64, augmentation="identity",
              device="cpu", random_state=2)
    pico = plcore_deep.PicoLearner(**kw).fit(X, S_)
    alim = plcore_deep.AlimLearner(mixup_weight=0.0, start_epoch=10, **kw).fit(X, S_)
    np.testing.assert_allclose(alim.decision_function(X), pico.decision_function(X), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(alim.confidences_, pico.confidences_, rtol=1e-6, atol=1e-8)
    mixed = plcore_deep.AlimLearner(start_epoch=10, **kw).fit(X, S_)
    assert not np.allclose(mixed.decision_function(X), pico.decision_function(X))


# ------------------------------------------------------------------------------------ PiCO+
def test_masked_supcon_loss_literal():
    torch.manual_seed(3)
    b, m = 3, 7
    q = torch.nn.functional.normalize(torch.randn(b, 4, dtype=torch.float64), dim=1)
    rest = torch.nn.functional.normalize(torch.randn(m - b, 4, dtype=torch.float64), dim=1)
    features = torch.cat([q, rest])
    positive = torch.tensor([[1, 1, 0, 1, 0, 0, 1], [0, 0, 0, 0, 0, 0, 0], [0, 1, 1, 0, 1, 1, 0]], dtype=torch.bool)
    weights = torch.tensor([0.5, 0.1, 2.0], dtype=torch.float64)
    t = 0.3
    terms = []
    for i in range(b):
        dots = [float(q[i] @ features[a]) / t for a in range(m)]
        log_norm = math.log(sum(math.exp(dots[a]) for a in range(m) if a != i))
        pos = [a for a in range(m) if positive[i, a] and a != i]          # the diagonal is ignored
        terms.append(-sum(dots[a] - log_norm for a in pos) / len(pos) if pos else 0.0)
    got = _contrastive.masked_supcon_loss(q, features, positive, t)
    assert float(got) == pytest.approx(sum(terms) / b, rel=1e-12)
    got_w = _contrastive.masked_supcon_loss(q, features, positive, t, weights)
    assert float(got_w) == pytest.approx(sum(w * v for w, v in zip(weights.tolist(), terms)) / b, rel=1e-12)
    # supcon_loss is the mask of equal labels
    labels = torch.tensor([0, 1, 0, 2, 1, 0, 2])
    np.testing.assert_allclose(float(_contrastive.supcon_loss(q, features, labels[:b], labels, t)),
                               float(_contrastive.masked_supcon_loss(q, features, labels[:b, None] == labels[None, :],
                                                                     t)), rtol=1e-15)


def test_reliable_rows_are_the_pure_ratio_nearest():
    distance = torch.tensor([0.3, -0.9, 0.1, 0.7, -0.2, 0.0, 0.5, -0.5, 0.9, 0.2])
    for ratio, expected in ((0.6, {1, 7, 4, 5, 2, 9}), (1.0, set(range(10))), (0.25, {1, 7})):
        got = _nr.reliable_rows(distance, ratio)
        assert set(torch.nonzero(got).flatten().tolist()) == expected


def test_pico_plus_positives_literal():
    pseudo = torch.tensor([0, 2, 0])
    labels = torch.tensor([0, 2, 0, 0, 2, 0, 0, 2, 1])            # queries, keys, a queue of 3
    reliable = torch.tensor([True, True, False])
    columns = torch.tensor([True, True, False, True, True, False, True, False, True])
    neighbours = torch.zeros(3, 9, dtype=torch.bool)
    neighbours[2, [0, 4, 8]] = True
    for nb in (None, neighbours):
        got = _nr.pico_plus_positives(pseudo, labels, reliable, columns, nb)
        for i in range(3):
            for a in range(9):
                if a == 3 + i:
                    expected = True                                  # the anchor's own key
                elif not reliable[i] and nb is not None:
                    expected = bool(nb[i, a])
                else:
                    expected = bool(reliable[i] and columns[a] and pseudo[i] == labels[a])
                assert bool(got[i, a]) == expected, (nb is None, i, a)


def _pico_plus(**kw):
    pico = dict(feat_dim=8, queue_size=16, moco_m=0.9, proto_m=0.9, temperature=0.07, loss_weight=0.5,
                prot_start=1, conf_ema=(0.95, 0.8), noise_scale=0.1, augmentation="identity")
    own = dict(pure_ratio=0.6, knn_start=2, n_neighbors=3, temperature_guess=0.1, ur_weight=0.1, cls_weight=2.0,
               mixup_alpha=4.0)
    return _nr.PicoPlus(**{**pico, **own, **kw})


def _authors_supcon(features, mask, batch_size, weights=None):
    """SupConLoss's mask mode as the authors' utils_plus/utils_loss.py computes it (t = base t)."""
    mask = mask.float()
    logits = features[:batch_size] @ features.T / 0.07
    logits = logits - logits.max(dim=1, keepdim=True).values
    logits_mask = torch.scatter(torch.ones_like(mask), 1, torch.arange(batch_size).view(-1, 1), 0)
    mask = mask * logits_mask
    exp_logits = torch.exp(logits) * logits_mask
    log_prob = logits - torch.log(exp_logits.sum(1, keepdim=True) + 1e-12)
    loss = -(mask * log_prob).sum(1) / mask.sum(1)
    return loss.mean() if weights is None else (loss * weights).mean()


@pytest.mark.parametrize("epoch", [2, 1, 0])
def test_one_pico_plus_step_is_the_authors_step(epoch):
    """One batch restated line by line from train_pico_plus.py and PiCO_PLUS.forward: kNN
    positives (epoch 2), reliable positives only (epoch 1), PiCO's warm-up (epoch 0)."""
    state = _state(n=12, epoch=epoch)
    method = _pico_plus()
    method.setup(state)
    method.prototypes = torch.nn.functional.normalize(torch.randn(Q, 8), dim=1)
    method.queue_labels = torch.randint(0, Q, (16,))
    method.queue_reliable = torch.rand(16) < 0.5
    method.reliable = torch.tensor([True, False, True, True, False, True, True, False, True, True, False, True])
    idx = torch.tensor([3, 7, 0, 9, 1, 10])
    xb, sb = state.X[idx], state.S[idx]
    ref_state, ref = copy.deepcopy(state), copy.deepcopy(method)
    torch.manual_seed(5)
    loss, logits = method.batch_loss(state, idx, xb, sb)

    torch.manual_seed(5)
    b = len(idx)
    is_rel = ref.reliable[idx]
    batch_weight = is_rel.float()
    body = ref_state.model[:-1](xb)
    output = ref_state.model[-1](body)
    q = torch.nn.functional.normalize(ref.head(body), dim=1)
    with torch.no_grad():
        scores = torch.softmax(output, dim=1)
        within = (scores * sb).max(dim=1).indices
        pseudo_b = (batch_weight * within + (1 - batch_weight) * scores.max(dim=1).indices).long()
        prototypes = ref.prototypes.clone()
        score_prot = torch.softmax(q @ prototypes.T, dim=1)
        distance = -(q * prototypes[within]).sum(dim=1)
        for feat, label in zip(q[is_rel], pseudo_b[is_rel]):
            ref.prototypes[label] = ref.prototypes[label] * 0.9 + 0.1 * feat
        ref.prototypes = torch.nn.functional.normalize(ref.prototypes, dim=1)
        ref._momentum_update()
        k = torch.nn.functional.normalize(ref.key(xb), dim=1)
    features = torch.cat([q, k, ref.queue.clone()])
    pseudo = torch.cat([pseudo_b, pseudo_b, ref.queue_labels.clone()]).view(-1, 1)
    is_rel_queue = torch.cat([is_rel, is_rel, ref.queue_reliable.clone()])
    W = ref_state.W.clone()
    if epoch >= 1:
        with torch.no_grad():
            best = (score_prot * sb).max(dim=1).indices
            W[idx] = ref.m * W[idx] + (1 - ref.m) * torch.nn.functional.one_hot(best, Q).float()
        mask_all = torch.eq(pseudo[:b], pseudo.T).float()
        cont_all = _authors_supcon(features, mask_all, b)
        mask = batch_weight.unsqueeze(1).repeat(1, mask_all.shape[1]) * mask_all
        mask = is_rel_queue.view(1, -1).repeat(b, 1) * mask
        if epoch >= 2:
            _, knn = torch.topk(features[:b] @ features.T, k=3, dim=-1, largest=True)
            mask_knn = torch.scatter(torch.zeros(mask.shape), 1, knn, 1)
            mask[~is_rel] = mask_knn[~is_rel]
        mask[:, b:2 * b] = ((mask[:, b:2 * b] + torch.eye(b)) > 0).float()
        mask[:, :b] = ((mask[:, :b] + torch.eye(b)) > 0).float()
        weights = 0.5 * batch_weight + 0.1 * (1 - batch_weight) if epoch >= 2 else None
        loss_cont = _authors_supcon(features, mask, b, weights) + 0.1 * cont_all
        ce = -(torch.log_softmax(output, dim=1) * W[idx]).sum(dim=1)
        loss_cls = ce[is_rel].mean()
        guess = score_prot ** (1 / 0.1)
        guess = guess / guess.sum(dim=1, keepdim=True)
        loss_ur = (-(torch.log_softmax(output, dim=1) * guess).sum(dim=1))[~is_rel].mean()
        lam = float(torch.distributions.Beta(torch.tensor(4.0), torch.tensor(4.0)).sample())
        lam = max(lam, 1 - lam)
        target = W[idx].clone()
        target[~is_rel] = guess[~is_rel]
        perm = torch.randperm(b)
        mixed = ref_state.model(lam * xb + (1 - lam) * xb[perm])
        loss_mix = (-(torch.log_softmax(mixed, dim=1) * (lam * target + (1 - lam) * target[perm])).sum(dim=1)).mean()
        expected = loss_mix + 2.0 * loss_cls + 0.1 * loss_ur + loss_cont
    else:
        logits_moco = torch.cat([(q * k).sum(dim=1, keepdim=True), q @ ref.queue.T], dim=1) / 0.07
        moco = torch.nn.functional.cross_entropy(logits_moco, torch.zeros(b, dtype=torch.long))
        expected = -(torch.log_softmax(output, dim=1) * W[idx]).sum(dim=1).mean() + 0.5 * moco
    assert float(loss.detach()) == pytest.approx(float(expected.detach()), rel=1e-5)
    np.testing.assert_allclose(state.W.numpy(), W.numpy(), rtol=1e-6)
    np.testing.assert_allclose(method.prototypes.numpy(), ref.prototypes.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(method.distance[idx].numpy(), distance.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(method.queue_reliable[:b].numpy(), is_rel.numpy())
    np.testing.assert_array_equal(method.queue_labels[:b].numpy(), pseudo_b.numpy())


def test_pico_plus_picks_the_reliable_rows_at_each_epoch_from_prot_start():
    state = _state(n=10)
    method = _pico_plus(prot_start=2, pure_ratio=0.3)
    method.setup(state)
    method.distance = torch.tensor([0.3, -0.9, 0.1, 0.7, -0.2, 0.0, 0.5, -0.5, 0.9, 0.2])
    state.epoch = 1
    method.start_epoch(state)
    assert bool(method.reliable.all())                          # every row, before prot_start
    state.epoch = 2
    method.start_epoch(state)
    assert set(torch.nonzero(method.reliable).flatten().tolist()) == {1, 7, 4}


# ------------------------------------------------------------------------------- in the loop
def _noisy_blobs(n=600, eta=0.3, seed=0):
    """Five blobs; NoisyBags (false labels join with probability 0.3, the true label left out with
    probability eta); the first two thirds for training."""
    X, y = make_blobs(n_samples=n, centers=5, n_features=5, cluster_std=1.0, random_state=seed)
    S_ = NoisyBags(q=0.3, eta=eta, random_state=seed).generate(y)
    cut = 2 * n // 3
    scaler = StandardScaler().fit(X[:cut])
    return scaler.transform(X[:cut]), S_[:cut], scaler.transform(X[cut:]), y[cut:]


@pytest.fixture(scope="module")
def noisy_blobs():
    X_tr, S_tr, X_te, y_te = _noisy_blobs()
    _, y = make_blobs(n_samples=600, centers=5, n_features=5, cluster_std=1.0, random_state=0)
    return X_tr, S_tr, y[:400], X_te, y_te


def test_the_learners_are_registered_in_their_family():
    assert LEARNER_OPTIONS["fredis"] == "plcore_deep.noise_robust:FredisLearner"
    assert LEARNER_OPTIONS["alim"] == "plcore_deep.noise_robust:AlimLearner"
    assert LEARNER_OPTIONS["pico_plus"] == "plcore_deep.noise_robust:PicoPlusLearner"


@pytest.mark.parametrize("name", ["fredis", "alim", "pico_plus"])
def test_learns_five_blobs_whose_candidate_sets_miss_the_true_label(name, noisy_blobs):
    X_tr, S_tr, y_tr, X_te, y_te = noisy_blobs
    outside = ~S_tr[np.arange(len(y_tr)), y_tr]
    assert 0.2 < outside.mean() < 0.4                            # the data really are noisy
    cls = getattr(plcore_deep, LEARNER_OPTIONS[name].split(":")[1])
    extra = {"alim": dict(queue_size=256, start_epoch=10, noise_rate=0.3, augmentation="identity"),
             "fredis": dict(update_interval=5),
             "pico_plus": dict(queue_size=256, knn_start=10, augmentation="identity")}[name]
    est = cls(hidden_layer_sizes=(32,), n_epochs=30, batch_size=32, learning_rate=1e-2, device="cpu",
              random_state=0, **extra).fit(X_tr, S_tr)
    acc = float(np.mean(est.predict(X_te) == y_te))
    assert acc >= 0.9, f"{name}: held-out accuracy {acc:.3f} (chance 0.2)"
    assert np.all(np.isfinite(est.loss_curve_))
    np.testing.assert_allclose(est.confidences_.sum(axis=1), 1.0)
    assert np.all(est.confidences_[~S_tr] == 0)                  # on the given sets, as every learner's


def test_fredis_refined_sets_recover_left_out_true_labels(noisy_blobs):
    """Where the given set misses the true label, FREDIS's refined set holds it on most rows (a
    learner that keeps the given sets, as PRODEN, on none), and no refined set is empty."""
    X_tr, S_tr, y_tr, _, _ = noisy_blobs
    est = plcore_deep.FredisLearner(hidden_layer_sizes=(32,), n_epochs=30, batch_size=32, learning_rate=1e-2,
                                    update_interval=5, device="cpu", random_state=0).fit(X_tr, S_tr)
    rows = np.arange(len(y_tr))
    outside = ~S_tr[rows, y_tr]
    recovered = float(np.mean(est.candidates_[rows, y_tr][outside]))
    assert recovered >= 0.8, f"true label back in the refined set on {recovered:.3f} of the noisy rows"
    assert est.n_purified_ > 0 and np.all(est.candidates_.sum(axis=1) > 0)


@pytest.mark.parametrize("name", ["fredis", "alim", "pico_plus"])
def test_an_empty_candidate_set_is_a_clear_error(name):
    X, S_, _, _ = _noisy_blobs(n=60)
    S_ = S_.copy()
    S_[4] = False
    cls = getattr(plcore_deep, LEARNER_OPTIONS[name].split(":")[1])
    with pytest.raises(ValueError, match="empty rows"):
        cls(n_epochs=1, device="cpu").fit(X, S_)
