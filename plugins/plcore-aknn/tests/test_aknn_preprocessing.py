"""AknnPreprocessor against a literal row-by-row version of the paper's Appendix D.2 steps."""

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline

from plcore.exceptions import InvalidParameterError
from plcore_aknn import AknnLearner, AknnPreprocessor


def _knn(ref, x, k, exclude=None):
    d = np.sqrt(((ref - x) ** 2).sum(axis=1))
    if exclude is not None:
        d[exclude] = np.inf
    order = np.argsort(d, kind="stable")[:k]
    return order, d[order]


def literal(Xtr, Xte, first, mix_k, alpha, temp, dens_k):
    """Steps 1-4 of Appendix D.2 written one row at a time."""
    if first == "cube_root":
        A, B = np.sign(Xtr) * np.abs(Xtr) ** (1 / 3), np.sign(Xte) * np.abs(Xte) ** (1 / 3)
    else:
        mu = Xtr.mean(axis=0)
        A, B = Xtr - mu, Xte - mu
    l2 = lambda v: v / (np.linalg.norm(v) + 1e-12)
    A = np.array([l2(r) for r in A])
    B = np.array([l2(r) for r in B])

    def smooth(x, ref, exclude):
        idx, d = _knn(ref, x, mix_k, exclude)
        sigma = np.median(d) * temp + 1e-12
        w = np.exp(-d ** 2 / (2 * sigma ** 2))
        w = w / (w.sum() + 1e-12)
        return l2((1 - alpha) * x + alpha * (w[:, None] * ref[idx]).sum(axis=0))

    As = np.array([smooth(A[i], A, i) for i in range(len(A))])
    Bs = np.array([smooth(B[i], As, None) for i in range(len(B))])
    tr = np.array([As[i] / (_knn(As, As[i], dens_k, i)[1].mean() + 1e-12) for i in range(len(As))])
    te = np.array([Bs[i] / (_knn(As, Bs[i], dens_k)[1].mean() + 1e-12) for i in range(len(Bs))])
    return tr, te


@pytest.mark.parametrize("first,alpha", [("cube_root", 0.1), ("center", 0.25)])
def test_matches_literal_pipeline(first, alpha):
    rng = np.random.RandomState(0)
    Xtr, Xte = rng.normal(size=(60, 5)) * 3, rng.normal(size=(25, 5)) * 3
    pre = AknnPreprocessor(first=first, mix_k=6, mix_alpha=alpha, smooth_temp=1.0, density_k=9)
    got_tr = pre.fit_transform(Xtr)
    got_te = pre.transform(Xte)
    ref_tr, ref_te = literal(Xtr, Xte, first, 6, alpha, 1.0, 9)
    np.testing.assert_allclose(got_tr, ref_tr, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(got_te, ref_te, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(AknnPreprocessor(first=first, mix_k=6, mix_alpha=alpha,
                                                density_k=9).fit(Xtr).transform(Xte), got_te)


def test_in_a_pipeline_with_candidates():
    rng = np.random.RandomState(1)
    X = rng.normal(size=(120, 4))
    y = (X[:, 0] > 0).astype(int)
    S = np.zeros((120, 3), bool)
    S[np.arange(120), y] = True
    S[:, 2] = rng.random_sample(120) < 0.4
    pipe = make_pipeline(AknnPreprocessor(), AknnLearner(k_max=10)).fit(X, S)
    assert np.mean(pipe.predict(X) == y) > 0.8


def test_bad_params():
    X = np.ones((5, 2))
    for bad in ({"first": "log"}, {"mix_k": -1}, {"mix_alpha": 1.5}, {"smooth_temp": 0},
                {"smooth_temp": float("inf")}, {"density_k": 2.5}):
        with pytest.raises(InvalidParameterError):
            AknnPreprocessor(**bad).fit(X)
    with pytest.raises(InvalidParameterError, match=r"The 'mix_k' parameter of AknnPreprocessor must be "
                                                    r"an int in the range \[0, inf\)\. Got -1 instead\."):
        AknnPreprocessor(mix_k=-1).fit(X)


def test_registered_as_preprocessor_aknn(monkeypatch):
    from plcore.run.pipeline import make_preprocessor
    from plcore.registry import Registry

    with monkeypatch.context() as m:
        m.setenv("PLCORE_LOAD_PLUGINS", "aknn")
        reg = Registry().load()
    assert not reg.errors
    assert reg.get("preprocessor", "aknn").spec.cls is AknnPreprocessor
    assert ("preprocessor", "aknn") in {(row["kind"], row["name"]) for row in reg.table()}
    made = make_preprocessor("aknn")
    assert isinstance(made, AknnPreprocessor) and made.get_params() == AknnPreprocessor().get_params()
    # a dotted class path still works (Hydra style), giving the same transformer
    dotted = make_preprocessor("plcore_aknn.AknnPreprocessor")
    assert type(dotted) is AknnPreprocessor and dotted.get_params() == made.get_params()
