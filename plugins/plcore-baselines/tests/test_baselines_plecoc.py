"""PL-ECOC: column rules against literal loops, weights and decoding against the formulas,
degenerate inputs, learning on digits, real data."""

import math
import warnings

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

from plcore.exceptions import InvalidParameterError
from plcore_baselines import PlEcocLearner
from plcore_baselines._plecoc import (
    column_split,
    decoding_loss,
    default_code_length,
    generate_code,
    performance_weights,
    relaxed_split,
)

# a hand-made example: q = 4 labels, 8 candidate sets
S_HAND = np.array([
    [1, 0, 0, 0],
    [1, 1, 0, 0],
    [0, 1, 0, 0],
    [0, 0, 1, 1],
    [0, 0, 1, 0],
    [1, 0, 1, 0],
    [0, 1, 0, 1],
    [1, 1, 1, 1],
], dtype=bool)


def literal_split(S, v):
    """Positive: S_i subset of Y+; negative: S_i subset of Y-; else unused (-1 / 0 / +1 list)."""
    plus = {l for l in range(len(v)) if v[l]}
    minus = {l for l in range(len(v)) if not v[l]}
    out = []
    for row in S:
        cand = {l for l in range(len(row)) if row[l]}
        out.append(1 if cand <= plus else (-1 if cand <= minus else 0))
    return np.array(out)


def literal_generate(S, length, seed, min_fraction, min_side, max_draws):
    """The encoding loop written out: draw, skip trivial/duplicate (or negated) columns, keep admissible."""
    rng = np.random.RandomState(seed)
    n, q = S.shape
    tau = math.ceil(min_fraction * n)
    side = max(1, min(min_side, tau // 2))
    kept, seen = [], []
    for _ in range(max_draws):
        if len(kept) == length or len(seen) == 2 ** (q - 1) - 1:
            break
        v = rng.randint(2, size=q).astype(bool)
        if v.all() or not v.any():
            continue
        if any(np.array_equal(v, u) or np.array_equal(~v, u) for u in seen):
            continue
        seen.append(v)
        lab = literal_split(S, v)
        n_pos, n_neg = int(np.sum(lab == 1)), int(np.sum(lab == -1))
        if n_pos + n_neg >= tau and n_pos >= side and n_neg >= side:
            kept.append(v)
    return kept


def test_default_code_length():
    assert [default_code_length(q) for q in (2, 3, 10, 16, 23)] == [10, 16, 34, 40, 46]


@pytest.mark.parametrize("v", [(1, 0, 0, 0), (1, 1, 0, 0), (0, 0, 1, 1), (1, 0, 1, 0), (0, 1, 1, 1)])
def test_column_split_matches_literal_loop(v):
    v = np.array(v, dtype=bool)
    pos, neg = column_split(S_HAND, v)
    lab = literal_split(S_HAND, v)
    np.testing.assert_array_equal(pos, lab == 1)
    np.testing.assert_array_equal(neg, lab == -1)
    assert not np.any(pos & neg)
    rpos, rneg, share = relaxed_split(S_HAND, v)   # relaxed: S meets Y+ / S inside Y-
    for i, row in enumerate(S_HAND):
        cand, plus = set(np.flatnonzero(row)), set(np.flatnonzero(v))
        assert rpos[i] == bool(cand & plus)
        assert share[i] == len(cand & plus) / len(cand)
    np.testing.assert_array_equal(rneg, neg)
    assert np.all(rpos[pos])                # every strict positive is a relaxed positive


def test_column_split_hand_checked():
    pos, neg = column_split(S_HAND, np.array([1, 1, 0, 0], dtype=bool))
    np.testing.assert_array_equal(np.flatnonzero(pos), [0, 1, 2])
    np.testing.assert_array_equal(np.flatnonzero(neg), [3, 4])


@pytest.mark.parametrize("seed, min_fraction, min_side", [(0, 0.1, 1), (1, 0.5, 2), (2, 0.3, 5)])
def test_generate_code_matches_literal_loop(seed, min_fraction, min_side):
    rng = np.random.RandomState(7)
    S = rng.rand(60, 6) < 0.25
    S[np.arange(60), rng.randint(6, size=60)] = True
    kept = literal_generate(S, 9, seed, min_fraction, min_side, 2000)
    code, strict = generate_code(S, 9, np.random.RandomState(seed), min_fraction=min_fraction,
                                 min_side=min_side, max_draws=2000)
    assert code.shape[0] == 6 and strict[:len(kept)].all()
    np.testing.assert_array_equal(code[:, :len(kept)].T, np.array(kept).reshape(len(kept), 6))
    if len(kept) == 9:
        assert code.shape[1] == 9 and strict.all()
    # every kept column obeys the rules, with the paper's threshold tau = ceil(0.1 n) etc.
    tau = math.ceil(min_fraction * 60)
    for col in np.flatnonzero(strict):
        lab = literal_split(S, code[:, col])
        assert np.sum(lab != 0) >= tau and min(np.sum(lab == 1), np.sum(lab == -1)) >= min(min_side, tau // 2)


def test_degenerate_sets_fall_back_to_relaxed_columns():
    """q = 3, every candidate set of size 2: no dichotomy has both sides; relaxed one-vs-rest columns."""
    rng = np.random.RandomState(0)
    y = rng.randint(3, size=90)
    X = np.eye(3)[y] * 4 + rng.randn(90, 3) * 0.3
    S = np.ones((90, 3), dtype=bool)
    S[np.arange(90), (y + 1 + rng.randint(2, size=90)) % 3] = False
    code, strict = generate_code(S, 16, np.random.RandomState(0))
    assert not strict.any() and code.shape[1] == 3
    np.testing.assert_array_equal(np.sort(code.sum(axis=0)), [1, 1, 1])  # Y+ = one label
    with pytest.warns(UserWarning, match="relaxed"):
        est = PlEcocLearner(random_state=0).fit(X, S)
    assert est.n_strict_columns_ == 0 and est.code_length_ == 3
    assert np.mean(est.predict(X) == y) >= 0.95


def test_no_usable_column_predicts_the_most_frequent_candidate():
    X = np.random.RandomState(0).randn(30, 2)
    S = np.ones((30, 3), dtype=bool)   # no candidate set excludes any label
    with pytest.warns(UserWarning, match="no usable coding column"):
        est = PlEcocLearner(random_state=0).fit(X, S)
    assert est.code_length_ == 0
    assert np.all(est.predict(X) == 0)  # all labels equally frequent: the first


def test_small_q_uses_each_dichotomy_once():
    rng = np.random.RandomState(1)
    y = rng.randint(3, size=60)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # fewer than ceil(10 log2 3) = 16 columns exist: no warning
        est = PlEcocLearner(random_state=0).fit(np.eye(3)[y] + rng.randn(60, 3) * 0.1, y)
    assert est.code_length_ == 3 == est.n_strict_columns_       # 2^(3-1) - 1 dichotomies
    cols = {tuple(c) if c[0] > 0 else tuple(-c) for c in est.code_.T}
    assert len(cols) == 3


# ----------------------------------------------------------------------------- weights, decoding
def _fitted(seed=0, estimator=None):
    rng = np.random.RandomState(seed)
    y = rng.randint(5, size=120)
    X = rng.randn(5, 4)[y] * 2 + rng.randn(120, 4)
    S = np.eye(5, dtype=bool)[y]
    S[np.arange(120), rng.randint(5, size=120)] = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # q = 5: some relaxed columns (tested below)
        est = PlEcocLearner(estimator=estimator, random_state=seed).fit(X, S)
    return est, X, S, y


def test_performance_weights_match_the_literal_definition():
    est, X, S, _ = _fitted()
    H = est._margins(X)
    q, L = est.code_.shape
    G = np.zeros((q, L))
    for j in range(q):
        rows = [i for i in range(len(X)) if S[i, j]]
        for col in range(L):
            hits = sum(1 for i in rows if (1 if H[i, col] > 0 else -1) == est.code_[j, col])
            G[j, col] = hits / len(rows)
        G[j] /= G[j].sum()
    np.testing.assert_allclose(est.performance_, G, rtol=1e-12)
    np.testing.assert_allclose(performance_weights(S, est.code_ > 0, H), G, rtol=1e-12)


@pytest.mark.parametrize("estimator", [None, LogisticRegression()])
def test_decoding_is_loss_based_argmin(estimator):
    est, X, _, _ = _fitted(1, estimator)
    Xq = np.random.RandomState(9).randn(25, 4) * 2
    H = np.column_stack([b.decision_function(Xq) for b in est.estimators_])
    q, L = est.code_.shape
    loss = np.zeros((25, q))
    for n in range(25):
        for y in range(q):
            loss[n, y] = sum(est.performance_[y, b] * math.exp(-est.code_[y, b] * H[n, b])
                             for b in range(L))
    np.testing.assert_allclose(est._scores(Xq), -loss, rtol=1e-12)
    np.testing.assert_allclose(decoding_loss(est.performance_, est.code_ > 0, H), loss, rtol=1e-12)
    np.testing.assert_array_equal(est.predict(Xq), np.argmin(loss, axis=1))


def test_binary_sets_follow_the_column_rule():
    """Each binary learner saw exactly the positives (+1) and negatives (-1) of its column."""
    est, X, S, _ = _fitted(2, LogisticRegression())
    assert 0 < est.n_strict_columns_ < est.code_length_  # both kinds occur on this data
    for col, b in enumerate(est.estimators_):
        v = est.code_[:, col] > 0
        if est.column_strict_[col]:
            lab = literal_split(S, v)
            ref = LogisticRegression().fit(X[lab != 0], lab[lab != 0])
        else:
            assert col >= est.n_strict_columns_
            share = np.array([len(set(np.flatnonzero(r)) & set(np.flatnonzero(v))) / r.sum() for r in S])
            lab = np.where(share > 0, 1, -1)
            ref = LogisticRegression().fit(X, lab, sample_weight=np.where(share > 0, share, 1.0))
        np.testing.assert_allclose(b.coef_, ref.coef_, rtol=1e-6)


@pytest.mark.parametrize("params", [
    {"code_length": 0}, {"code_length": "long"}, {"min_fraction": 0.0}, {"min_fraction": 1.5},
    {"min_side": 0}, {"max_draws": 0}, {"estimator": "svm"},
])
def test_bad_parameters_raise(params):
    est, X, S, _ = _fitted()
    (name,) = params
    with pytest.raises(InvalidParameterError, match=f"The '{name}' parameter of PlEcocLearner must be"):
        PlEcocLearner(**params).fit(X, S)


# ----------------------------------------------------------------------------- learning
def test_learns_on_digits_with_two_false_positives(digits_r2):
    """digits, uniform bags r=2: PL-ECOC vs the candidate-frequency baseline (held-out accuracy)."""
    d = digits_r2
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the paper's rule suffices here: no fallback
        est = PlEcocLearner(random_state=0).fit(d.Xtr, d.Str)
    assert est.code_length_ == est.n_strict_columns_ == 34
    acc = est.score(d.Xte, d.yte)
    baseline = d.baseline
    # measured: 0.911 vs 0.100; the reversed sign (argmax of the loss) is near chance
    assert acc >= 0.85 and acc >= baseline + 0.6, (acc, baseline)
    wrong_sign = np.mean(np.argmax(-est._scores(d.Xte), axis=1) == d.yte)
    assert wrong_sign < 0.2


@pytest.mark.data
@pytest.mark.slow
def test_lost_one_fold(lost_fold):
    """Lost, one of 10 shuffled folds, z-scored: the paper's 0.647 +- 0.039 (measured: 0.64)."""
    f = lost_fold
    est = PlEcocLearner(random_state=0).fit(f.Xtr, f.Str)
    assert est.n_strict_columns_ == est.code_length_ == 40
    assert est.score(f.Xte, f.yte) >= 0.55


# ----------------------------------------------------------------------------- fit_path
def _path_data(q=9, n=150, seed=8):
    rng = np.random.RandomState(seed)
    y = rng.randint(q, size=n)
    X = rng.randn(q, 5)[y] * 2 + rng.randn(n, 5)
    S = np.eye(q, dtype=bool)[y]
    S[np.arange(n), rng.randint(q, size=n)] = True
    return X, S


@pytest.mark.parametrize("min_fraction", [0.05, 0.2, 0.65, 0.8])   # 0.65: 17 strict columns of 30, then relaxed; 0.8: none strict
def test_fit_path_learners_equal_their_own_fits_and_train_each_column_once(monkeypatch, min_fraction):
    """Every code_length of one seed: each learner's code, weights and scores are its own fit's,
    to the bit; the binary classifiers are trained once per column of the longest code, and the
    test rows' margins computed once."""
    import plcore_baselines.plecoc as plecoc

    X, S = _path_data()
    X_test = _path_data(n=70, seed=9)[0]
    points = [{"code_length": L} for L in (4, 12, 30, "auto")]
    trained, margins = [], []
    real_fit, real_margin = plecoc.PlEcocLearner._fit_columns, plecoc.PlEcocLearner._margin
    monkeypatch.setattr(plecoc.PlEcocLearner, "_fit_columns",
                        lambda self, X_, S_, code, *a: trained.append(code.shape[1]) or real_fit(self, X_, S_, code, *a))
    monkeypatch.setattr(plecoc.PlEcocLearner, "_margin",
                        staticmethod(lambda est, Q: margins.append(Q.shape[0]) or real_margin(est, Q)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fitted = PlEcocLearner(random_state=3, min_fraction=min_fraction).fit_path(X, S, points)
        scores = [learner._scores(X_test) for learner in fitted]
        longest = max(learner.code_length_ for learner in fitted)
        assert trained == [longest]
        assert margins.count(len(X_test)) == longest          # the test rows once per column, not per learner
        monkeypatch.undo()
        for point, learner, got in zip(points, fitted, scores):
            own = PlEcocLearner(random_state=3, min_fraction=min_fraction).set_params(**point).fit(X, S)
            assert learner.get_params() == own.get_params()
            np.testing.assert_array_equal(learner.code_, own.code_)
            np.testing.assert_array_equal(learner.column_strict_, own.column_strict_)
            np.testing.assert_array_equal(learner.performance_, own.performance_)
            np.testing.assert_array_equal(got, own._scores(X_test))
            np.testing.assert_array_equal(learner.predict(X_test), own.predict(X_test))
    assert len({learner.code_length_ for learner in fitted}) == 4
    with pytest.raises(ValueError, match="code_length only"):
        PlEcocLearner(random_state=0).fit_path(X, S, [{"min_fraction": 0.2}])


def test_fit_path_warns_as_each_own_fit_does():
    X, S = _path_data()
    points = [{"code_length": 4}, {"code_length": 30}]
    with warnings.catch_warnings(record=True) as path_warnings:
        warnings.simplefilter("always")
        PlEcocLearner(random_state=3, min_fraction=0.65).fit_path(X, S, points)
    own_warnings = []
    for point in points:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            PlEcocLearner(random_state=3, min_fraction=0.65).set_params(**point).fit(X, S)
        own_warnings += [str(w.message) for w in caught]
    assert own_warnings and [str(w.message) for w in path_warnings] == own_warnings


@pytest.mark.parametrize("kwargs", [{"random_state": None}, {"random_state": 3, "estimator": LogisticRegression()}])
def test_fit_path_fits_each_point_alone_without_a_seed_or_with_another_binary_learner(kwargs):
    X, S = _path_data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fitted = PlEcocLearner(**kwargs).fit_path(X, S, [{"code_length": 4}, {"code_length": 12}])
    assert [learner.code_length_ for learner in fitted] == [4, 12]
    assert not any("_shared" in learner.__dict__ for learner in fitted)


def test_fit_path_fits_alone_a_point_whose_code_is_not_a_prefix(monkeypatch):
    """The safety net: a point whose own code differs from the longest code's first columns is
    fitted alone (here a generator that reverses the short code's columns)."""
    import plcore_baselines.plecoc as plecoc

    real = plecoc.generate_code

    def reversed_when_short(S, length, rng, **kw):
        code, strict = real(S, length, rng, **kw)
        return (code[:, ::-1], strict[::-1]) if length == 4 else (code, strict)

    monkeypatch.setattr(plecoc, "generate_code", reversed_when_short)
    X, S = _path_data()
    X_test = _path_data(n=70, seed=9)[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        short, long_ = PlEcocLearner(random_state=3).fit_path(X, S, [{"code_length": 4}, {"code_length": 12}])
        own = PlEcocLearner(random_state=3, code_length=4).fit(X, S)
    assert "_shared" not in short.__dict__ and "_shared" in long_.__dict__
    np.testing.assert_array_equal(short.code_, own.code_)
    np.testing.assert_array_equal(short._scores(X_test), own._scores(X_test))
    # a RandomState seed: the point fitted alone does not advance the seed the other points draw from
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        points = [{"code_length": 4}, {"code_length": 6}, {"code_length": 12}]
        fitted = PlEcocLearner(random_state=np.random.RandomState(2)).fit_path(X, S, points)
        for point, learner in zip(points, fitted):
            own = PlEcocLearner(random_state=np.random.RandomState(2)).set_params(**point).fit(X, S)
            np.testing.assert_array_equal(learner._scores(X_test), own._scores(X_test))
    assert ["_shared" in learner.__dict__ for learner in fitted] == [False, True, True]


def test_fit_path_learner_refitted_or_pickled_predicts_as_its_own_fit():
    """A fit_path learner refitted on other rows forgets the shared margins (they are another
    fit's); pickled, it keeps its predictions and leaves the last query set behind."""
    import pickle

    X, S = _path_data()
    X2, S2 = _path_data(seed=11)
    X_test = _path_data(n=70, seed=9)[0]
    short, _ = PlEcocLearner(random_state=3).fit_path(X, S, [{"code_length": 4}, {"code_length": 12}])
    expected = short._scores(X_test)
    restored = pickle.loads(pickle.dumps(short))
    assert "_shared" in short.__dict__ and "_shared" not in restored.__dict__
    np.testing.assert_array_equal(restored._scores(X_test), expected)
    short.fit(X2, S2)
    own = PlEcocLearner(random_state=3, code_length=4).fit(X2, S2)
    np.testing.assert_array_equal(short._scores(X_test), own._scores(X_test))


def test_fit_path_with_a_random_state_instance_and_bad_point_values():
    X, S = _path_data()
    X_test = _path_data(n=70, seed=9)[0]
    seed = np.random.RandomState(5)
    fitted = PlEcocLearner(random_state=seed).fit_path(X, S, [{"code_length": 4}, {"code_length": 12}])
    for learner, length in zip(fitted, (4, 12)):
        own = PlEcocLearner(random_state=np.random.RandomState(5), code_length=length).fit(X, S)
        np.testing.assert_array_equal(learner._scores(X_test), own._scores(X_test))
    assert seed.randint(1 << 30) == np.random.RandomState(5).randint(1 << 30)   # the given seed is not consumed
    with pytest.raises(InvalidParameterError):
        PlEcocLearner(random_state=0).fit_path(X, S, [{"code_length": 4}, {"code_length": 0}])
