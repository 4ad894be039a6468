"""Conformal candidate cleaning (Fuchs & Kalinke, UAI 2025): the rule against literal formulas on
small inputs, the calibration rows, and the variants around their base learners."""

import pickle

import numpy as np
import pytest
import torch

from plcore.testing import make_pl_data
from plcore_deep import (CavlLearner, ConformalCavlLearner, ConformalCcLearner, ConformalProdenLearner,
                         ConformalValenLearner, ProdenLearner, ValenLearner)
from plcore_deep._cleaning import ConformalCleaner, calibration_rows, clean, p_values

_FAST = {"hidden_layer_sizes": (16,), "n_epochs": 20, "batch_size": 32, "learning_rate": 1e-2, "device": "cpu",
         "random_state": 0}


def _literal_p_value(scores, p, eps):
    """(#{a >= 1 - (1 - eps) p} + 1) / (n + 1), one entry at a time."""
    s = 1 - (1 - eps) * p
    return (sum(1 for a in scores if a >= s) + 1) / (len(scores) + 1)


def test_p_values_and_the_cleaned_sets_are_the_papers_formulas_entry_by_entry():
    rng = np.random.default_rng(0)
    scores = np.sort(rng.random(17).astype(np.float32))
    scores[3] = scores[4]                                   # a tie in the calibration scores
    P = rng.dirichlet(np.ones(5), size=9).astype(np.float32)
    P[0, 0] = 1 - scores[4]                                 # a score equal to a calibration score counts (>=)
    S = rng.random((9, 5)) < 0.6
    S[np.arange(9), rng.integers(0, 5, 9)] = True
    for eps in (0.0, 0.25):
        got = p_values(torch.from_numpy(scores), torch.from_numpy(P), eps).numpy()
        want = np.array([[_literal_p_value(scores, P[i, j], eps) for j in range(5)] for i in range(9)])
        np.testing.assert_allclose(got, want, rtol=1e-6)
        for alpha, beta in ((0.05, 0.0), (0.3, 0.1), (0.99, 0.0)):
            C = clean(torch.from_numpy(scores), torch.from_numpy(P), torch.from_numpy(S.astype(np.float32)),
                      alpha=alpha, eps=eps, beta=beta).numpy() > 0
            for i in range(9):
                kept = {j for j in range(5) if S[i, j] and want[i, j] > alpha + beta}
                assert set(np.flatnonzero(C[i])) == (kept or set(np.flatnonzero(S[i])))   # empty: the given set


def test_the_cleaner_follows_the_schedule_beta_and_the_authors_cc():
    scores = torch.tensor([0.1, 0.2, 0.5, 0.7, 0.9])
    cleaner = ConformalCleaner(alpha=0.05, warm_up=10)
    cleaner.sorted_scores = scores
    P = torch.tensor([[0.6, 0.3, 0.1], [0.2, 0.2, 0.6]])
    S = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    cleaner.epoch = 9
    assert torch.equal(cleaner(P, S), S)                    # before the warm-up ends: the given sets
    for epoch in (10, 12):
        cleaner.epoch = epoch
        eps, beta = 0.5 ** (epoch - 9), float((P * (1 - S)).sum(dim=1).mean())
        assert torch.equal(cleaner(P, S), clean(scores, P, S, alpha=0.05, eps=eps, beta=beta))
    plain = ConformalCleaner(correction=False)
    plain.sorted_scores, plain.epoch = scores, 12
    assert torch.equal(plain(P, S), clean(scores, P, S, alpha=0.05, eps=0.0, beta=0.0))
    code = ConformalCleaner(as_authors_code=True)
    code.sorted_scores, code.epoch = scores, 12
    assert torch.equal(code(P, S, masked=True), clean(scores, P * S, S, alpha=0.05, eps=0.5 ** 3, beta=0.0))
    assert torch.equal(code(P, S), cleaner(P, S))         # the other methods: as the paper


def test_calibration_rows_follow_the_authors_rule():
    rng = np.random.RandomState(0)
    S = np.ones((300, 3), dtype=bool)                       # n / q = 100 < 1000: every row trains
    S[:40, 1:] = False                                      # 40 singletons < n_val = max(100, 60)
    train, cal = calibration_rows(S, rng)
    assert np.array_equal(train, np.arange(300)) and len(cal) == 100
    S2 = np.zeros((2400, 2), dtype=bool)                   # n / q = 1200 >= 1000: n_val = 480 rows leave training
    S2[:, 0] = True
    S2[:1000, 1] = True                                     # 1400 singletons >= n_val: they calibrate
    train, cal = calibration_rows(S2, np.random.RandomState(1))
    assert len(train) == 2400 - 480 and len(cal) == 1400 and np.all(S2[cal].sum(axis=1) == 1)


def test_cleaning_removes_candidates_from_the_targets_and_proden_keeps_them_all():
    X, S, y = make_pl_data(n_samples=240, n_classes=4, n_features=6, random_state=3)
    base = ProdenLearner(**_FAST).fit(X, S)
    conf = ConformalProdenLearner(cleaning_warm_up=2, **_FAST).fit(X, S)
    cand = S > 0
    assert np.all(base.confidences_[cand] > 0)              # PRODEN's weights never leave a candidate
    cleaned = (conf.confidences_ == 0) & cand
    assert cleaned.sum() > 0                                # the variant's targets dropped some
    assert np.mean(y[cleaned.any(axis=1)] == conf.confidences_[cleaned.any(axis=1)].argmax(axis=1)) > 0.8
    assert np.all(np.isclose(conf.confidences_.sum(axis=1), 1))


@pytest.mark.parametrize("variant, base", [(ConformalProdenLearner, ProdenLearner),
                                           (ConformalValenLearner, ValenLearner)])
def test_a_variant_before_its_first_cleaning_is_its_base_learner(variant, base):
    """The calibration pass (eval mode, no gradient) leaves the fit untouched."""
    X, S, _ = make_pl_data(n_samples=150, random_state=1)
    a = variant(cleaning_warm_up=_FAST["n_epochs"], **_FAST).fit(X, S)
    b = base(**_FAST).fit(X, S)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


def test_the_authors_cavl_variant_changes_nothing_and_the_papers_does():
    X, S, _ = make_pl_data(n_samples=200, n_classes=4, random_state=2)
    kw = {**_FAST, "hidden_layer_sizes": (64,)}
    cavl = CavlLearner(**kw).fit(X, S)
    as_code = ConformalCavlLearner(as_authors_code=True, cleaning_warm_up=2, **kw).fit(X, S)
    np.testing.assert_array_equal(as_code.predict_proba(X), cavl.predict_proba(X))
    logits = torch.tensor([[2.0, 1.9, -3.0], [0.1, 0.0, 4.0]])
    sets = torch.tensor([[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]])
    for as_authors_code, changed in ((False, True), (True, False)):
        method = ConformalCavlLearner(as_authors_code=as_authors_code)._make_method()
        method.cleaner.sorted_scores, method.cleaner.epoch = torch.linspace(0.01, 0.3, 40), 20
        # the paper's target is chosen among the labels the p-values keep (here: not the third of row 1)
        assert (not torch.equal(method.cleaned(logits, sets), sets)) == changed


def test_a_conformal_variant_survives_pickling_and_refuses_bad_settings():
    X, S, _ = make_pl_data(n_samples=80, random_state=0)
    est = ConformalCcLearner(**_FAST).fit(X, S)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict(X), est.predict(X))
    with pytest.raises(ValueError, match="cleaning_alpha"):
        ConformalCcLearner(cleaning_alpha=1.5, **_FAST).fit(X, S)
