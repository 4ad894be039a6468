"""IDGP and CRDPLL: each loss and confidence update against its literal formula on a fixed
batch, one step of each against a line-by-line restatement of the reference step, the
warm-up, the ramps, and each learner on a separable problem with candidate sets."""

import math

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.preprocessing import StandardScaler

import torch  # noqa: E402  (installed by the Makefile; a missing torch must fail, not skip)
import torch.nn.functional as F  # noqa: E402

import plcore_deep
from plcore.datasets.bags import UniformBags
from plcore.exceptions import InvalidParameterError
from plcore_deep import _confidence, _instance_dependent as _idgp  # noqa: E402
from plcore_deep._loop import LoopConfig, State  # noqa: E402
from plcore_deep._methods import ramp  # noqa: E402
from plcore_deep._networks import build_network  # noqa: E402
from plcore_deep.plugin import LEARNER_OPTIONS

# three rows, four classes: row 0 {0, 1}, row 1 {2}, row 2 {0, 1, 3}
LOGITS = [[2.0, 0.5, -1.0, 0.3], [0.3, -0.2, 1.1, -0.7], [0.9, -1.4, 0.2, 0.0]]
Z = [[0.4, -1.2, 0.7, 2.1], [-0.3, 0.8, 1.5, -2.0], [1.1, 0.2, -0.6, 0.9]]      # g's logits
S = [[1, 1, 0, 0], [0, 0, 1, 0], [1, 1, 0, 1]]
D = [[0.3, 0.7, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.5, 0.2, 0.0, 0.3]]         # d: pseudo-labels 1, 2, 0
B = [[0.6, 0.9, 0.0, 0.0], [0.0, 0.0, 0.8, 0.0], [0.7, 0.4, 0.0, 0.5]]
Q = 4


def _t(a):
    return torch.tensor(a, dtype=torch.float64)


def _softmax(row):
    e = [math.exp(v) for v in row]
    return [v / sum(e) for v in e]


def _sig(v):
    return 1.0 / (1.0 + math.exp(-v))


def _xlogy(a, b):
    return 0.0 if a == 0 else a * math.log(b)


# ----------------------------------------------------------------------------- IDGP's terms
def test_bernoulli_nll_literal():
    expected = sum(-(B[i][j] * math.log(_sig(Z[i][j])) + (1 - B[i][j]) * math.log(1 - _sig(Z[i][j])))
                   for i in range(3) for j in range(Q)) / 3
    assert float(_idgp.bernoulli_nll(_t(Z), _t(B))) == pytest.approx(expected, rel=1e-12)


def test_idgp_f_targets_are_the_authors_weights():
    """The authors' form: w~ = g, 1 - g at the pseudo-label; weight_j = (1 - w~_j)/w~_j x
    prod_{k in S} w~_k on the candidates, renormalised."""
    expected = []
    for i in range(3):
        pseudo = max(range(Q), key=lambda j: D[i][j] * S[i][j])
        w = [(1 - _sig(Z[i][j])) if j == pseudo else _sig(Z[i][j]) for j in range(Q)]
        prod = math.prod(w[j] for j in range(Q) if S[i][j])
        raw = [(1 - w[j]) / w[j] * prod if S[i][j] else 0.0 for j in range(Q)]
        expected.append([v / sum(raw) for v in raw])
    out = _idgp.idgp_f_targets(_t(Z), _t(D), _t(S)).numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-15)
    assert out[1].tolist() == [0.0, 0.0, 1.0, 0.0]          # a single candidate takes it all


def test_idgp_f_targets_survive_many_small_flipping_probabilities():
    """The authors' product underflows for many candidates with small g (0/0 there; PLENCH's
    eps gives all-zero weights): the softmax form keeps a distribution."""
    z = torch.full((1, 60), -30.0, dtype=torch.float32)
    s = torch.ones((1, 60))
    out = _idgp.idgp_f_targets(z, s / 60, s)
    assert torch.isfinite(out).all() and float(out.sum()) == pytest.approx(1.0)


def test_idgp_g_loss_literal():
    expected = 0.0
    for i in range(3):
        p = _softmax(LOGITS[i])
        u = [p[j] * S[i][j] for j in range(Q)]
        u = [v / sum(u) for v in u]
        g = [_sig(v) for v in Z[i]]
        expected += -sum(u[j] * math.log(1 - g[j]) for j in range(Q))
        expected += -sum(S[i][j] * math.log(g[j]) + (1 - S[i][j]) * math.log(1 - g[j]) for j in range(Q))
    U = _idgp.candidate_posterior(_t(LOGITS), _t(S))
    assert float(_idgp.idgp_g_loss(_t(Z), U, _t(S))) == pytest.approx(expected / 3, rel=1e-12)


def test_idgp_consistency_literal():
    kl_f = sum(_xlogy(D[i][j], D[i][j]) - D[i][j] * math.log(_softmax(LOGITS[i])[j])
               for i in range(3) for j in range(Q)) / 3
    kl_g = sum(_xlogy(B[i][j], B[i][j]) - B[i][j] * math.log(_sig(Z[i][j])) for i in range(3) for j in range(Q)) / 3
    out_f, out_g = _idgp.idgp_consistency(_t(LOGITS), _t(D), _t(Z), _t(B))
    assert float(out_f) == pytest.approx(kl_f, rel=1e-12)
    assert float(out_g) == pytest.approx(kl_g, rel=1e-12)


def test_ramp():
    assert ramp(0, 100, 0.2) == 0.0
    assert ramp(10, 100, 0.2) == pytest.approx(0.5)
    assert ramp(20, 100, 0.2) == 1.0 and ramp(90, 100, 0.2) == 1.0
    assert ramp(25, 100, 0.5) == pytest.approx(0.5)


def _state(epoch, n=10, d=5, q=4, b=4, n_epochs=10):
    torch.manual_seed(0)
    X = torch.randn(n, d)
    Sm = (torch.rand(n, q) < 0.5).float()
    Sm[torch.arange(n), torch.randint(0, q, (n,))] = 1.0
    model = build_network(d, q, (6,))
    W = torch.softmax(torch.randn(n, q), dim=1) * Sm
    W = W / W.sum(dim=1, keepdim=True)
    config = LoopConfig(hidden_layer_sizes=(6,), n_epochs=n_epochs, batch_size=b)
    return State(model, X, Sm, W, torch.arange(n), b, epoch=epoch, n_epochs=n_epochs,
                 generator=torch.Generator().manual_seed(1), config=config)


def _plench_idgp_step(f_logits, g_logits, d, b, S, lam, warm):
    """PLENCH's IDGP losses, restated line by line (eps as there)."""
    eps = 1e-12
    f_out, g_out = F.softmax(f_logits, dim=1), torch.sigmoid(g_logits)
    L_f = -(d * torch.log(f_out + eps)).sum() / len(d)
    L_g = -(b * torch.log(g_out + eps) + (1 - b) * torch.log(1.0000001 - g_out)).sum() / len(d)
    if warm:
        return L_f + L_g
    pseudo = F.one_hot((d * S).argmax(dim=1), S.shape[1]).float()
    noisy = pseudo * (1 - g_out) + (1 - pseudo) * g_out
    w = noisy.detach() * S
    w[w == 0] = 1.0
    w = (1 - w) / (w + eps) * w.prod(dim=1, keepdim=True) * S
    w = w / (w.sum(dim=1, keepdim=True) + eps)
    L_f_g = -(w * torch.log(f_out + eps)).sum() / len(d)
    u = f_out.detach() * S
    u = u / (u.sum(dim=1, keepdim=True) + eps)
    L_g_f = (-(u * torch.log(1.0000001 - g_out)).sum() / len(d)
             - (S * torch.log(g_out + eps) + (1 - S) * torch.log(1.0000001 - g_out)).sum() / len(d))
    kl_f = F.kl_div(torch.log_softmax(f_logits, dim=-1), d, reduction="batchmean")
    kl_g = F.kl_div(F.logsigmoid(g_logits), b, reduction="batchmean")
    return (L_f + L_f_g + lam * kl_f) + (L_g + L_g_f + lam * kl_g)


@pytest.mark.parametrize("epoch", [0, 3])
def test_one_idgp_step_equals_plenchs_step(epoch):
    state = _state(epoch)
    method = _idgp.Idgp(warm_up=2)
    extra = method.setup(state)
    assert extra == [method.g]
    assert method.total_steps == 10 * 3                      # 10 epochs of ceil(10 / 4) batches
    method.B = torch.rand_like(state.S) * state.S             # as after some batches
    method.step = 4
    idx = torch.tensor([3, 7, 0, 9])
    xb, sb = state.X[idx], state.S[idx]
    d_before, b_before = state.W[idx].clone(), method.B[idx].clone()
    with torch.no_grad():
        expected = _plench_idgp_step(state.model(xb), method.g(xb), d_before, b_before, sb,
                                     lam=min(4 / (0.2 * 30), 1), warm=epoch < 2)
    loss, logits = method.batch_loss(state, idx, xb, sb)
    assert float(loss.detach()) == pytest.approx(float(expected), rel=1e-5)
    method.after_step(state, idx, xb, sb, logits)
    np.testing.assert_allclose(state.W[idx].numpy(), _idgp.candidate_posterior(logits.detach(), sb).numpy())
    np.testing.assert_allclose(method.B[idx].numpy(), (torch.sigmoid(method.g(xb)) * sb).detach().numpy(),
                               rtol=1e-6)
    assert method.step == 5


def test_the_classifier_gets_no_gradient_from_gs_terms_and_g_none_from_fs():
    state = _state(epoch=5)
    method = _idgp.Idgp(warm_up=0)
    method.setup(state)
    method.step = 100
    idx = torch.arange(4)
    xb, sb = state.X[idx], state.S[idx]
    logits, z = state.model(xb), method.g(xb)
    D, Bb = state.W[idx], method.B[idx]
    kl_f, kl_g = _idgp.idgp_consistency(logits, D, z, Bb)
    L_F = _idgp.weighted_nll(logits, D) + _idgp.weighted_nll(logits, _idgp.idgp_f_targets(z.detach(), D, sb)) + kl_f
    L_G = (_idgp.bernoulli_nll(z, Bb) + _idgp.idgp_g_loss(z, _idgp.candidate_posterior(logits.detach(), sb), sb)
           + kl_g)
    grads_f = torch.autograd.grad(L_F, list(state.model.parameters()))
    grads_g = torch.autograd.grad(L_G, list(method.g.parameters()))
    total, _ = method.batch_loss(state, idx, xb, sb)
    both = torch.autograd.grad(total, list(state.model.parameters()) + list(method.g.parameters()))
    n_f = len(grads_f)
    for a, e in zip(both[:n_f] + both[n_f:], grads_f + grads_g):
        np.testing.assert_allclose(a.numpy(), e.numpy(), rtol=1e-5, atol=1e-7)


# ----------------------------------------------------------------------------- CRDPLL's terms
VIEWS = [LOGITS, [[1.0, 0.2, 0.1, -0.4], [0.0, 0.6, 0.9, -0.1], [0.3, -0.5, 0.8, 0.4]],
         [[-0.2, 1.3, 0.0, 0.5], [1.2, -0.8, 0.4, 0.1], [0.6, 0.1, -1.0, 1.5]]]
W_CONF = [[0.4, 0.6, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.2, 0.5, 0.0, 0.3]]


@pytest.mark.parametrize("lam", [0.0, 0.7])
def test_crdpll_loss_literal(lam):
    supervised = sum(-math.log(1 - _softmax(VIEWS[0][i])[j]) for i in range(3) for j in range(Q) if not S[i][j]) / 3
    consistency = sum(_xlogy(W_CONF[i][j], W_CONF[i][j]) - W_CONF[i][j] * math.log(_softmax(v[i])[j])
                      for v in VIEWS for i in range(3) for j in range(Q)) / 3
    out = _confidence.crdpll_loss([_t(v) for v in VIEWS], _t(S), _t(W_CONF), lam)
    assert float(out) == pytest.approx(supervised + lam * consistency, rel=1e-12)


def test_crdpll_targets_are_the_geometric_mean_on_the_candidates():
    expected = []
    for i in range(3):
        geo = [math.prod(_softmax(v[i])[j] for v in VIEWS) ** (1 / 3) * S[i][j] for j in range(Q)]
        expected.append([g / sum(geo) for g in geo])
    out = _confidence.crdpll_targets([_t(v) for v in VIEWS], _t(S)).numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-15)
    # PLENCH's two-view form: sqrt(p(x) p(x')) on the candidates, renormalised
    two = _confidence.crdpll_targets([_t(VIEWS[0]), _t(VIEWS[1])], _t(S)).numpy()
    raw = np.sqrt(np.array([_softmax(r) for r in VIEWS[0]]) * np.array([_softmax(r) for r in VIEWS[1]])) * S
    np.testing.assert_allclose(two, raw / raw.sum(axis=1, keepdims=True), rtol=1e-12)


def test_crdpll_supervised_term_is_finite_where_p_rounds_to_one():
    logits = torch.tensor([[0.0, 60.0, 0.0]], dtype=torch.float32, requires_grad=True)
    loss = _confidence.crdpll_loss([logits], torch.tensor([[1.0, 0.0, 0.0]]), torch.tensor([[1.0, 0.0, 0.0]]), 0.0)
    assert float(loss.detach()) == pytest.approx(60.0 - math.log(2), rel=1e-5)      # -log(1 - p_1), exactly
    loss.backward()
    assert torch.isfinite(logits.grad).all()


def test_one_crdpll_step_equals_plenchs_step_with_identical_views():
    """PLENCH's update on tabular rows (x and its 'strong' view the same row), restated: lam
    ramps over half the steps; then the confidences from the outputs (here those of the step,
    as the authors' code; PLENCH recomputes them after the step)."""
    state = _state(epoch=0)
    method = _confidence.Crdpll(lam=1.0, n_views=2, augmentation="identity", noise_scale=0.1)
    assert method.setup(state) == []
    method.step = 6
    idx = torch.tensor([2, 5, 8, 1])
    xb, sb = state.X[idx], state.S[idx]
    w = state.W[idx].clone()
    with torch.no_grad():
        out = state.model(xb)
        lam = min(6 / (30 * 0.5), 1)
        kl = F.kl_div(F.log_softmax(out, dim=1), w, reduction="batchmean")
        sup = -torch.mean(torch.sum(torch.log(1.0000001 - F.softmax(out, dim=1)) * (1 - sb), dim=1))
        expected = lam * (kl + kl) + sup
        p = F.softmax(out, dim=1)
        conf = p ** 0.5 * p ** 0.5 * sb
        conf = conf / conf.sum(dim=1, keepdim=True)
    loss, logits = method.batch_loss(state, idx, xb, sb)
    assert float(loss.detach()) == pytest.approx(float(expected), rel=1e-5)
    method.after_step(state, idx, xb, sb, logits)
    np.testing.assert_allclose(state.W[idx].numpy(), conf.numpy(), rtol=1e-5, atol=1e-7)
    assert method.step == 7


def test_crdpll_views_are_independent_draws():
    state = _state(epoch=0)
    method = _confidence.Crdpll(lam=1.0, n_views=3, augmentation="gaussian", noise_scale=0.5)
    method.setup(state)
    method.batch_loss(state, torch.arange(4), state.X[:4], state.S[:4])
    a, b, c = method._views
    assert not torch.allclose(a, b) and not torch.allclose(b, c)


def test_crdpll_rejects_an_unknown_augmentation():
    X, S_, _ = _bags(n=40)
    with pytest.raises(InvalidParameterError):
        plcore_deep.CrdpllLearner(augmentation="mixup", n_epochs=1, device="cpu").fit(X, S_)


# ----------------------------------------------------------------------------- in the loop
def _bags(n=240, q=4, seed=0):
    rng = np.random.RandomState(seed)
    y = rng.randint(0, q, n)
    X = rng.randn(n, 6) + 2.5 * np.eye(q, 6)[y]
    return X, UniformBags(r=1).generate(y, random_state=seed), y


def test_idgp_classifier_is_proden_while_it_warms_up():
    """g is trained beside f by the same optimiser; during the warm-up f's steps are PRODEN's."""
    X, S_, _ = _bags()
    kw = dict(hidden_layer_sizes=(16,), n_epochs=4, batch_size=32, device="cpu", random_state=3)
    proden = plcore_deep.ProdenLearner(**kw).fit(X, S_)
    idgp = plcore_deep.IdgpLearner(warm_up=4, **kw).fit(X, S_)
    np.testing.assert_allclose(idgp.decision_function(X), proden.decision_function(X), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(idgp.confidences_, proden.confidences_, rtol=1e-6, atol=1e-8)
    after = plcore_deep.IdgpLearner(warm_up=1, **kw).fit(X, S_)
    assert not np.allclose(after.decision_function(X), proden.decision_function(X))
    assert np.all(after.confidences_[~S_] == 0)


@pytest.fixture(scope="module")
def blobs_r2():
    X, y = make_blobs(n_samples=600, centers=5, n_features=8, cluster_std=1.0, random_state=0)
    S_ = UniformBags(r=2).generate(y, random_state=0)
    scaler = StandardScaler().fit(X[:400])
    return scaler.transform(X[:400]), S_[:400], scaler.transform(X[400:]), y[400:]


def test_the_learners_are_registered_in_their_families():
    assert LEARNER_OPTIONS["idgp"] == "plcore_deep.instance_dependent:IdgpLearner"
    assert LEARNER_OPTIONS["crdpll"] == "plcore_deep.confidence:CrdpllLearner"


@pytest.mark.parametrize("name", ["idgp", "crdpll"])
def test_learns_five_blobs_with_two_false_positives_per_bag(name, blobs_r2):
    X_tr, S_tr, X_te, y_te = blobs_r2
    cls = getattr(plcore_deep, LEARNER_OPTIONS[name].split(":")[1])
    est = cls(hidden_layer_sizes=(32,), n_epochs=20, batch_size=64, learning_rate=3e-3, device="cpu",
              random_state=0).fit(X_tr, S_tr)
    acc = float(np.mean(est.predict(X_te) == y_te))
    assert acc >= 0.9, f"{name}: held-out accuracy {acc:.3f} (chance 0.2)"
    assert np.all(np.isfinite(est.loss_curve_))
    np.testing.assert_allclose(est.confidences_.sum(axis=1), 1.0)
    assert np.all(est.confidences_[~S_tr] == 0)
