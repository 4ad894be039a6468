"""PiCO and VALEN: each term against its literal formula, one PiCO step against a line-by-line
re-statement of the authors' step, and the invariants that tie both to the shared loop."""

import copy
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from plcore.datasets.bags import UniformBags
from plcore_deep import _contrastive as _pico
from plcore_deep import _instance_dependent as _valen
from plcore_deep._loop import State
from plcore_deep._networks import build_network
from plcore_deep import PicoLearner, ProdenLearner, ValenLearner


def _rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


# ----------------------------------------------------------------------------- PiCO's terms
def test_supcon_loss_literal():
    q = F.normalize(_rand(3, 4, seed=1), dim=1)
    others = F.normalize(_rand(5, 4, seed=2), dim=1)
    features = torch.cat([q, others])
    labels_q = torch.tensor([0, 1, 0])
    labels = torch.cat([labels_q, torch.tensor([1, 0, 2, 0, 1])])
    t = 0.5
    total = 0.0
    for i in range(3):
        denom = sum(math.exp(float(q[i] @ features[a]) / t) for a in range(8) if a != i)
        pos = [p for p in range(8) if p != i and labels[p] == labels_q[i]]
        total += -sum(float(q[i] @ features[p]) / t - math.log(denom) for p in pos) / len(pos)
    assert float(_pico.supcon_loss(q, features, labels_q, labels, t)) == pytest.approx(total / 3, rel=1e-10)



def _plain_supcon(q, features, positive, t):
    """The contrastive term as PyTorch's product computes it (every feature row's gradient), the
    diagonal masked: what :class:`_AnchorProduct` must equal."""
    b = q.shape[0]
    logits = q @ features.T / t
    self_mask = torch.zeros_like(logits, dtype=torch.bool)
    self_mask[torch.arange(b), torch.arange(b)] = True
    logits = logits.masked_fill(self_mask, float("-inf"))
    log_prob = logits - torch.logsumexp(logits, dim=1, keepdim=True)
    positive = positive & ~self_mask
    return -((log_prob.masked_fill(~positive, 0.0)).sum(dim=1) / positive.sum(dim=1).clamp(min=1)).mean()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_anchor_product_gradient_is_the_plain_products_to_the_bit(dtype):
    # PiCO's shapes (training is float32): the anchors' gradient (through both of their uses) is
    # PyTorch's own product's to the last bit, and the keys and queue after the anchors get none
    g = torch.Generator().manual_seed(0)
    raw = torch.randn(128, 128, generator=g, dtype=dtype, requires_grad=True)
    k = F.normalize(torch.randn(128, 128, generator=g, dtype=dtype), dim=1)
    queue = F.normalize(torch.randn(1024, 128, generator=g, dtype=dtype), dim=1)
    labels = torch.randint(0, 10, (1280,), generator=g)
    grads, losses = [], []
    for plain in (False, True):
        q = F.normalize(raw, dim=1)
        features = torch.cat([q, k, queue])
        positive = labels[:128, None] == labels[None, :]
        loss = (_plain_supcon(q, features, positive, 0.07) if plain else
                _pico.masked_supcon_loss(q, features, positive, 0.07))
        grads.append(torch.autograd.grad(loss, raw)[0])
        losses.append(loss.detach())
    assert torch.equal(losses[0], losses[1])
    assert torch.equal(grads[0], grads[1])
    features = torch.cat([raw.detach(), k, queue]).requires_grad_(True)
    out = _pico._AnchorProduct.apply(raw, features)
    weight = torch.randn(out.shape, generator=g, dtype=dtype)
    mine = torch.autograd.grad((out * weight).sum(), features)[0]
    theirs = torch.autograd.grad(((raw @ features.T) * weight).sum(), features)[0]
    assert torch.equal(mine[128:], torch.zeros_like(mine[128:]))
    assert torch.equal(mine[:128], theirs[:128])


def test_moco_loss_literal():
    q, k, queue = (F.normalize(_rand(*s, seed=i), dim=1) for i, s in enumerate([(2, 3), (2, 3), (4, 3)]))
    t = 0.07
    expected = 0.0
    for i in range(2):
        pos = math.exp(float(q[i] @ k[i]) / t)
        neg = sum(math.exp(float(q[i] @ n) / t) for n in queue)
        expected += -math.log(pos / (pos + neg))
    assert float(_pico.moco_loss(q, k, queue, t)) == pytest.approx(expected / 2, rel=1e-9)


def test_prototype_update_is_the_row_by_row_moving_average():
    protos = F.normalize(_rand(3, 4, seed=3), dim=1)
    q = F.normalize(_rand(6, 4, seed=4), dim=1)
    labels = torch.tensor([2, 0, 2, 2, 1, 0])
    m = 0.9
    expected = protos.clone()
    for feat, label in zip(q, labels):          # the authors' loop
        expected[label] = expected[label] * m + (1 - m) * feat
    expected = F.normalize(expected, p=2, dim=1)
    np.testing.assert_allclose(_pico.prototype_update(protos, q, labels, m).numpy(), expected.numpy(), rtol=1e-12)


def test_confidence_update_moves_towards_the_best_candidate_by_prototype_score():
    conf = torch.tensor([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5]], dtype=torch.float64)
    scores = torch.tensor([[0.1, 0.2, 0.7], [0.6, 0.3, 0.1]], dtype=torch.float64)   # the best are non-candidates
    S = torch.tensor([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]], dtype=torch.float64)
    out = _pico.confidence_update(conf, scores, S, 0.9)
    np.testing.assert_allclose(out.numpy(), [[0.45, 0.55, 0.0], [0.0, 0.55, 0.45]])
    assert _pico.conf_ema_at(0, 10, 0.95, 0.8) == 0.95
    assert _pico.conf_ema_at(5, 10, 0.95, 0.8) == pytest.approx(0.875)


def _authors_step(model, head, key, queue, queue_labels, ptr, prototypes, confidence, idx, x, x_key, S,
                  epoch, *, prot_start, proto_m, moco_m, m, loss_weight, t):
    """One PiCO step in the order and formulas of the authors' code (hbzju/PiCO, its tabular
    port by Fuchs & Kalinke), re-stated line by line: forward, prototype scores, prototype loop,
    key encoder, queue, confidence update, SupCon with max-subtraction and 1e-12, weighted NLL."""
    feat = model[:-1](x)
    output = model[-1](feat)
    q = F.normalize(head(feat), dim=1)
    predicted = torch.softmax(output, dim=1) * S
    _, pseudo_b = torch.max(predicted, dim=1)
    score_prot = torch.softmax(torch.mm(q, prototypes.clone().detach().t()), dim=1)
    prototypes = prototypes.clone()
    with torch.no_grad():
        for f, label in zip(q, pseudo_b):
            prototypes[label] = prototypes[label] * proto_m + (1 - proto_m) * f
    prototypes = F.normalize(prototypes, p=2, dim=1).detach()
    with torch.no_grad():
        params_q = list(model[:-1].parameters()) + list(head.parameters())
        for pq, pk in zip(params_q, key.parameters()):
            pk.data = pk.data * moco_m + pq.data * (1.0 - moco_m)
        k = F.normalize(key(x_key), dim=1)
    features = torch.cat((q, k, queue.clone().detach()), dim=0)
    pseudo = torch.cat((pseudo_b, pseudo_b, queue_labels.clone()), dim=0)
    b = x.shape[0]
    queue, queue_labels = queue.clone(), queue_labels.clone()
    queue[ptr:ptr + b], queue_labels[ptr:ptr + b] = k, pseudo_b
    confidence = confidence.clone()
    if epoch >= prot_start:
        _, prot_pred = (score_prot * S).max(dim=1)
        confidence[idx] = m * confidence[idx] + (1 - m) * F.one_hot(prot_pred, S.shape[1]).to(confidence.dtype)
        mask = torch.eq(pseudo[:b].view(-1, 1), pseudo.view(1, -1)).to(q.dtype)
        adc = torch.matmul(features[:b], features.T) / t
        logits = adc - adc.max(dim=1, keepdim=True).values.detach()
        logits_mask = torch.scatter(torch.ones_like(mask), 1, torch.arange(b).view(-1, 1), 0)
        mask = mask * logits_mask
        exp_logits = torch.exp(logits) * logits_mask
        log_prob = logits - torch.log(exp_logits.sum(1, keepdim=True) + 1e-12)
        contrast = (-(mask * log_prob).sum(1) / mask.sum(1)).mean()
    else:
        l_pos = torch.einsum("nc,nc->n", [q, k]).unsqueeze(-1)
        l_neg = torch.einsum("nc,kc->nk", [q, features[2 * b:]])
        contrast = F.cross_entropy(torch.cat([l_pos, l_neg], dim=1) / t, torch.zeros(b, dtype=torch.long))
    cls = -(F.log_softmax(output, dim=1) * confidence[idx]).sum(dim=1).mean()
    return cls + loss_weight * contrast, confidence, prototypes, queue, queue_labels


@pytest.mark.parametrize("epoch", [0, 3])
def test_one_pico_step_equals_the_authors_step(epoch):
    torch.manual_seed(0)
    n, d, q_classes, b = 12, 5, 3, 4
    X = _rand(n, d, seed=5).float()
    S = (torch.rand(n, q_classes) < 0.5).float()
    S[torch.arange(n), torch.randint(0, q_classes, (n,))] = 1.0
    model = build_network(d, q_classes, (6,))
    W = S / S.sum(dim=1, keepdim=True)
    gen = torch.Generator().manual_seed(1)
    state = State(model, X, S, W.clone(), torch.arange(n), b, epoch=epoch, n_epochs=10, generator=gen)
    method = _pico.Pico(feat_dim=4, queue_size=8, moco_m=0.9, proto_m=0.8, temperature=0.3, loss_weight=0.5,
                        prot_start=1, conf_ema=(0.95, 0.8), noise_scale=0.1)
    method.setup(state)
    method.prototypes = F.normalize(torch.rand(q_classes, 4), dim=1)       # as after some batches
    method.start_epoch(state)
    before = dict(head=copy.deepcopy(method.head), key=copy.deepcopy(method.key), queue=method.queue.clone(),
                  labels=method.queue_labels.clone(), protos=method.prototypes.clone())
    idx = torch.tensor([3, 7, 0, 9])
    x_key = X[idx] + 0.1 * torch.randn(X[idx].shape, generator=torch.Generator().manual_seed(1))
    expected = _authors_step(copy.deepcopy(model), before["head"], before["key"], before["queue"], before["labels"],
                             0, before["protos"], W.clone(), idx, X[idx], x_key, S[idx], epoch, prot_start=1,
                             proto_m=0.8, moco_m=0.9, m=_pico.conf_ema_at(epoch, 10, 0.95, 0.8), loss_weight=0.5,
                             t=0.3)
    loss, _ = method.batch_loss(state, idx, X[idx], S[idx])
    assert float(loss.detach()) == pytest.approx(float(expected[0]), rel=1e-5)
    np.testing.assert_allclose(state.W.numpy(), expected[1].numpy(), rtol=1e-6)
    np.testing.assert_allclose(method.prototypes.numpy(), expected[2].numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(method.queue.numpy(), expected[3].numpy(), rtol=1e-5, atol=1e-7)
    np.testing.assert_array_equal(method.queue_labels.numpy()[:4], expected[4].numpy()[:4])
    if epoch == 0:      # before prot_start the confidences stay uniform on the candidates
        np.testing.assert_array_equal(state.W.numpy(), W.numpy())


def test_pico_queue_wraps_around():
    method = _pico.Pico(feat_dim=2, queue_size=5, moco_m=0.9, proto_m=0.9, temperature=0.1, loss_weight=0.5,
                        prot_start=0, conf_ema=(0.9, 0.9), noise_scale=0.1)
    method.queue, method.queue_labels, method.ptr = torch.zeros(5, 2), torch.full((5,), -1), 3
    method._enqueue(torch.ones(4, 2), torch.tensor([1, 2, 3, 4]))
    np.testing.assert_array_equal(method.queue_labels.numpy(), [3, 4, -1, 1, 2])
    assert method.ptr == 2


# ----------------------------------------------------------------------------- VALEN's terms
def test_dirichlet_kl_is_the_closed_form_kl():
    alpha = torch.rand(4, 3, dtype=torch.float64) * 5 + 0.1
    prior = torch.ones(1, 3, dtype=torch.float64)
    expected = torch.distributions.kl_divergence(torch.distributions.Dirichlet(alpha),
                                                 torch.distributions.Dirichlet(prior.expand(4, 3))).mean()
    assert float(_valen.dirichlet_kl(alpha, prior)) == pytest.approx(float(expected), rel=1e-10)


def test_batch_adjacency_is_the_block_of_the_row_normalised_knn_graph():
    rng = np.random.RandomState(0)
    feats = rng.randn(15, 3)
    nbrs = _valen.knn_indices(feats, 3)
    dist = ((feats[:, None] - feats[None]) ** 2).sum(-1)
    np.fill_diagonal(dist, np.inf)
    np.testing.assert_array_equal(np.sort(nbrs, axis=1), np.sort(np.argsort(dist, axis=1)[:, :3], axis=1))
    A = np.eye(15)                                   # the authors': D^-1 (K + I), dense
    A[np.repeat(np.arange(15), 3), nbrs.ravel()] = 1.0
    A = A / A.sum(axis=1, keepdims=True)
    idx = np.array([4, 0, 11, 7, 3, 14])
    block = _valen.batch_adjacency(torch.as_tensor(nbrs), torch.as_tensor(idx), 15)
    np.testing.assert_allclose(block.numpy(), A[idx][:, idx])


def test_valen_reconstruction_literal():
    d = torch.distributions.Dirichlet(torch.ones(3, 4)).sample()
    x, x_hat = _rand(3, 2, seed=1).float(), _rand(3, 2, seed=2).float()
    S = torch.tensor([[1, 0, 1, 0], [0, 1, 0, 0], [1, 1, 1, 1]], dtype=torch.float32)
    A = torch.rand(3, 3)
    sig = 1 / (1 + torch.exp(-(d @ d.T)))
    A_hat = torch.exp(sig) / torch.exp(sig).sum(dim=1, keepdim=True)
    bce = -(S * torch.log(torch.sigmoid(d)) + (1 - S) * torch.log(1 - torch.sigmoid(d))).mean()
    expected = 0.01 * ((x_hat - x) ** 2).mean() + 0.01 * bce + ((A_hat - A) ** 2).mean()
    assert float(_valen.valen_reconstruction(d, x_hat, x, S, A)) == pytest.approx(float(expected), rel=1e-5)


# ----------------------------------------------------------------------------- in the loop
def _bags(n=240, q=4, seed=0):
    rng = np.random.RandomState(seed)
    y = rng.randint(0, q, n)
    X = rng.randn(n, 6) + 2.5 * np.eye(q, 6)[y]
    return X, UniformBags(r=1).generate(y, random_state=seed), y


def test_valen_is_proden_while_it_warms_up():
    X, S, _ = _bags()
    kw = dict(hidden_layer_sizes=(16,), n_epochs=6, batch_size=32, device="cpu", random_state=3)
    proden = ProdenLearner(**kw).fit(X, S)
    valen = ValenLearner(warm_up=6, **kw).fit(X, S)
    np.testing.assert_allclose(valen.decision_function(X), proden.decision_function(X), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(valen.confidences_, proden.confidences_, rtol=1e-6, atol=1e-8)


def test_valen_after_warm_up_differs_from_proden_and_keeps_confidences_on_the_candidates():
    X, S, _ = _bags()
    kw = dict(hidden_layer_sizes=(16,), n_epochs=6, batch_size=32, device="cpu", random_state=3)
    valen = ValenLearner(warm_up=2, **kw).fit(X, S)
    assert not np.allclose(valen.decision_function(X), ProdenLearner(**kw).fit(X, S).decision_function(X))
    assert np.all(valen.confidences_[~S] == 0)
    np.testing.assert_allclose(valen.confidences_.sum(axis=1), 1.0)


@pytest.mark.parametrize("cls", [PicoLearner, ValenLearner])
def test_learns_where_the_answer_is_known(cls):
    X, S, y = _bags(n=600)
    est = cls(hidden_layer_sizes=(32,), n_epochs=20, batch_size=32, learning_rate=1e-2, device="cpu",
              random_state=0).fit(X[:400], S[:400])
    # chance 0.25; logistic regression on the TRUE labels scores 0.865 on these rows
    assert np.mean(est.predict(X[400:]) == y[400:]) >= 0.8
    assert np.mean(np.argmax(est.confidences_, axis=1) == y[:400]) >= 0.9


def test_pico_prototypes_disambiguate_the_training_rows():
    X, S, y = _bags(n=400)
    est = PicoLearner(hidden_layer_sizes=(32,), n_epochs=15, batch_size=32, learning_rate=1e-2, queue_size=256,
                      device="cpu", random_state=0).fit(X, S)
    # confidences are moving averages of one-hot prototype votes: most rows end near one-hot on the truth
    top = est.confidences_.max(axis=1)
    assert np.median(top) > 0.8
    assert np.mean(np.argmax(est.confidences_, axis=1) == y) >= 0.9


@pytest.mark.parametrize("bad", [(0.9,), (1.2, 0.8), "x"])
def test_pico_bad_conf_ema_is_a_one_line_parameter_error(bad):
    from plcore.exceptions import InvalidParameterError

    X, S, _ = _bags(n=40)
    with pytest.raises(InvalidParameterError, match="conf_ema"):
        PicoLearner(conf_ema=bad, n_epochs=1, device="cpu").fit(X, S)


def test_valen_with_one_training_row_is_one_plcore_line():
    """The kNN graph needs two rows: one plcore line, not NearestNeighbors' ``n_neighbors`` message."""
    from plcore.exceptions import DataValidationError

    X, S, _ = _bags(n=40)
    with pytest.raises(DataValidationError, match=r"^VALEN needs at least 2 training rows for its kNN graph of the rows, "
                                                  r"got 1; give it more rows, or set warm_up >= n_epochs"):
        ValenLearner(warm_up=1, n_epochs=3, device="cpu").fit(X[:1], S[:1])
    with pytest.raises(DataValidationError, match=r"got 1 \(early stopping holds out validation_fraction"):
        ValenLearner(warm_up=1, n_epochs=3, early_stopping=True, device="cpu").fit(X[:2], S[:2])
