"""The numba-compiled loops equal the plain-numpy reference loops bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import plcore_online._stream as kernels
from plcore_online import learners
from plcore_online.learners import prequential
from plcore_online.plugin import LEARNER_OPTIONS

pytest.importorskip("numba")

#: option name -> class, from the plugin's option table (plugin.py)
LEARNERS = {option: getattr(learners, cls) for option, cls in LEARNER_OPTIONS.items()}


def _stream(seed, n=300, d=12, K=6):
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d) * rng.uniform(0.5, 3.0, d)   # d >= 8: BLAS would round identical rows apart
    S = rng.rand(n, K) < 0.3
    S[np.arange(n), rng.randint(0, K, n)] = True
    S[rng.randint(0, n, 5)] = True                   # a few full candidate sets
    return X, S


def _run(monkeypatch, jit, cls, params, X, S):
    monkeypatch.setattr(kernels, "USE_JIT", jit)
    est = cls(**params)
    K = S.shape[1]
    preds = np.r_[prequential(est, X[:100], S[:100], np.arange(K)),
                  prequential(est, X[100:], S[100:], np.arange(K))]   # state carries over
    fitted = cls(n_epochs=2, random_state=0, **params).fit(X, S)
    return est, preds, fitted


CASES = [(name, params) for name in LEARNERS for params in (
    [{"eta": 1.0}, {"eta": 0.3, "fit_intercept": False}] if "perceptron" in name else
    [{"lam": 0.1}, {"lam": 1e-3, "shrink_on_zero_loss": True}, {"lam": 0.05, "fit_intercept": False}])]


@pytest.mark.parametrize("name, params", CASES)
def test_compiled_equals_numpy(monkeypatch, name, params):
    X, S = _stream(len(name) + len(params))
    cls = LEARNERS[name]
    a, pa, fa = _run(monkeypatch, True, cls, params, X, S)
    b, pb, fb = _run(monkeypatch, False, cls, params, X, S)
    assert a.n_updates_ > 50                         # non-trivial stream
    np.testing.assert_array_equal(pa, pb)
    np.testing.assert_array_equal(a.W_, b.W_)        # same arithmetic: bit-identical
    assert (a.t_, a.n_updates_) == (b.t_, b.n_updates_)
    np.testing.assert_array_equal(fa.W_, fb.W_)
    np.testing.assert_array_equal(fa.predict(X), fb.predict(X))


@pytest.mark.parametrize("jit", [True, False])
def test_exact_ties_go_to_the_lowest_class(monkeypatch, jit):
    """After one Avg update all candidate rows are identical, so their scores tie exactly on any
    x (d = 40, where BLAS's ``W @ x`` rounds identical rows apart); ties go to the lowest class."""
    monkeypatch.setattr(kernels, "USE_JIT", jit)
    rng = np.random.RandomState(6)                  # numpy 2.4 / OpenBLAS: (W @ x).argmax() = 4 here
    X = rng.randn(2, 40)
    X[1] = 0.7 * X[0] + 0.1 * X[1]                  # x0 . x1 > 0
    S = np.zeros((2, 5), dtype=bool)
    S[0, [2, 3, 4]] = True                          # t=1: w2 = w3 = w4 = x0/3, w0 = -x0, w1 = 0
    S[1, 0] = True
    st = kernels.StreamState(5, 40)
    kernels.run_stream(st, X[:1], S[:1], loss="avg", algorithm="perceptron")
    np.testing.assert_array_equal(st.Wt[2], st.Wt[3])
    np.testing.assert_array_equal(st.Wt[2], st.Wt[4])
    preds = kernels.run_stream(st, X[1:], S[1:], loss="avg", algorithm="perceptron")
    assert preds[0] == 2                            # scores (-a, 0, a/3, a/3, a/3), a > 0
    # the top non-candidate (tie 2/3/4 -> 2) took the update: w2 != w3 == w4
    assert not np.array_equal(st.Wt[2], st.Wt[3])
    np.testing.assert_array_equal(st.Wt[3], st.Wt[4])


def test_compiled_path_is_used_and_compiled_once():
    assert kernels.jit_available()
    X, S = _stream(1, n=20)
    for name in ("avg_perceptron", "max_pegasos"):
        prequential(LEARNERS[name](), X, S, np.arange(6))
    if kernels.USE_JIT:
        perceptron, pegasos = kernels._jit_kernels()
        assert len(perceptron.signatures) == 1 and len(pegasos.signatures) == 1


def test_compile_kernels(monkeypatch):
    """The documented ``compile_kernels()`` builds both compiled kernels and returns the seconds taken."""
    monkeypatch.setattr(kernels, "USE_JIT", True)
    seconds = kernels.compile_kernels()
    assert isinstance(seconds, float) and seconds >= 0.0
    perceptron, pegasos = kernels._jit_kernels()
    assert len(perceptron.signatures) == 1 and len(pegasos.signatures) == 1
    X, S = _stream(2, n=40)
    for name in ("max_perceptron", "avg_pegasos"):       # the compiled kernels then run
        preds = prequential(LEARNERS[name](), X, S, np.arange(6))
        assert preds.shape == (40,)
    assert len(perceptron.signatures) == 1 and len(pegasos.signatures) == 1   # nothing recompiled


@pytest.mark.parametrize("value, jit", [(None, True), ("", True), ("0", True), ("1", False),
                                        ("true", False), ("YES", False), ("on", False)])
def test_env_variable_selects_numpy(value, jit):
    env = {} if value is None else {"PLCORE_ONLINE_NO_JIT": value}
    assert kernels._jit_from_env(env) is jit
