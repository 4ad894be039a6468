"""The complementary-label losses against their literal per-pair formulas on a fixed batch, the
batch without a pair, the prior, GA's step, and each learner on a separable problem."""

import math

import numpy as np
import pytest
from sklearn.datasets import make_blobs
from sklearn.preprocessing import StandardScaler

import torch  # noqa: E402  (installed by the Makefile; a missing torch must fail, not skip)

import plcore_deep
from plcore.datasets.bags import UniformBags
from plcore_deep import _complementary as comp  # noqa: E402
from plcore_deep.plugin import LEARNER_OPTIONS

# four rows, four classes; the pairs (row, complementary label) are the non-candidates:
# row 0 {0, 1} -> (0, 2), (0, 3); row 1 {2} -> (1, 0), (1, 1), (1, 3); row 2 is every label: no
# pair; row 3 {1, 3} -> (3, 0), (3, 2). Seven pairs.
LOGITS = [[2.0, 0.5, -1.0, 0.3], [0.3, -0.2, 1.1, -0.7], [0.9, -1.4, 0.2, 0.0], [-0.5, 1.5, -2.0, 0.8]]
S = [[1, 1, 0, 0], [0, 0, 1, 0], [1, 1, 1, 1], [0, 1, 0, 1]]
Q = 4
PAIRS = [(i, k) for i in range(4) for k in range(Q) if not S[i][k]]
PRIOR = [0.1, 0.2, 0.3, 0.4]

COMPLEMENTARY = {"pc", "forward", "nn", "ga", "scl_exp", "scl_nl", "l_w", "op_w"}


def _t(a):
    return torch.tensor(a, dtype=torch.float64)


def _softmax(row):
    e = [math.exp(v) for v in row]
    return [v / sum(e) for v in e]


def _pair_mean(per_pair):
    assert len(PAIRS) == 7
    return sum(per_pair(LOGITS[i], k) for i, k in PAIRS) / len(PAIRS)


def test_pc_loss_literal():
    def pc(f, k):  # sum over y != k of the sigmoid loss l(f_y - f_k) = 1 / (1 + e^(f_y - f_k))
        return sum(1.0 / (1.0 + math.exp(f[y] - f[k])) for y in range(Q) if y != k)

    expected = (Q - 1) * _pair_mean(pc) - Q * (Q - 1) / 2 + (Q - 1)
    assert float(comp.pc_loss(_t(LOGITS), _t(S))) == pytest.approx(expected, rel=1e-12)


def test_forward_loss_literal():
    def fwd(f, k):  # -log of (T^T p)_k with T uniform off the diagonal
        p = _softmax(f)
        return -math.log(sum(p[j] / (Q - 1) for j in range(Q) if j != k))

    assert float(comp.forward_loss(_t(LOGITS), _t(S))) == pytest.approx(_pair_mean(fwd), rel=1e-12)


def test_scl_losses_literal():
    expected_exp = _pair_mean(lambda f, k: math.exp(_softmax(f)[k]))
    expected_nl = _pair_mean(lambda f, k: -math.log(1 - _softmax(f)[k]))
    assert float(comp.scl_exp_loss(_t(LOGITS), _t(S))) == pytest.approx(expected_exp, rel=1e-12)
    assert float(comp.scl_nl_loss(_t(LOGITS), _t(S))) == pytest.approx(expected_nl, rel=1e-12)


def test_lw_loss_literal():
    def lw(f, k):
        u = [1 - v for v in _softmax(f)]
        return -(1 + u[k] / (Q - 1)) * math.log(_softmax(u)[k])

    assert float(comp.lw_loss(_t(LOGITS), _t(S))) == pytest.approx(_pair_mean(lw), rel=1e-12)


def test_opw_loss_literal():
    def opw(f, k):
        p, c = _softmax(f), _softmax([-v for v in f])
        w = p[k] * _softmax([1 / (v + 1e-18) for v in c])[k] + 1e-6
        return -w * math.log(c[k])

    assert float(comp.opw_loss(_t(LOGITS), _t(S))) == pytest.approx(_pair_mean(opw), rel=1e-12)


def _literal_partial_risks(rows):
    """R_j = sum_k pi_k E_k[-log p_j] - (q-1) pi_j E_j[-log p_j], E_k over the pairs of label k."""
    pairs = [(i, k) for i, k in PAIRS if i in rows]

    def mean_neglog(k, j):
        xs = [-math.log(_softmax(LOGITS[i])[j]) for i, kk in pairs if kk == k]
        return sum(xs) / len(xs) if xs else None

    risks = []
    for j in range(Q):
        first = sum(PRIOR[k] * mean_neglog(k, j) for k in range(Q) if mean_neglog(k, j) is not None)
        own = mean_neglog(j, j)
        risks.append(first - (Q - 1) * PRIOR[j] * (own if own is not None else 0.0))
    return risks


@pytest.mark.parametrize("rows", [[0, 1, 2, 3], [0, 2]])   # [0, 2]: labels 0 and 1 have no pair
def test_partial_risks_literal(rows):
    got = comp.partial_risks(_t(LOGITS)[rows], _t(S)[rows], _t(PRIOR)).numpy()
    np.testing.assert_allclose(got, _literal_partial_risks(rows), rtol=1e-12)


def test_nn_loss_is_the_sum_of_the_partial_risks_clipped_at_minus_beta():
    risks = _literal_partial_risks([0, 1, 2, 3])
    assert min(risks) < 0 < max(risks)            # the batch has both signs: the clipping is exercised
    for beta in (0.0, 0.5):
        expected = sum(max(r, -beta) for r in risks)
        assert float(comp.nn_loss(_t(LOGITS), _t(S), _t(PRIOR), beta)) == pytest.approx(expected, rel=1e-12)


def _grad(fn, logits):
    f = _t(logits).requires_grad_(True)
    value = fn(f)
    value.backward()
    return float(value.detach()), f.grad.numpy()


def test_ga_steps_up_the_negative_partial_risks_and_reports_the_risk():
    risks = _literal_partial_risks([0, 1, 2, 3])
    assert min(risks) < 0
    value, grad = _grad(lambda f: comp.ga_objective(f, _t(S), _t(PRIOR)), LOGITS)
    assert value == pytest.approx(sum(risks), rel=1e-12)       # the loss curve records the risk
    # the gradient of the step: -sum_j min(R_j, 0), i.e. ascent on the negative partial risks
    _, ascent = _grad(lambda f: -torch.clamp(comp.partial_risks(f, _t(S), _t(PRIOR)), max=0).sum(), LOGITS)
    np.testing.assert_allclose(grad, ascent, rtol=1e-12)
    _, descent = _grad(lambda f: comp.partial_risks(f, _t(S), _t(PRIOR)).sum(), LOGITS)
    assert not np.allclose(grad, descent)


def test_ga_descends_on_the_risk_when_no_partial_risk_is_negative():
    # uniform outputs and the batch's own prior (2, 1, 2, 2)/7: R_j = log 4 (1 - 3 pi_j) >= 0
    logits, prior = [[0.0] * Q] * 4, comp.complementary_prior(_t(S))
    R = comp.partial_risks(_t(logits), _t(S), prior)
    assert bool((R >= 0).all())
    value, grad = _grad(lambda f: comp.ga_objective(f, _t(S), prior), logits)
    _, descent = _grad(lambda f: comp.partial_risks(f, _t(S), prior).sum(), logits)
    assert value == pytest.approx(float(R.sum()), rel=1e-12)
    np.testing.assert_allclose(grad, descent, rtol=1e-12)


LOSSES = {"pc": comp.pc_loss, "forward": comp.forward_loss, "scl_exp": comp.scl_exp_loss,
          "scl_nl": comp.scl_nl_loss, "l_w": comp.lw_loss, "op_w": comp.opw_loss,
          "nn": lambda f, s: comp.nn_loss(f, s, _t(PRIOR), 0.0), "ga": lambda f, s: comp.ga_objective(f, s, _t(PRIOR))}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_a_batch_without_a_pair_has_loss_zero_and_no_gradient(name):
    full = [[1, 1, 1, 1]] * 2                    # every label a candidate: no complementary example
    value, grad = _grad(lambda f: LOSSES[name](f, _t(full)), LOGITS[:2])
    assert value == 0.0
    np.testing.assert_array_equal(grad, np.zeros((2, Q)))


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_rows_with_every_label_add_nothing(name):
    rows = [0, 1, 3]                              # the fixed batch without its full row 2
    with_full = float(LOSSES[name](_t(LOGITS), _t(S)))
    without = float(LOSSES[name](_t(LOGITS)[rows], _t(S)[rows]))
    assert with_full == pytest.approx(without, rel=1e-12)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_finite_loss_and_gradient_for_large_logits(name):
    big = (30 * np.asarray(LOGITS)).tolist()
    big[1][0] = 800.0                             # p_0 = 1 on the pair (1, 0): -log(1 - p_0) is about 800
    value, grad = _grad(lambda f: LOSSES[name](f.float(), _t(S).float()), big)
    assert math.isfinite(value) and np.all(np.isfinite(grad))


def test_scl_nl_and_forward_are_exact_where_p_rounds_to_one():
    logits, s = _t([[800.0, 0.0, 0.0]]), _t([[0.0, 1.0, 1.0]])   # one pair (0, 0), 1 - p_0 = 2 e^-800
    assert float(comp.scl_nl_loss(logits, s)) == pytest.approx(800 - math.log(2), rel=1e-12)
    assert float(comp.forward_loss(logits, s)) == pytest.approx(800 - math.log(2) + math.log(2), rel=1e-12)


def test_complementary_prior_is_the_share_of_each_label_among_the_non_candidates():
    # non-candidates: row 0 {2, 3}, row 1 {0, 1, 3}, row 3 {0, 2}: counts 2, 1, 2, 2 of 7
    np.testing.assert_allclose(comp.complementary_prior(_t(S)).numpy(), [2 / 7, 1 / 7, 2 / 7, 2 / 7], rtol=1e-12)
    np.testing.assert_array_equal(comp.complementary_prior(_t([[1, 1]])).numpy(), [0.0, 0.0])


@pytest.mark.parametrize("method", [comp.Nn(beta=0.0), comp.Ga()])
def test_the_prior_comes_from_the_training_rows_only(method):
    class _State:
        S = _t(S)
        train = torch.tensor([0, 1])              # rows 2 and 3 are held out (early stopping)

    assert method.setup(_State()) == []
    # non-candidates of rows 0 and 1: {2, 3} and {0, 1, 3}
    np.testing.assert_allclose(method.prior.numpy(), [1 / 5, 1 / 5, 1 / 5, 2 / 5], rtol=1e-12)


# --- each learner on a separable problem with candidate sets ----------------------------------
@pytest.fixture(scope="module")
def blobs_r2():
    X, y = make_blobs(n_samples=600, centers=5, n_features=8, cluster_std=1.0, random_state=0)
    S = UniformBags(r=2).generate(y, random_state=0)
    scaler = StandardScaler().fit(X[:400])
    return scaler.transform(X[:400]), S[:400], scaler.transform(X[400:]), y[400:]


def test_the_family_is_registered():
    assert COMPLEMENTARY <= set(LEARNER_OPTIONS)
    assert all(LEARNER_OPTIONS[name].startswith("plcore_deep.complementary:") for name in COMPLEMENTARY)


@pytest.mark.parametrize("name", sorted(COMPLEMENTARY))
def test_learns_five_blobs_with_two_false_positives_per_bag(name, blobs_r2):
    X_tr, S_tr, X_te, y_te = blobs_r2
    cls = getattr(plcore_deep, LEARNER_OPTIONS[name].split(":")[1])
    est = cls(hidden_layer_sizes=(32,), n_epochs=20, batch_size=64, learning_rate=3e-3, device="cpu",
              random_state=0).fit(X_tr, S_tr)
    acc = float(np.mean(est.predict(X_te) == y_te))
    assert acc >= 0.9, f"{name}: held-out accuracy {acc:.3f} (chance 0.2)"
    assert np.all(np.isfinite(est.loss_curve_))
