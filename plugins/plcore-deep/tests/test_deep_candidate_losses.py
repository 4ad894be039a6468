"""EXP, MCL-GCE, MCL-MSE, ABS-MAE and ABS-GCE in the loop: each learns where the answer is
known, a row whose candidate set is every label trains without NaN, GCE's exponent is checked.
(Their losses against the literal formulas: test_deep_losses.py.)"""

import numpy as np
import pytest

from plcore.datasets.bags import UniformBags
from plcore.exceptions import InvalidParameterError
from plcore_deep import AbsGceLearner, AbsMaeLearner, ExpLearner, MclGceLearner, MclMseLearner

LEARNERS = [ExpLearner, MclGceLearner, MclMseLearner, AbsMaeLearner, AbsGceLearner]


def _bags(n=600, q=4, seed=0):
    rng = np.random.RandomState(seed)
    y = rng.randint(0, q, n)
    X = rng.randn(n, 6) + 2.5 * np.eye(q, 6)[y]
    return X, UniformBags(r=1).generate(y, random_state=seed), y


@pytest.mark.parametrize("cls", LEARNERS)
def test_learns_where_the_answer_is_known(cls):
    X, S, y = _bags()
    est = cls(hidden_layer_sizes=(32,), n_epochs=20, batch_size=32, learning_rate=1e-2, device="cpu",
              random_state=0).fit(X[:400], S[:400])
    # chance 0.25; logistic regression on the TRUE labels scores 0.865 on these rows
    assert np.mean(est.predict(X[400:]) == y[400:]) >= 0.8
    # no confidences of their own: the final posterior on the candidates disambiguates the rows
    assert np.mean(np.argmax(est.confidences_, axis=1) == y[:400]) >= 0.9


@pytest.mark.parametrize("cls", LEARNERS)
def test_a_row_with_every_label_a_candidate_trains_without_nan(cls):
    X, S, _ = _bags(n=80)
    S = S.copy()
    S[:5] = True                                   # s = 0 complementary labels on five rows
    est = cls(hidden_layer_sizes=(8,), n_epochs=3, batch_size=16, device="cpu", random_state=0).fit(X, S)
    assert np.all(np.isfinite(est.loss_curve_))
    assert np.all(np.isfinite(est.decision_function(X)))


@pytest.mark.parametrize("cls", [MclGceLearner, AbsGceLearner])
@pytest.mark.parametrize("bad", [0.0, 1.5, -0.2])
def test_gce_q_outside_zero_one_is_a_parameter_error(cls, bad):
    X, S, _ = _bags(n=40)
    with pytest.raises(InvalidParameterError, match="gce_q"):
        cls(gce_q=bad, n_epochs=1, device="cpu").fit(X, S)


def test_gce_q_reaches_the_loss():
    X, S, _ = _bags(n=80)
    kw = dict(hidden_layer_sizes=(8,), n_epochs=2, batch_size=16, device="cpu", random_state=0)
    a = AbsGceLearner(gce_q=0.7, **kw).fit(X, S).loss_curve_
    b = AbsGceLearner(gce_q=0.3, **kw).fit(X, S).loss_curve_
    assert not np.allclose(a, b)
