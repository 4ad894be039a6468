"""Every loss and confidence update against its literal formula on a hand-computed example."""

import math

import numpy as np
import pytest

import torch  # noqa: E402  (installed by the Makefile; a missing torch must fail, not skip)

from plcore_deep import _candidate_losses as candidate_losses  # noqa: E402
from plcore_deep import _confidence as confidence  # noqa: E402
from plcore_deep import _methods as base  # noqa: E402

# two rows, three classes: row 0 has candidates {0, 1}, row 1 has {2}
LOGITS = [[2.0, 0.5, -1.0], [0.3, -0.2, 1.1]]
S = [[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]]


def _t(a):
    return torch.tensor(a, dtype=torch.float64)


def _softmax(row):
    e = [math.exp(v) for v in row]
    return [v / sum(e) for v in e]


def test_uniform_confidence_and_uniform_over_classes():
    np.testing.assert_allclose(base.uniform_confidence(_t(S)).numpy(), [[0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])
    np.testing.assert_allclose(base.uniform_over_classes(_t(S)).numpy(), np.full((2, 3), 1 / 3))


def test_weighted_nll_is_the_weighted_cross_entropy():
    W = [[0.25, 0.75, 0.0], [0.0, 0.0, 1.0]]
    p = [_softmax(r) for r in LOGITS]
    expected = -(0.25 * math.log(p[0][0]) + 0.75 * math.log(p[0][1]) + math.log(p[1][2])) / 2
    assert float(base.weighted_nll(_t(LOGITS), _t(W))) == pytest.approx(expected, rel=1e-12)


def test_cc_loss_is_minus_log_of_the_candidates_softmax_mass():
    p = [_softmax(r) for r in LOGITS]
    expected = -(math.log(p[0][0] + p[0][1]) + math.log(p[1][2])) / 2
    assert float(candidate_losses.cc_loss(_t(LOGITS), _t(S))) == pytest.approx(expected, rel=1e-12)


def test_cc_loss_is_stable_for_large_logits():
    logits = _t([[800.0, -800.0, 0.0]])
    value = float(candidate_losses.cc_loss(logits, _t([[0.0, 1.0, 1.0]])))   # mass on {1, 2} is e^-800: loss 800
    assert value == pytest.approx(800.0, rel=1e-9)


def test_candidate_posterior_renormalises_the_softmax_on_the_candidates():
    p = _softmax(LOGITS[0])
    expected = [p[0] / (p[0] + p[1]), p[1] / (p[0] + p[1]), 0.0]
    got = base.candidate_posterior(_t(LOGITS), _t(S)).numpy()
    np.testing.assert_allclose(got[0], expected, rtol=1e-12)
    np.testing.assert_allclose(got[1], [0.0, 0.0, 1.0])


def test_lws_loss_literal():
    W = [[0.6, 0.4, 0.2], [0.1, 0.3, 1.0]]
    beta = 2.0

    def psi(z):  # the sigmoid loss 1 / (1 + e^z)
        return 1.0 / (1.0 + math.exp(z))

    total = 0.0
    for f, s, w in zip(LOGITS, S, W):
        total += sum(wj * psi(fj) for fj, sj, wj in zip(f, s, w) if sj)
        total += beta * sum(wj * psi(-fj) for fj, sj, wj in zip(f, s, w) if not sj)
    assert float(candidate_losses.lws_loss(_t(LOGITS), _t(S), _t(W), beta)) == pytest.approx(total / 2, rel=1e-12)


def test_lws_weights_renormalise_on_candidates_and_on_the_others():
    p = _softmax(LOGITS[0])
    got = candidate_losses.lws_weights(_t(LOGITS), _t(S)).numpy()
    np.testing.assert_allclose(got[0], [p[0] / (p[0] + p[1]), p[1] / (p[0] + p[1]), 1.0], rtol=1e-12)
    q = _softmax(LOGITS[1])
    np.testing.assert_allclose(got[1], [q[0] / (q[0] + q[1]), q[1] / (q[0] + q[1]), 1.0], rtol=1e-12)
    # a row whose candidates are every label has no non-candidate part
    full = candidate_losses.lws_weights(_t([[1.0, 2.0, 3.0]]), _t([[1.0, 1.0, 1.0]])).numpy()
    np.testing.assert_allclose(full, [_softmax([1.0, 2.0, 3.0])], rtol=1e-12)


def test_cavl_targets_pick_the_candidate_with_the_largest_class_activation_value():
    # cav = f |1 - f|: 2 * 1 = 2, 0.5 * 0.5 = 0.25, -1 * 2 = -2
    logits = _t([[2.0, 0.5, -1.0], [2.0, 0.5, -1.0], [-1.0, -3.0, 5.0]])
    S3 = _t([[1, 1, 1], [0, 1, 1], [1, 1, 0]])
    got = confidence.cavl_targets(logits, S3).numpy()
    # row 3: both candidates negative (-2 and -12): the larger candidate, never the non-candidate
    np.testing.assert_array_equal(got, [[1, 0, 0], [0, 1, 0], [1, 0, 0]])


def test_cavl_prefers_a_moderate_output_over_the_largest():
    # the CAV is not the argmax of the outputs: f=1 has cav 0 < f=0.5's 0.25 -- but f=3 has cav 6
    got = confidence.cavl_targets(_t([[1.0, 0.5, 3.0]]), _t([[1, 1, 0]])).numpy()
    np.testing.assert_array_equal(got, [[0, 1, 0]])


def test_purify_removes_candidates_below_theta_times_the_best():
    conf = _t([[0.6, 0.25, 0.15, 0.0], [0.5, 0.5, 0.0, 0.0]])
    S4 = _t([[1, 1, 1, 0], [1, 1, 0, 0]])
    np.testing.assert_array_equal(confidence.purify(conf, S4, 0.3).numpy(), [[1, 1, 0, 0], [1, 1, 0, 0]])
    np.testing.assert_array_equal(confidence.purify(conf, S4, 0.5).numpy(), [[1, 0, 0, 0], [1, 1, 0, 0]])
    # theta = 1 keeps only the maxima (ties stay); a set never becomes empty
    kept = confidence.purify(conf, S4, 1.0).numpy()
    np.testing.assert_array_equal(kept, [[1, 0, 0, 0], [1, 1, 0, 0]])
    assert (kept.sum(axis=1) >= 1).all()


# ----------------------------------------------------------------------------- losses of candidate sets
# four rows, four classes: |S| = 1, 2, 3 and 4 (every label: no complementary label)
LOGITS4 = [[1.5, -0.5, 0.2, 0.9], [0.3, 2.2, -1.0, 0.0], [-0.7, 0.4, 1.8, -0.2], [0.6, -1.2, 0.1, 2.5]]
S4 = [[0.0, 0.0, 0.0, 1.0], [1.0, 1.0, 0.0, 0.0], [0.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]]


def _gce(p, k, gce_q):
    return (1 - p[k] ** gce_q) / gce_q


def _mse(p, k):
    return sum((pj - (1.0 if j == k else 0.0)) ** 2 for j, pj in enumerate(p))


def _mae(p, k):
    return sum(abs(pj - (1.0 if j == k else 0.0)) for j, pj in enumerate(p))


def _mcl_literal(per_label):
    """Feng et al. 2020's unbiased estimator, row by row; rows with no complementary label: 0."""
    total = 0.0
    for f, s in zip(LOGITS4, S4):
        p, q = _softmax(f), len(f)
        n_comp = q - int(sum(s))
        if n_comp == 0:
            continue
        cand = sum(per_label(p, k) for k in range(q) if s[k])
        non = sum(per_label(p, k) for k in range(q) if not s[k])
        total += cand - (q - 1 - n_comp) / n_comp * non
    return total / len(LOGITS4)


def _average_literal(per_label):
    total = 0.0
    for f, s in zip(LOGITS4, S4):
        p = _softmax(f)
        cands = [k for k in range(len(f)) if s[k]]
        total += sum(per_label(p, k) for k in cands) / len(cands)
    return total / len(LOGITS4)


def test_exp_loss_literal_and_a_full_row_contributes_nothing():
    total = 0.0
    for f, s in zip(LOGITS4, S4):
        p, q = _softmax(f), len(f)
        n_comp = q - int(sum(s))
        if n_comp:
            total += (q - 1) / n_comp * math.exp(-sum(pj for pj, sj in zip(p, s) if sj))
    logits = _t(LOGITS4).requires_grad_(True)
    value = candidate_losses.exp_loss(logits, _t(S4))
    assert float(value.detach()) == pytest.approx(total / 4, rel=1e-12)
    value.backward()
    assert torch.isfinite(logits.grad).all()
    np.testing.assert_array_equal(logits.grad[3].numpy(), 0.0)   # |S| = q: no gradient, no NaN


def test_mcl_gce_and_mse_losses_literal():
    got = float(candidate_losses.mcl_gce_loss(_t(LOGITS4), _t(S4), 0.7))
    assert got == pytest.approx(_mcl_literal(lambda p, k: _gce(p, k, 0.7)), rel=1e-12)
    got = float(candidate_losses.mcl_gce_loss(_t(LOGITS4), _t(S4), 0.3))
    assert got == pytest.approx(_mcl_literal(lambda p, k: _gce(p, k, 0.3)), rel=1e-12)
    assert float(candidate_losses.mcl_mse_loss(_t(LOGITS4), _t(S4))) == pytest.approx(_mcl_literal(_mse), rel=1e-12)


def test_mcl_row_with_one_candidate_is_the_ordinary_loss_of_its_label():
    p = _softmax(LOGITS4[0])
    got = float(candidate_losses.mcl_mse_loss(_t(LOGITS4[:1]), _t(S4[:1])))
    assert got == pytest.approx(_mse(p, 3), rel=1e-12)   # coefficient (q - 1 - s)/s = 0 at s = q - 1


def test_mcl_estimator_is_unbiased_where_plench_code_is_not():
    """Under the paper's model (the s complementary labels drawn uniformly among the q - 1 false
    labels) the estimator's mean over every draw is the loss of the true label; PLENCH's
    ``candidate - (q - s - 1)/(s * noncandidate)`` is not."""
    import itertools

    f = [0.8, -0.3, 1.4, 0.1, -1.1]
    p, q, y = _softmax(f), 5, 2
    losses = [_gce(p, k, 0.7) for k in range(q)]
    for n_comp in range(1, q):
        draws = list(itertools.combinations([k for k in range(q) if k != y], n_comp))
        S = _t([[0.0 if k in comp else 1.0 for k in range(q)] for comp in draws])
        ours = float(candidate_losses.mcl_gce_loss(_t([f] * len(draws)), S, 0.7))
        assert ours == pytest.approx(losses[y], rel=1e-12)
        plench = np.mean([sum(losses[k] for k in range(q) if k not in comp)
                          - (q - n_comp - 1) / (n_comp * sum(losses[k] for k in comp) + 1e-20) for comp in draws])
        if n_comp < q - 1:
            assert abs(plench - losses[y]) > 0.1


def test_exp_factor_is_the_unbiased_estimator_with_the_absolute_error():
    """EXP's (q - 1)/s: with the absolute error the estimator of a row is 2 (q - 1)/s (1 - mass
    on S), and EXP replaces 1 - u by exp(-u)."""
    L = candidate_losses.mae_per_label(_t(LOGITS4))
    S = _t(S4[:3])
    for i in range(3):
        p, q, n_comp = _softmax(LOGITS4[i]), 4, 4 - int(sum(S4[i]))
        mass = sum(pj for pj, sj in zip(p, S4[i]) if sj)
        got = float(candidate_losses.unbiased_mcl_risk(L[i:i + 1], S[i:i + 1]))
        assert got == pytest.approx(2 * (q - 1) / n_comp * (1 - mass), rel=1e-12)


def test_abs_mae_and_gce_losses_literal():
    assert float(candidate_losses.abs_mae_loss(_t(LOGITS4), _t(S4))) == pytest.approx(_average_literal(_mae),
                                                                                       rel=1e-12)
    got = float(candidate_losses.abs_gce_loss(_t(LOGITS4), _t(S4), 0.7))
    assert got == pytest.approx(_average_literal(lambda p, k: _gce(p, k, 0.7)), rel=1e-12)


def test_gce_has_a_finite_gradient_where_the_softmax_underflows():
    logits = _t([[800.0, -800.0, 0.0]]).requires_grad_(True)
    candidate_losses.abs_gce_loss(logits, _t([[1.0, 1.0, 0.0]]), 0.7).backward()
    assert torch.isfinite(logits.grad).all()
