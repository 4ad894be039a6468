"""The single-row fast path of ``partial_fit`` / ``predict``: same numbers, same errors.

``plcore_online.learners.SINGLE_ROW_FAST_PATH = False`` keeps the old per-call path (full
validation on every call) reachable, so both run side by side here.
"""

from __future__ import annotations

import pickle
import warnings

import numpy as np
import pytest

from plcore.exceptions import DataValidationError
import plcore_online._stream as kernels
from plcore_online import learners
from plcore_online.plugin import LEARNER_OPTIONS

pytest.importorskip("numba")

#: option name -> class, from the plugin's option table (plugin.py)
LEARNERS = {option: getattr(learners, cls) for option, cls in LEARNER_OPTIONS.items()}

PARAMS = {
    "perceptron": [{}, {"eta": 0.3, "fit_intercept": False}],
    "pegasos": [{}, {"lam": 1e-3, "shrink_on_zero_loss": True}, {"lam": 0.05, "fit_intercept": False}],
}
CASES = [(name, p) for name in LEARNERS for p in PARAMS["perceptron" if "perceptron" in name else "pegasos"]]


@pytest.fixture(autouse=True)
def _compiled(monkeypatch):
    """The fast path of partial_fit needs the compiled kernels (also under PLCORE_ONLINE_NO_JIT=1)."""
    monkeypatch.setattr(kernels, "USE_JIT", True)


def _stream(seed, n=200, d=12, K=5):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d) * rng.uniform(0.5, 3.0, d)
    S = rng.rand(n, K) < 0.3
    S[np.arange(n), rng.randint(0, K, n)] = True
    S[rng.randint(0, n, 4)] = True                  # a few full candidate sets
    return X, S


def _one_at_a_time(monkeypatch, fast, cls, params, X, S):
    """predict then partial_fit, row by row; return the learner and the predictions."""
    monkeypatch.setattr(learners, "SINGLE_ROW_FAST_PATH", fast)
    est = cls(**params).partial_fit(X[:0], S[:0], classes=np.arange(S.shape[1]))
    preds = []
    for i in range(len(X)):
        preds.append(est.predict(X[i:i + 1])[0])
        est.partial_fit(X[i:i + 1], S[i:i + 1])
    return est, np.array(preds)


@pytest.fixture
def count_full_path(monkeypatch):
    """Count the calls that go through the full validation of partial_fit / predict."""
    calls = {"partial_fit": 0, "predict": 0}
    partial, predict = learners._OnlineLinearLearner._partial, learners.BaseLearner.predict

    def counted_partial(self, *a):
        calls["partial_fit"] += 1
        return partial(self, *a)

    def counted_predict(self, X):
        calls["predict"] += 1
        return predict(self, X)

    monkeypatch.setattr(learners._OnlineLinearLearner, "_partial", counted_partial)
    monkeypatch.setattr(learners.BaseLearner, "predict", counted_predict)
    return calls


@pytest.mark.parametrize("name, params", CASES)
def test_one_row_stream_is_bit_identical_to_the_old_path(monkeypatch, count_full_path, name, params):
    X, S = _stream(len(name) + len(params))
    cls = LEARNERS[name]
    fast, fast_preds = _one_at_a_time(monkeypatch, True, cls, params, X, S)
    assert count_full_path == {"partial_fit": 1, "predict": 0}        # only the first call validated
    old, old_preds = _one_at_a_time(monkeypatch, False, cls, params, X, S)
    assert count_full_path == {"partial_fit": 2 + len(X), "predict": len(X)}
    assert fast.n_updates_ > 20
    np.testing.assert_array_equal(fast_preds, old_preds)
    np.testing.assert_array_equal(fast.W_, old.W_)                   # bit for bit
    np.testing.assert_array_equal(fast.coef_, old.coef_)
    np.testing.assert_array_equal(fast.intercept_, old.intercept_)
    assert (fast.t_, fast.n_updates_) == (old.t_, old.n_updates_) == (len(X), old.n_updates_)
    np.testing.assert_array_equal(fast.predict(X), old.predict(X))
    # against the batched path: the Perceptrons carry no state but W between rows, so one call
    # over the whole stream is the same arithmetic; Pegasos folds its scale factor into W at the
    # end of every call, so a one-row stream equals the batch up to rounding
    batch = cls(**params).partial_fit(X, S)
    if "perceptron" in name:
        np.testing.assert_array_equal(fast.W_, batch.W_)
    else:
        np.testing.assert_allclose(fast.W_, batch.W_, rtol=1e-10, atol=1e-12)
    assert fast.n_updates_ == batch.n_updates_


@pytest.mark.parametrize("name", ["avg_perceptron", "max_pegasos"])
def test_prequential_kernel_equals_the_fast_one_row_loop(monkeypatch, name):
    X, S = _stream(3)
    cls = LEARNERS[name]
    _, preds = _one_at_a_time(monkeypatch, True, cls, {}, X, S)
    np.testing.assert_array_equal(learners.prequential(cls(), X, S, np.arange(5)), preds)


def _error(fn):
    with pytest.raises(Exception) as info:
        fn()
    return type(info.value), str(info.value)


BAD_ROWS = {
    "wrong width": lambda X, S: (X[:1, :-1].copy(), S[:1]),
    "wrong number of label columns": lambda X, S: (X[:1], np.ones((1, 4), dtype=bool)),
    "empty candidate row": lambda X, S: (X[:1], np.zeros((1, 5), dtype=bool)),
    "NaN": lambda X, S: (np.where(np.arange(12) == 3, np.nan, X[0])[None, :], S[:1]),
    "inf": lambda X, S: (np.where(np.arange(12) == 0, -np.inf, X[0])[None, :], S[:1]),
    "unknown label": lambda X, S: (X[:1], np.array([7])),
    "non-binary matrix": lambda X, S: (X[:1], np.full((1, 5), 2)),
    "two-row y": lambda X, S: (X[:1], S[:2]),
}


@pytest.mark.parametrize("what", list(BAD_ROWS))
@pytest.mark.parametrize("name", ["max_perceptron", "avg_pegasos"])
def test_bad_rows_raise_the_old_errors_and_change_nothing(monkeypatch, name, what):
    X, S = _stream(5)
    Xb, yb = BAD_ROWS[what](X, S)
    errors = []
    for fast in (True, False):
        monkeypatch.setattr(learners, "SINGLE_ROW_FAST_PATH", fast)
        est = LEARNERS[name]().partial_fit(X[:20], S[:20])
        est.partial_fit(X[20:21], S[20:21])
        before = est.W_, est.t_, est.n_updates_
        errors.append(_error(lambda: est.partial_fit(Xb, yb)))
        assert errors[-1][0] is DataValidationError or issubclass(errors[-1][0], ValueError)
        np.testing.assert_array_equal(est.W_, before[0])
        assert (est.t_, est.n_updates_) == before[1:]
        est.partial_fit(X[21:22], S[21:22])                          # the stream goes on
        assert est.t_ == before[1] + 1
    assert errors[0] == errors[1]
    assert "\n" not in errors[0][1]


@pytest.mark.parametrize("what", ["wrong width", "NaN", "inf"])
def test_bad_rows_in_predict_raise_the_old_errors(monkeypatch, what):
    X, S = _stream(6)
    Xb, _ = BAD_ROWS[what](X, S)
    errors = []
    for fast in (True, False):
        monkeypatch.setattr(learners, "SINGLE_ROW_FAST_PATH", fast)
        est = LEARNERS["avg_perceptron"]().partial_fit(X, S)
        errors.append(_error(lambda: est.predict(Xb)))
    assert errors[0] == errors[1]


def test_other_inputs_take_the_full_path_with_the_same_result(monkeypatch, count_full_path):
    """float32, Fortran order, lists, integer candidate matrices, (1, 1) labels: validated fully."""
    X, S = _stream(7, n=40)
    variants = [
        lambda i: (X[i:i + 1].astype(np.float32).astype(np.float64), S[i:i + 1]),   # control: fast
        lambda i: (X[i:i + 1].astype(np.float32), S[i:i + 1]),
        lambda i: (np.asfortranarray(X[i:i + 2])[:1], S[i:i + 1]),
        lambda i: (X[i:i + 1].tolist(), S[i:i + 1].tolist()),
        lambda i: (X[i:i + 1], S[i:i + 1].astype(np.int8)),
        lambda i: (X[i:i + 1], S[i:i + 1].astype(float)),
    ]
    results = []
    for fast in (True, False):
        monkeypatch.setattr(learners, "SINGLE_ROW_FAST_PATH", fast)
        est = LEARNERS["max_pegasos"]().partial_fit(X[:0], S[:0], classes=np.arange(5))
        for i in range(len(X)):
            est.partial_fit(*variants[i % len(variants)](i))
        results.append(est)
    np.testing.assert_array_equal(results[0].W_, results[1].W_)
    fast_calls = 1 + sum(1 for i in range(len(X)) if i % len(variants) != 0)
    assert count_full_path["partial_fit"] == fast_calls + 1 + len(X)


def test_one_label_at_a_time(monkeypatch, count_full_path):
    """1-D label rows (exact-label baselines, scikit-learn style) also take the fast path."""
    X, S = _stream(8, n=60, K=3)
    y = np.argmax(S, axis=1)
    names = np.array(["b", "c", "a"])
    est = learners.PerceptronLearner().partial_fit(X[:0], names[:0], classes=names)
    for i in range(len(X)):
        est.partial_fit(X[i:i + 1], names[y[i:i + 1]], classes=est.classes_)
    assert count_full_path["partial_fit"] == 1
    ref = learners.PerceptronLearner().partial_fit(X, np.eye(3, dtype=bool)[y])
    np.testing.assert_array_equal(est.W_, ref.W_)
    ints = learners.PerceptronLearner().partial_fit(X[:0], y[:0], classes=[0, 1, 2])
    for i in range(len(X)):
        ints.partial_fit(X[i:i + 1], y[i:i + 1])
    np.testing.assert_array_equal(ints.W_, ref.W_)
    assert count_full_path["partial_fit"] == 3                      # est, ref and ints: first calls
    # an unknown label, a float label and an equal but different classes array: full checks
    with pytest.raises(ValueError, match="not among classes"):
        est.partial_fit(X[:1], np.array(["z"]))
    ints.partial_fit(X[:1], np.array([1.0]))
    est.partial_fit(X[:1], names[:1], classes=names.copy())
    assert count_full_path["partial_fit"] == 6


def test_fit_then_one_row_and_refit_with_another_width(monkeypatch):
    X, S = _stream(9, n=50)
    est = LEARNERS["avg_perceptron"](n_epochs=1, shuffle=False).fit(X, S)
    est.partial_fit(X[:1], S[:1])
    ref = LEARNERS["avg_perceptron"]().partial_fit(X, S).partial_fit(X[:1], S[:1])
    np.testing.assert_array_equal(est.W_, ref.W_)
    S3 = np.eye(3, dtype=bool)[np.arange(len(X)) % 3]
    est.fit(X[:, :4], S3)                                           # new width, new classes
    est.partial_fit(X[:1, :4], S3[:1])
    with pytest.raises(ValueError, match="X has 12 features, but AvgPerceptronLearner is expecting 4"):
        est.partial_fit(X[:1], S3[:1])
    with pytest.raises(DataValidationError, match="5 columns but there are 3 classes"):
        est.partial_fit(X[:1, :4], S[:1])


def test_changed_params_between_calls_act_as_before(monkeypatch):
    X, S = _stream(10, n=30)
    out = []
    for fast in (True, False):
        monkeypatch.setattr(learners, "SINGLE_ROW_FAST_PATH", fast)
        est = LEARNERS["avg_perceptron"]().partial_fit(X[:5], S[:5])
        est.set_params(eta=0.25)
        for i in range(5, 30):
            est.partial_fit(X[i:i + 1], S[i:i + 1])
        W = est.W_
        est.set_params(fit_intercept=False)     # not meant to change mid-stream: the full path decides
        est.partial_fit(X[:1], S[:1])
        out.append((W, est.W_))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])


def test_dataframe_fitted_learner_keeps_the_feature_name_warning():
    pd = pytest.importorskip("pandas")
    X, S = _stream(11, n=30)
    est = LEARNERS["avg_perceptron"]().partial_fit(pd.DataFrame(X, columns=[f"f{j}" for j in range(12)]), S)
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        est.partial_fit(X[:1], S[:1])
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        est.predict(X[:1])


def test_pickled_learner_continues_on_the_fast_path(count_full_path):
    X, S = _stream(12, n=40)
    est = LEARNERS["max_pegasos"]().partial_fit(X[:20], S[:20])
    est2 = pickle.loads(pickle.dumps(est))
    for i in range(20, 40):
        est.partial_fit(X[i:i + 1], S[i:i + 1])
        est2.partial_fit(X[i:i + 1], S[i:i + 1])
    assert count_full_path["partial_fit"] == 1
    np.testing.assert_array_equal(est.W_, est2.W_)


def test_numpy_reference_path_validates_every_call(monkeypatch, count_full_path):
    monkeypatch.setattr(kernels, "USE_JIT", False)
    X, S = _stream(13, n=20)
    est = LEARNERS["avg_pegasos"]().partial_fit(X[:1], S[:1])
    for i in range(1, 20):
        est.partial_fit(X[i:i + 1], S[i:i + 1])
    assert count_full_path["partial_fit"] == 20
    # predict's one-row path works without numba too (numpy copy and NaN/inf check)
    preds = [est.predict(X[i:i + 1])[0] for i in range(20)]
    assert count_full_path["predict"] == 0
    monkeypatch.setattr(learners, "SINGLE_ROW_FAST_PATH", False)
    np.testing.assert_array_equal(preds, [est.predict(X[i:i + 1])[0] for i in range(20)])
    Xb = np.where(np.arange(12) == 2, np.nan, X[0])[None, :]
    old = _error(lambda: est.predict(Xb))
    monkeypatch.setattr(learners, "SINGLE_ROW_FAST_PATH", True)
    assert _error(lambda: est.predict(Xb)) == old
    monkeypatch.setattr(kernels, "USE_JIT", True)
    jit = LEARNERS["avg_pegasos"]().partial_fit(X[:1], S[:1])
    for i in range(1, 20):
        jit.partial_fit(X[i:i + 1], S[i:i + 1])
    np.testing.assert_array_equal(est.W_, jit.W_)


def test_fast_path_signatures_are_those_of_the_stream():
    """The one-row kernels call the stream kernels with the stream's argument types: nothing
    is compiled twice."""
    X, S = _stream(14, n=10)
    for name in ("avg_perceptron", "avg_pegasos"):
        est = LEARNERS[name]()
        learners.prequential(est, X, S, np.arange(5))
        for i in range(len(X)):
            est.partial_fit(X[i:i + 1], S[i:i + 1])
    if kernels.USE_JIT:
        perceptron, pegasos = kernels._jit_kernels()
        assert len(perceptron.signatures) == 1 and len(pegasos.signatures) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est.predict(X[:1])


def test_a_fitted_learner_is_written_with_skops_as_a_run_model():
    """Its stream state (``__slots__``) is written as a plain dict: skops writes the learner, and
    the copy read back predicts the same."""
    import skops.io as sio

    from plcore.registry import model_packages
    from plcore.tracking.models import choose_format

    rng = np.random.RandomState(0)
    X, y = rng.randn(30, 4), np.arange(30) % 3
    est = learners.AvgPegasosLearner().fit(X, np.eye(3, dtype=bool)[y])
    fmt, types, why = choose_format(est, model_packages())
    assert (fmt, why) == ("skops", None)
    np.testing.assert_array_equal(sio.loads(sio.dumps(est), trusted=types).predict(X), est.predict(X))
