"""Correctness of Algorithms 1-4: hand-computed updates, the literal reference, invariants, bounds."""

from __future__ import annotations

import math
import re
import zlib

import numpy as np
import pytest

from plcore.exceptions import InvalidParameterError
from plcore.tags import get_pll_tags
from plcore_online import (
    AvgPegasosLearner,
    AvgPerceptronLearner,
    MaxPegasosLearner,
    MaxPerceptronLearner,
    PegasosLearner,
    PerceptronLearner,
    learners,
)
from plcore_online.learners import prequential
from plcore_online.plugin import LEARNER_OPTIONS

from online_reference import literal_stream, textbook_multiclass_perceptron  # tests/online_reference.py (conftest.py)

#: option name -> class, from the plugin's option table (plugin.py)
LEARNERS = {option: getattr(learners, cls) for option, cls in LEARNER_OPTIONS.items()}

PL = {"avg_perceptron": ("avg", "perceptron"), "max_perceptron": ("max", "perceptron"),
      "avg_pegasos": ("avg", "pegasos"), "max_pegasos": ("max", "pegasos")}

# A tiny stream: K = 3 classes, d = 2 features, no intercept.
X4 = np.array([[1.0, 2.0], [0.0, 1.0], [2.0, 0.0], [1.0, 0.0]])
S4 = np.array([[1, 1, 0], [0, 0, 1], [1, 0, 0], [1, 0, 0]], dtype=bool)
CLASSES3 = np.arange(3)


def _stream(est, X, S, classes):
    preds = prequential(est, X, S, classes)
    return preds, est.W_


# ----------------------------------------------------------------------------- by hand
def test_avg_perceptron_by_hand():
    # t=1: W=0, all scores 0 -> predict 0; avg_Y = 0, max_{not Y} = 0 (class 2): loss 1 > 0,
    #      tau = (1/2, 1/2, -1): w0 = w1 = (.5, 1), w2 = (-1, -2)
    # t=2: scores (1, 1, -2) -> predict 0; Y={2}: avg -2, top non-candidate j=0 (tie with 1 -> 0),
    #      loss 4: w2 += x -> (-1, -1), w0 -= x -> (.5, 0)
    # t=3: scores (1, 1, -2); Y={0}: margin 1 - max(1, -2) = 0 < 1, j=1: w0 += x -> (2.5, 0),
    #      w1 -= x -> (-1.5, 1)
    # t=4: scores (2.5, -1.5, -1): margin 3.5 >= 1 -> no update
    est = AvgPerceptronLearner(eta=1.0, fit_intercept=False)
    preds, W = _stream(est, X4, S4, CLASSES3)
    np.testing.assert_array_equal(preds, [0, 0, 0, 0])
    np.testing.assert_allclose(W, [[2.5, -1.5, -1.0], [0.0, 1.0, -1.0]])
    assert est.n_updates_ == 3 and est.t_ == 4


def test_avg_perceptron_step_size_scales_the_update():
    est = AvgPerceptronLearner(eta=0.5, fit_intercept=False)
    _, W = _stream(est, X4[:1], S4[:1], CLASSES3)
    np.testing.assert_allclose(W, 0.5 * np.array([[0.5, 0.5, -1.0], [1.0, 1.0, -2.0]]))


def test_max_perceptron_by_hand():
    # t=1: scores 0; top candidate i=0 (tie 0/1 -> 0), top non-candidate j=2: loss 1:
    #      w0 = (1, 2), w2 = (-1, -2)
    # t=2: scores (2, 0, -2) -> predict 0; Y={2}: i=2, j=0: loss 1 + 2 + 2 = 5:
    #      w2 -> (-1, -1), w0 -> (1, 1)
    # t=3: scores (2, 0, -2); Y={0}: margin 2 - 0 = 2 >= 1: no update
    # t=4: scores (1, 0, -1); margin exactly 1: loss 0, no update
    est = MaxPerceptronLearner(eta=1.0, fit_intercept=False)
    preds, W = _stream(est, X4, S4, CLASSES3)
    np.testing.assert_array_equal(preds, [0, 0, 0, 0])
    np.testing.assert_allclose(W, [[1.0, 0.0, -1.0], [1.0, 0.0, -1.0]])
    assert est.n_updates_ == 2


def test_avg_pegasos_by_hand():
    lam = 0.5
    r = 1 / math.sqrt(lam)
    x1, x2 = X4[0], X4[1]
    # t=1: eta_1 = 1/(lam*1) = 2, (1 - eta_1 lam) = 0: W = 2 * tau x1^T, tau = (1/2, 1/2, -1)
    W = np.zeros((2, 3))
    W[:, 0] = W[:, 1] = 2 * 0.5 * x1
    W[:, 2] = -2 * x1
    W *= min(1.0, r / np.linalg.norm(W))          # ||W|| = sqrt(30) > sqrt(2): projected
    # t=2: scores w.x2; Y={2}; top non-candidate j=0 (w0 = w1); eta_2 = 1, decay 1/2
    s = x2 @ W
    assert s[0] == s[1] and 1 - s[2] + s[0] > 0
    W = 0.5 * W
    W[:, 2] += 1.0 * x2
    W[:, 0] -= 1.0 * x2
    W *= min(1.0, r / np.linalg.norm(W))
    est = AvgPegasosLearner(lam=lam, fit_intercept=False)
    preds, W_est = _stream(est, X4[:2], S4[:2], CLASSES3)
    np.testing.assert_allclose(W_est, W, rtol=1e-12)
    np.testing.assert_array_equal(preds, [0, 0])


@pytest.mark.parametrize("shrink", [False, True])
def test_max_pegasos_by_hand_with_zero_loss_trial(shrink):
    lam = 0.01
    X = np.array([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]])
    S = np.array([[1, 0], [1, 0], [0, 1]], dtype=bool)
    # t=1: eta 100, decay 0: w0 = 100 x1, w1 = -100 x1 -> ||W|| = 141.4 > 10: scaled to 10
    W = np.array([[100.0, -100.0], [0.0, 0.0]])
    W *= 10 / np.linalg.norm(W)
    # t=2: margin = 2 * 7.07 >= 1: loss 0. Algorithm 4 as printed: W unchanged;
    #      shrink_on_zero_loss=True: W <- (1 - 1/2) W
    assert (X[1] @ W)[0] - (X[1] @ W)[1] >= 1
    if shrink:
        W = 0.5 * W
    # t=3: scores (0, 0): predict 0; Y={1}: i=1, j=0; loss 1: eta_3 = 1/(0.03), decay 2/3
    W = (2 / 3) * W
    W[:, 1] += X[2] / (lam * 3)
    W[:, 0] -= X[2] / (lam * 3)
    W *= min(1.0, 10 / np.linalg.norm(W))
    est = MaxPegasosLearner(lam=lam, fit_intercept=False, shrink_on_zero_loss=shrink)
    preds, W_est = _stream(est, X, S, np.arange(2))
    np.testing.assert_allclose(W_est, W, rtol=1e-12)
    np.testing.assert_array_equal(preds, [0, 0, 0])
    assert est.n_updates_ == 2


def test_full_candidate_set_makes_no_update():
    for cls in LEARNERS.values():
        est = cls(fit_intercept=False)
        est.partial_fit(X4[:1], np.ones((1, 3), dtype=bool), classes=CLASSES3)
        assert est.n_updates_ == 0 and not est.W_.any(), cls.__name__


# ----------------------------------------------------------------------------- literal reference
def _random_stream(seed, n=80, d=4, K=5):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d) * rng.uniform(0.3, 3.0)
    S = rng.rand(n, K) < 0.35
    S[np.arange(n), rng.randint(0, K, n)] = True
    S[rng.randint(0, n, 3)] = True  # a few full candidate sets
    return X, S


@pytest.mark.parametrize("name, shrink", [(name, shrink) for name in PL for shrink in (False, True)
                                           if "pegasos" in name or not shrink])
@pytest.mark.parametrize("intercept", [False, True])
def test_equals_literal_algorithm(name, shrink, intercept):
    loss, algo = PL[name]
    X, S = _random_stream(zlib.crc32(f"{name}-{shrink}-{intercept}".encode()) % 1000)
    params = {"fit_intercept": intercept}
    params.update({"eta": 0.7} if algo == "perceptron" else {"lam": 0.05, "shrink_on_zero_loss": shrink})
    est = LEARNERS[name](**params)
    # two chunks: the second call continues the stream of the (now fitted) learner
    preds = np.r_[prequential(est, X[:30], S[:30], np.arange(5)), prequential(est, X[30:], S[30:], np.arange(5))]
    Xl = np.hstack([X, np.ones((len(X), 1))]) if intercept else X
    ref, W, t, updates = literal_stream(Xl, S, loss=loss, algorithm=algo, eta=0.7, lam=0.05,
                                        shrink_on_zero_loss=shrink)
    np.testing.assert_array_equal(preds, ref)
    np.testing.assert_allclose(est.W_, W, rtol=1e-10, atol=1e-12)
    assert est.t_ == t == len(X) and est.n_updates_ == updates
    if intercept:
        np.testing.assert_allclose(est.coef_, W[:-1].T, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(est.intercept_, W[-1], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(est.decision_function(X), Xl @ W, rtol=1e-10, atol=1e-12)


def test_pegasos_long_stream_matches_literal():
    """The scale trick (W = c V) with renormalisations stays equal to the literal algorithm."""
    import plcore_online._stream as kernels

    X, S = _random_stream(7, n=1500, d=3, K=4)
    old = kernels._NORM_REFRESH
    kernels._NORM_REFRESH = 50
    try:
        est = AvgPegasosLearner(lam=1e-3, fit_intercept=False, shrink_on_zero_loss=True)
        preds = prequential(est, X, S, np.arange(4))
    finally:
        kernels._NORM_REFRESH = old
    ref, W, _, _ = literal_stream(X, S, loss="avg", algorithm="pegasos", lam=1e-3, shrink_on_zero_loss=True)
    np.testing.assert_array_equal(preds, ref)
    np.testing.assert_allclose(est.W_, W, rtol=1e-9, atol=1e-12)


# ----------------------------------------------------------------------------- invariants
@pytest.mark.parametrize("cls", [AvgPegasosLearner, MaxPegasosLearner, PegasosLearner])
@pytest.mark.parametrize("shrink", [False, True])
def test_pegasos_stays_in_ball(cls, shrink):
    rng = np.random.RandomState(3)
    X = rng.randn(400, 6) * 20.0  # large features: the projection is active
    S = rng.rand(400, 4) < 0.4
    S[np.arange(400), rng.randint(0, 4, 400)] = True
    lam = 0.02
    est = cls(lam=lam, shrink_on_zero_loss=shrink)
    est.partial_fit(X[:0], S[:0], classes=np.arange(4))
    norms = []
    for i in range(400):
        est.partial_fit(X[i:i + 1], S[i:i + 1])
        norms.append(np.linalg.norm(est.W_))
    assert max(norms) <= (1 / math.sqrt(lam)) * (1 + 1e-12)
    assert max(norms) >= 0.99 / math.sqrt(lam)  # the bound is reached, so the check has teeth


def _avg_separable(seed, n=300, d=5, K=6, gamma=0.05):
    """Examples average-linearly separable by a unit-norm W* with margin >= gamma (Definition 1)."""
    rng = np.random.RandomState(seed)
    W_star = rng.randn(d, K)
    W_star /= np.linalg.norm(W_star)
    X, S = [], []
    while len(X) < n:
        x = rng.randn(d)
        x /= max(1.0, np.linalg.norm(x))
        scores = x @ W_star
        order = np.argsort(-scores)
        size = rng.randint(1, 4)
        Y = order[:size]                      # the top-scoring classes as the candidate set
        if scores[Y].mean() - scores[order[size]] >= gamma:
            s = np.zeros(K, dtype=bool)
            s[Y] = True
            X.append(x)
            S.append(s)
    return np.array(X), np.array(S), W_star


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_theorem1_mistake_bound(seed):
    """Avg Perceptron (eta = 1) on average-linearly-separable data: the number of updates, hence
    of mistakes (prediction outside Y), is at most 2/gamma^2 + (1/c + 1) R^2/gamma^2."""
    gamma = 0.05
    X, S, W_star = _avg_separable(seed, gamma=gamma)
    margins = np.array([(x @ W_star)[s].mean() - (x @ W_star)[~s].max() for x, s in zip(X, S)])
    gamma = margins.min()                     # the actual margin (>= 0.05)
    R = np.linalg.norm(X, axis=1).max()
    c = S.sum(axis=1).min()
    bound = 2 / gamma**2 + (1 / c + 1) * R**2 / gamma**2
    est = AvgPerceptronLearner(eta=1.0, fit_intercept=False)
    classes = np.arange(S.shape[1])
    pl_mistakes = 0
    for epoch in range(30):                   # any sequence: cycle until no more updates
        before = getattr(est, "n_updates_", 0)
        preds = prequential(est, X, S, classes)   # continues the stream of a fitted learner
        pl_mistakes += int((~S[np.arange(len(X)), preds]).sum())
        if est.n_updates_ == before:
            break
    assert est.n_updates_ == before, "did not converge on separable data"
    assert pl_mistakes <= est.n_updates_ <= bound
    assert est.n_updates_ >= 10               # non-trivial run
    # the two inequalities of the proof, after M updates: <W*, W> >= M gamma and
    # ||W||^2 <= M (2 + (1/c + 1) R^2)  (their combination is the bound)
    M = est.n_updates_
    assert np.sum(W_star * est.W_) >= M * gamma * (1 - 1e-12)
    assert np.sum(est.W_ ** 2) <= M * (2 + (1 / c + 1) * R**2)


# ----------------------------------------------------------------------------- fit vs stream
@pytest.mark.parametrize("name", list(LEARNERS))
def test_partial_fit_stream_equals_fit_one_pass(name):
    X, S = _random_stream(11, n=60)
    cls = LEARNERS[name]
    fitted = cls(n_epochs=1, random_state=5).fit(X, S)
    perm = np.random.RandomState(5).permutation(len(X))
    streamed = cls()
    for lo, hi in ((0, 0), (0, 1), (1, 17), (17, 60)):     # uneven chunks, incl. the empty init
        streamed.partial_fit(X[perm[lo:hi]], S[perm[lo:hi]], classes=np.arange(5))
    # (Pegasos folds its scale factor into W at the end of every call: equal up to rounding)
    np.testing.assert_allclose(fitted.W_, streamed.W_, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(fitted.predict(X), streamed.predict(X))
    unshuffled = cls(n_epochs=1, shuffle=False).fit(X, S)
    np.testing.assert_array_equal(unshuffled.W_, cls().partial_fit(X, S).W_)
    # n_epochs passes = that many streams; fit resets
    two = cls(n_epochs=2, shuffle=False).fit(X, S)
    twice = cls().partial_fit(X, S).partial_fit(X, S)
    np.testing.assert_array_equal(two.W_, twice.W_)
    np.testing.assert_array_equal(two.fit(X, S).W_, twice.W_)


@pytest.mark.parametrize("name", list(LEARNERS))
def test_prequential_equals_generic_loop(name):
    X, S = _random_stream(12, n=50)
    cls = LEARNERS[name]
    fast = cls()
    fast_preds = prequential(fast, X, S, np.arange(5))
    slow = cls().partial_fit(X[:0], S[:0], classes=np.arange(5))
    slow_preds = []
    for i in range(len(X)):
        slow_preds.append(slow.predict(X[i:i + 1])[0])
        slow.partial_fit(X[i:i + 1], S[i:i + 1])
    np.testing.assert_array_equal(fast_preds, slow_preds)
    np.testing.assert_allclose(fast.W_, slow.W_, rtol=1e-12, atol=1e-12)


def test_labels_and_classes_in_partial_fit():
    X, S = _random_stream(4, n=40, K=3)
    y = np.argmax(S, axis=1)
    names = np.array(["b", "c", "a"])
    est = PerceptronLearner().partial_fit(X, names[y], classes=["b", "c", "a"])
    ref = PerceptronLearner().partial_fit(X, np.eye(3, dtype=bool)[y])
    np.testing.assert_array_equal(est.W_, ref.W_)
    assert set(est.predict(X)) <= {"a", "b", "c"}
    with pytest.raises(ValueError, match="classes must be passed"):
        PerceptronLearner().partial_fit(X, y)
    with pytest.raises(ValueError, match="differs from classes_"):
        est.partial_fit(X, names[y], classes=["a", "b", "c"])
    with pytest.raises(ValueError, match="not among classes"):
        est.partial_fit(X[:1], ["z"])
    with pytest.raises(ValueError, match="columns"):
        est.partial_fit(X[:2], np.ones((2, 4), dtype=bool))
    with pytest.raises(ValueError, match="features"):
        est.partial_fit(X[:, :2], names[y])


def test_partial_fit_learns_the_class_names_of_a_candidate_frame():
    """A candidate DataFrame's columns are the classes (as in ``fit``), kept across chunks."""
    import pandas as pd

    X, S = _random_stream(5, n=40, K=3)
    frame = pd.DataFrame(S, columns=["owl", "cat", "dog"])
    est = PerceptronLearner().partial_fit(X[:20], frame.iloc[:20]).partial_fit(X[20:], frame.iloc[20:])
    ref = PerceptronLearner().partial_fit(X, S)
    assert est.classes_.tolist() == ["owl", "cat", "dog"]
    np.testing.assert_array_equal(est.W_, ref.W_)
    np.testing.assert_array_equal(est.predict(X), frame.columns.to_numpy()[ref.predict(X)])
    with pytest.raises(ValueError, match="columns .'cat', 'owl', 'dog'. differ from the classes"):
        est.partial_fit(X[:2], frame.iloc[:2, [1, 0, 2]])


@pytest.mark.parametrize("bad, message", [
    ({"eta": 0}, "The 'eta' parameter of AvgPerceptronLearner must be a float in the range (0.0, inf). Got 0 instead."),
    ({"eta": -1.0}, "'eta' parameter"), ({"eta": float("inf")}, "'eta' parameter"),
    ({"n_epochs": 0}, "The 'n_epochs' parameter of AvgPerceptronLearner must be an int in the range [1, inf)"),
    ({"fit_intercept": "yes"}, "'fit_intercept' parameter"), ({"shuffle": 1}, "'shuffle' parameter")])
def test_bad_perceptron_params(bad, message):
    X, S = _random_stream(1, n=10)
    for call in (lambda est: est.fit(X, S), lambda est: est.partial_fit(X, S),
                 lambda est: prequential(est, X, S, np.arange(5))):
        with pytest.raises(InvalidParameterError, match=re.escape(message)):
            call(AvgPerceptronLearner(**bad))


@pytest.mark.parametrize("bad", [{"lam": 0.0}, {"lam": float("inf")}, {"lam": "0.1"},
                                 {"shrink_on_zero_loss": 1}, {"random_state": "seed"}])
def test_bad_pegasos_params(bad):
    X, S = _random_stream(1, n=10)
    with pytest.raises(InvalidParameterError, match=f"The '{next(iter(bad))}' parameter of MaxPegasosLearner"):
        MaxPegasosLearner(**bad).fit(X, S)


def test_partial_fit_validates_params_on_the_first_call_only(monkeypatch):
    import plcore_online.learners as learners

    calls = []
    monkeypatch.setattr(learners, "validate_params", lambda est: calls.append(est))
    X, S = _random_stream(1, n=10)
    est = AvgPegasosLearner().partial_fit(X[:0], S[:0], classes=np.arange(5))
    for i in range(len(X)):
        est.partial_fit(X[i:i + 1], S[i:i + 1])
    assert calls == [est]


def test_binary_decision_function_is_a_margin():
    X, S = _random_stream(2, n=40, K=2)
    S[S.all(axis=1), 1] = False
    est = AvgPerceptronLearner().fit(X, S)
    D = est.decision_function(X)
    scores = np.hstack([X, np.ones((40, 1))]) @ est.W_
    assert D.shape == (40,)
    np.testing.assert_allclose(D, scores[:, 1] - scores[:, 0])
    np.testing.assert_array_equal(est.predict(X), (D > 0).astype(int))


# ----------------------------------------------------------------------------- exact labels
def test_singleton_sets_avg_equals_max_equals_literal_hinge_perceptron():
    rng = np.random.RandomState(8)
    X = rng.randn(120, 3)
    y = rng.randint(0, 4, 120)
    Y = np.eye(4, dtype=bool)[y]
    a = PerceptronLearner(fit_intercept=False).partial_fit(X, y, classes=np.arange(4))
    b = AvgPerceptronLearner(fit_intercept=False).partial_fit(X, Y)
    c = MaxPerceptronLearner(fit_intercept=False).partial_fit(X, Y)
    _, W, _, _ = literal_stream(X, Y, loss="max", algorithm="perceptron")
    for est in (a, b, c):
        np.testing.assert_allclose(est.W_, W, atol=1e-12)
    p = PegasosLearner(fit_intercept=False, lam=0.05).partial_fit(X, y, classes=np.arange(4))
    q = MaxPegasosLearner(fit_intercept=False, lam=0.05).partial_fit(X, Y)
    np.testing.assert_allclose(p.W_, q.W_, rtol=1e-12, atol=1e-12)


def test_singleton_sets_large_step_equals_textbook_perceptron():
    """With eta -> inf the margin 1 of the hinge vanishes (W = eta V, update iff V-margin < 1/eta):
    the learner is the textbook mistake-driven multiclass Perceptron (ties count as mistakes)."""
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True)
    order = np.random.RandomState(0).permutation(len(y))
    X, y = X[order], y[order]
    W_tb, n_tb = textbook_multiclass_perceptron(X, y, 3)
    est = PerceptronLearner(eta=1e6, fit_intercept=False).partial_fit(X, y, classes=np.arange(3))
    assert est.n_updates_ == n_tb
    np.testing.assert_allclose(est.W_ / 1e6, W_tb, atol=1e-9)
    # with eta = 1 the margin matters: more updates than the mistake-driven version
    assert PerceptronLearner(eta=1.0, fit_intercept=False).partial_fit(
        X, y, classes=np.arange(3)).n_updates_ > n_tb


def test_tags():
    for cls in LEARNERS.values():
        tags = get_pll_tags(cls())
        assert tags.online
        assert tags.exact_label_baseline == (cls in (PerceptronLearner, PegasosLearner)), cls.__name__
        assert not tags.accepts_sparse_candidates
