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
