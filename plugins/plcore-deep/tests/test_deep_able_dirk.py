"""ABLE and DIRK: each term against its literal formula (slow loops), one step of each against a
re-statement of its authors' step, and each learner on a separable problem with candidate sets."""

import copy
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from plcore.datasets.bags import UniformBags
from plcore_deep import _contrastive as _c
from plcore_deep import AbleLearner, DirkLearner
from plcore_deep._loop import State
from plcore_deep._networks import build_network
from plcore_deep.plugin import LEARNER_OPTIONS


def _rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _sets(n, q, seed):
    g = torch.Generator().manual_seed(seed)
    S = (torch.rand(n, q, generator=g) < 0.4).double()
    S[torch.arange(n), torch.randint(0, q, (n,), generator=g)] = 1.0
    return S


def _lse(values):
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))


# ----------------------------------------------------------------------------- the shared loss
def test_weighted_contrastive_loss_literal():
    a = F.normalize(_rand(3, 4, seed=1), dim=1)
    features = torch.cat([a, F.normalize(_rand(4, 4, seed=2), dim=1)])
    w = torch.rand(3, 7, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    t = 0.2
    total = 0.0
    for i in range(3):
        denom = _lse([float(a[i] @ features[c]) / t for c in range(7) if c != i])
        total += -sum(float(w[i, k]) * (float(a[i] @ features[k]) / t - denom) for k in range(7) if k != i)
    expected = (t / 0.07) * total / 3            # the weight on the anchor itself (w[i, i]) is ignored
    assert float(_c.weighted_contrastive_loss(a, features, w, t)) == pytest.approx(expected, rel=1e-10)


# ----------------------------------------------------------------------------- ABLE
def test_able_weights_literal():
    S = _sets(6, 4, seed=4)
    W = S * torch.rand(6, 4, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    W = W / W.sum(dim=1, keepdim=True)
    pseudo = torch.tensor([1, 3, 1, 0, 1, 3])
    expected = np.zeros((6, 6))
    for i in range(6):
        for j in range(4):
            if S[i, j] == 1:
                group = [k for k in range(6) if pseudo[k] == j]
                for k in group:
                    expected[i, k] += float(W[i, j]) / len(group)
    np.testing.assert_allclose(_c.able_weights(W, S, pseudo).numpy(), expected, rtol=1e-12)


def _state(n=10, d=5, q=3, b=4, epoch=0, seed=6):
    torch.manual_seed(seed)
    X = _rand(n, d, seed=seed).float()
    S = _sets(n, q, seed=seed + 1).float()
    model = build_network(d, q, (6,))
    W = S / S.sum(dim=1, keepdim=True)
    state = State(model, X, S, W.clone(), torch.arange(n), b, epoch=epoch, n_epochs=10,
                  generator=torch.Generator().manual_seed(1))
    return state, torch.tensor([7, 2, 0, 5])


def test_one_able_step_equals_the_authors_step():
    """Both views are the row itself (PLENCH's tabular data): loss = weighted NLL + loss_weight x the
    loss over 2b anchors with positives ``s_ij / n_j`` on every row predicted ``j`` in both views;
    after the step the confidences are the pre-step posterior renormalised on the candidates."""
    state, idx = _state()
    method = _c.Able(feat_dim=4, temperature=0.3, loss_weight=0.7, noise_scale=0.1, augmentation="identity")
    method.setup(state)
    xb, sb, W = state.X[idx], state.S[idx], state.W[idx].clone()
    with torch.no_grad():
        body = state.model[:-1](xb)
        logits = state.model[-1](body).double()
        z = F.normalize(method.head(body), dim=1).double()
    b, t = 4, 0.3
    p = torch.softmax(logits, dim=1)
    pseudo = [int(np.argmax((p[k] * sb[k]).numpy())) for k in range(b)]
    nll = -sum(float((W[i] * torch.log(p[i])).sum()) for i in range(b)) / b
    views = torch.cat([z, z])                        # the 2b embeddings
    con = 0.0
    for i in range(2 * b):
        denom = _lse([float(views[i] @ views[c]) / t for c in range(2 * b) if c != i])
        row = i % b
        for j in range(3):
            if sb[row, j] == 1:
                group = [k for k in range(b) if pseudo[k] == j]
                for k in group:
                    for pos in (k, k + b):
                        if pos != i:
                            con -= float(W[row, j]) / len(group) * (float(views[i] @ views[pos]) / t - denom)
    con *= (t / 0.07) / (2 * b)
    loss, out = method.batch_loss(state, idx, xb, sb)
    assert float(loss.detach()) == pytest.approx(nll + 0.7 * con, rel=1e-5)
    method.after_step(state, idx, xb, sb, out)
    expected = (p * sb) / (p * sb).sum(dim=1, keepdim=True)
    np.testing.assert_allclose(state.W[idx].numpy(), expected.numpy(), rtol=1e-5, atol=1e-7)


# ----------------------------------------------------------------------------- DIRK
def test_rectified_confidence_literal():
    logits = _rand(5, 4, seed=8)
    S = torch.tensor([[1, 1, 0, 0], [0, 1, 1, 1], [1, 0, 0, 0], [1, 1, 1, 1], [0, 0, 1, 1]], dtype=torch.float64)
    out = _c.rectified_confidence(logits, S).numpy()
    p = torch.softmax(logits, dim=1).numpy()
    Sn = S.numpy()
    for i in range(5):     # the authors' form: M = 1 / P_S, a = M max(v) / (M max(v) + min u), a = 1 for a = 0
        u = p[i] * Sn[i] / (p[i] * Sn[i]).sum()
        v = p[i] * (1 - Sn[i]) / ((p[i] * (1 - Sn[i])).sum() + 1e-20)
        M = 1.0 / (p[i] * Sn[i]).sum()
        a = M * v.max() / (M * v.max() + ((1 - Sn[i]) + u).min())
        a = 1.0 if a == 0 else a
        np.testing.assert_allclose(out[i], a * u + (1 - a) * v, rtol=1e-10, atol=1e-15)
        if 0 < Sn[i].sum() < 4:      # partial-label knowledge: every candidate above every non-candidate
            assert out[i][Sn[i] == 1].min() == pytest.approx(out[i][Sn[i] == 0].max() / (p[i] * Sn[i]).sum())
    np.testing.assert_allclose(out.sum(axis=1), 1.0)
    np.testing.assert_allclose(out[3], p[3])                            # every label a candidate: p itself


def test_rectified_confidence_is_finite_where_the_candidates_underflow():
    logits = torch.tensor([[0.0, 200.0, -200.0]])
    out = _c.rectified_confidence(logits, torch.tensor([[1.0, 0.0, 1.0]]))
    assert torch.all(torch.isfinite(out)) and float(out.sum()) == pytest.approx(1.0)
    assert float(out[0, 0]) >= float(out[0, 1])


def test_dirk_weights_literal():
    b, m, q, td = 3, 7, 4, 0.4
    S_all = _sets(m, q, seed=9)
    S_all[6] = 0.0                                       # an unwritten queue slot: matches nothing
    dist = torch.softmax(_rand(m, q, seed=10), dim=1)
    dist[b:2 * b] = dist[:b]                              # the keys' rows carry the anchors' confidences
    S_all[b:2 * b] = S_all[:b]
    out = _c.dirk_weights(S_all[:b], dist[:b], S_all, dist, td).numpy()
    expected = np.zeros((b, m))
    for i in range(b):
        pos = [k for k in range(m) if k != i and float(S_all[i] @ S_all[k]) > 0
               and int(dist[i].argmax()) == int(dist[k].argmax())]
        sim = {k: float(dist[i] @ dist[k]) / (float(dist[i].norm()) * float(dist[k].norm())) / td for k in pos}
        z = sum(math.exp(s) for s in sim.values())
        for k in pos:
            expected[i, k] = math.exp(sim[k]) / z
        assert i + b in pos                               # its own key is always a positive
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-15)
    assert np.all(out[:, 6] == 0)


def _authors_dirk_step(model, head, teacher, teacher_head, queue, queue_partial, queue_dist, x, S, epoch, *,
                       prot_start, loss_weight, t, td):
    """One DIRK step as its authors' code computes it (all views the row itself), re-stated with
    the authors' numerics: max-subtraction, 1e-12 in the log, the rectification with M = 1/P_S."""
    b = x.shape[0]
    with torch.no_grad():
        feat_k = F.normalize(teacher_head(teacher[:-1](x)), dim=1)
        p = torch.softmax(teacher(x), dim=1)
        u = p * S / (p * S).sum(dim=1, keepdim=True)
        v = p * (1 - S) / ((p * (1 - S)).sum(dim=1, keepdim=True) + 1e-20)
        M = 1.0 / (p * S).sum(dim=1, keepdim=True)
        v_max = v.max(dim=1, keepdim=True).values
        u_min = ((1 - S) + u).min(dim=1, keepdim=True).values
        a = M * v_max / (M * v_max + u_min)
        a[a == 0] = 1
        target = u * a + v * (1 - a)
    body = model[:-1](x)
    output = model[-1](body)
    feat_s = F.normalize(head(body), dim=1)
    features = torch.cat([feat_s, feat_k, queue])
    partial = torch.cat([S, S, queue_partial])
    dist = torch.cat([target, target, queue_dist])
    if epoch >= prot_start:
        mask = (S @ partial.T != 0).float() * (dist[:b].argmax(1)[:, None] == dist.argmax(1)[None, :]).float()
        adc = features[:b] @ features.T / t
        logits = adc - adc.max(dim=1, keepdim=True).values.detach()
        self_mask = torch.scatter(torch.ones_like(adc), 1, torch.arange(b).view(-1, 1), 0)
        mask = mask * self_mask
        dn = dist / dist.norm(dim=-1, keepdim=True)
        simi = dn[:b] @ dn.T / td
        simi = simi - simi.max(dim=1, keepdim=True).values
        e = torch.exp(simi) * mask
        weight = e / e.sum(dim=1, keepdim=True)
        log_prob = logits - torch.log((torch.exp(logits) * self_mask).sum(1, keepdim=True) + 1e-12)
        contrast = (-(t / 0.07) * weight * log_prob).sum(dim=1).mean()
    else:
        l_pos = (feat_s * feat_k).sum(dim=1, keepdim=True)
        contrast = F.cross_entropy(torch.cat([l_pos, feat_s @ queue.T], dim=1) / t, torch.zeros(b, dtype=torch.long))
    teach = -(F.log_softmax(output, dim=1) * target).sum(dim=1).mean()
    return teach + loss_weight * contrast, target, feat_k


@pytest.mark.parametrize("epoch", [0, 2])
def test_one_dirk_step_equals_the_authors_step(epoch):
    state, idx = _state(epoch=epoch)
    method = _c.Dirk(feat_dim=4, queue_size=12, moco_m=0.9, temperature=0.3, dist_temperature=0.4, loss_weight=0.8,
                     prot_start=1, noise_scale=0.1, augmentation="identity")
    method.setup(state)
    method.start_epoch(state)
    # as after three earlier batches: slots 0..7 written, 8..11 still empty
    q = state.S.shape[1]
    method.queue[:8] = F.normalize(torch.randn(8, 4), dim=1)
    method.queue_partial[:8] = _sets(8, q, seed=11).float()
    method.queue_dist[:8] = torch.softmax(torch.randn(8, q), dim=1)
    method.ptr = 8
    before = [copy.deepcopy(m) for m in (state.model, method.head, method.teacher, method.teacher_head)]
    queue = (method.queue.clone(), method.queue_partial.clone(), method.queue_dist.clone())
    xb, sb = state.X[idx], state.S[idx]
    expected, target, feat_k = _authors_dirk_step(*before, *queue, xb, sb, epoch, prot_start=1, loss_weight=0.8,
                                                  t=0.3, td=0.4)
    loss, out = method.batch_loss(state, idx, xb, sb)
    assert float(loss.detach()) == pytest.approx(float(expected.detach()), rel=1e-5)
    np.testing.assert_allclose(method.queue[8:12].numpy(), feat_k.numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(method.queue_dist[8:12].numpy(), target.numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(method.queue_partial[8:12].numpy(), sb.numpy())
    assert method.ptr == 0
    np.testing.assert_allclose(state.W[idx].numpy(), target.numpy(), rtol=1e-5, atol=1e-7)
    # after the step the teacher moves towards the student: theta_t <- m theta_t + (1 - m) theta_s
    with torch.no_grad():
        for p in state.model.parameters():
            p.add_(0.01)
    method.after_step(state, idx, xb, sb, out)
    student = list(state.model.parameters()) + list(method.head.parameters())
    teacher_before = list(before[2].parameters()) + list(before[3].parameters())
    teacher_after = list(method.teacher.parameters()) + list(method.teacher_head.parameters())
    for ps, pb, pa in zip(student, teacher_before, teacher_after):
        np.testing.assert_allclose(pa.detach().numpy(), (0.9 * pb + 0.1 * ps).detach().numpy(), rtol=1e-6, atol=1e-7)


def test_dirk_teacher_is_its_own_draw_and_not_trained():
    state, _ = _state()
    method = _c.Dirk(feat_dim=4, queue_size=8, moco_m=0.99, temperature=0.07, dist_temperature=0.4, loss_weight=1.0,
                     prot_start=1, noise_scale=0.1)
    extra = method.setup(state)
    assert extra == [method.head]
    assert not torch.equal(method.teacher[0].weight, state.model[0].weight)
    assert not any(p.requires_grad for p in method.teacher.parameters())


def test_dirk_without_refinement_is_the_distillation_alone():
    state, idx = _state(epoch=3)
    method = _c.Dirk(feat_dim=4, queue_size=8, moco_m=0.9, temperature=0.07, dist_temperature=0.4, loss_weight=0.0,
                     prot_start=1, noise_scale=0.1, augmentation="identity")
    method.setup(state)
    xb, sb = state.X[idx], state.S[idx]
    with torch.no_grad():
        target = _c.rectified_confidence(method.teacher(xb), sb)
    loss, _ = method.batch_loss(state, idx, xb, sb)
    expected = -(F.log_softmax(state.model(xb), dim=1) * target).sum(dim=1).mean()
    assert float(loss.detach()) == pytest.approx(float(expected.detach()), rel=1e-6)


# ----------------------------------------------------------------------------- in the loop
def _bags(n=240, q=4, seed=0):
    rng = np.random.RandomState(seed)
    y = rng.randint(0, q, n)
    X = rng.randn(n, 6) + 2.5 * np.eye(q, 6)[y]
    return X, UniformBags(r=1).generate(y, random_state=seed), y


def test_registered_in_the_contrastive_family():
    assert LEARNER_OPTIONS["able"] == "plcore_deep.contrastive:AbleLearner"
    assert LEARNER_OPTIONS["dirk"] == "plcore_deep.contrastive:DirkLearner"


@pytest.mark.parametrize("cls", [AbleLearner, DirkLearner])
def test_learns_where_the_answer_is_known(cls):
    X, S, y = _bags(n=600)
    est = cls(hidden_layer_sizes=(32,), n_epochs=20, batch_size=32, learning_rate=1e-2, queue_size=256,
              device="cpu", random_state=0) if cls is DirkLearner else \
        cls(hidden_layer_sizes=(32,), n_epochs=20, batch_size=32, learning_rate=1e-2, device="cpu", random_state=0)
    est.fit(X[:400], S[:400])
    # chance 0.25; logistic regression on the TRUE labels scores 0.865 on these rows
    assert np.mean(est.predict(X[400:]) == y[400:]) >= 0.8
    assert np.mean(np.argmax(est.confidences_, axis=1) == y[:400]) >= 0.9
    assert np.all(est.confidences_[~S[:400]] == 0)
    np.testing.assert_allclose(est.confidences_.sum(axis=1), 1.0)


@pytest.mark.parametrize("cls", [AbleLearner, DirkLearner])
def test_a_fit_is_reproducible_and_the_view_matters(cls):
    X, S, _ = _bags(n=120)
    kw = dict(hidden_layer_sizes=(8,), n_epochs=3, batch_size=32, device="cpu", random_state=2)
    if cls is DirkLearner:
        kw.update(queue_size=64, prot_start=1)
    a = cls(**kw).fit(X, S).decision_function(X)
    np.testing.assert_array_equal(a, cls(**kw).fit(X, S).decision_function(X))
    assert not np.allclose(a, cls(augmentation="identity", **kw).fit(X, S).decision_function(X))


@pytest.mark.parametrize("bad", [{"dist_temperature": 0.0}, {"moco_m": 1.5}, {"augmentation": "x"}])
def test_dirk_bad_parameters_are_parameter_errors(bad):
    from plcore.exceptions import InvalidParameterError

    X, S, _ = _bags(n=40)
    with pytest.raises(InvalidParameterError, match=next(iter(bad))):
        DirkLearner(n_epochs=1, device="cpu", **bad).fit(X, S)
