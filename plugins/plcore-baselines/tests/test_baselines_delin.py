"""DELIN (Wu & Zhang, KDD 2019): LDA equivalence with exact labels, the eigen-equation and its
constraint, the rank bound, a planted signal subspace, the kNN update vs literal loops, learning
on digits (conformance: test_conformance.py)."""

import warnings

import numpy as np
import pytest
import scipy.linalg as sla
from sklearn.datasets import load_digits, load_iris, load_wine
from sklearn.decomposition import PCA
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.neighbors import NearestNeighbors
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from plcore.datasets import UniformBags
from plcore.exceptions import DataValidationError, InvalidParameterError
from plcore.learners import PlKnnLearner
from plcore_baselines._delin import knn_disambiguation, weighted_lda, weighted_scatter
from plcore_baselines.delin import DelinReducer


def _sin_largest_angle(A, B):
    """sin of the largest principal angle between span(A) and span(B)."""
    Qa, Qb = np.linalg.qr(A)[0], np.linalg.qr(B)[0]
    return float(np.linalg.norm(Qa - Qb @ (Qb.T @ Qa), 2))


# ----------------------------------------------------------------------------- LDA step
@pytest.mark.parametrize("loader", [load_wine, load_iris])
def test_exact_labels_give_sklearn_lda(loader):
    """One-hot confidences (1-D labels or singleton candidate sets): DELIN == LDA(solver="eigen")."""
    X, y = loader(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    q = np.unique(y).size
    lda = LinearDiscriminantAnalysis(solver="eigen").fit(X, y)
    Q = lda.scalings_[:, :q - 1]
    for target in (y, np.eye(q, dtype=bool)[y]):
        est = DelinReducer(reg=0.0).fit(X, target)
        assert est.converged_ and est.n_iter_ == 1 and est.n_components_ == q - 1
        np.testing.assert_array_equal(est.confidences_, np.eye(q)[y])
        P = est.projection_
        signs = np.sign(np.sum(P * Q, axis=0))
        np.testing.assert_allclose(P, Q * signs, atol=1e-8 * np.abs(Q).max())
        np.testing.assert_allclose(est.transform(X), lda.transform(X) * signs, atol=1e-8)
        np.testing.assert_allclose(est.components_, P.T)


def test_weighted_scatter_matches_class_by_class_sums():
    rng = np.random.RandomState(0)
    n, d, q = 50, 5, 4
    X = rng.randn(n, d)
    F = rng.dirichlet(np.ones(q), size=n)
    St, Sb, Sw = weighted_scatter(X, F)
    mu = X.mean(axis=0)
    Sb_ref, Sw_ref = np.zeros((d, d)), np.zeros((d, d))
    for c in range(q):
        m_c = F[:, c].sum()
        mu_c = (F[:, c, None] * X).sum(axis=0) / m_c
        Sb_ref += m_c * np.outer(mu_c - mu, mu_c - mu)
        for i in range(n):
            Sw_ref += F[i, c] * np.outer(X[i] - mu_c, X[i] - mu_c)
    np.testing.assert_allclose(Sb, Sb_ref / n, atol=1e-12)
    np.testing.assert_allclose(Sw, Sw_ref / n, atol=1e-12)
    np.testing.assert_allclose(St, np.cov(X.T, bias=True), atol=1e-12)


@pytest.mark.parametrize("reg", [0.0, 1e-2])
def test_eigen_equation_and_constraint(reg):
    """S_b P = (S_w + rI) P diag(lambda), P^T (S_w + rI) P = I, lambda = the top of eigh(S_b, S_w + rI)."""
    rng = np.random.RandomState(1)
    n, d, q = 90, 7, 5
    X = rng.randn(n, d) @ rng.randn(d, d)
    S = UniformBags(r=2).generate(rng.randint(q, size=n), n_classes=q, random_state=rng)
    F = np.where(S, rng.rand(n, q), 0.0)
    F /= F.sum(axis=1, keepdims=True)
    P, lam, (_, ridge, _) = weighted_lda(X, F, q - 1, reg=reg)
    St, Sb, Sw = weighted_scatter(X, F)
    Swr = Sw + ridge * np.eye(d)
    assert ridge == pytest.approx(reg * np.trace(St) / d)
    np.testing.assert_allclose(Sb @ P, Swr @ P * lam, atol=1e-9 * np.abs(Sb).max())
    np.testing.assert_allclose(P.T @ Swr @ P, np.eye(q - 1), atol=1e-9)
    ref = sla.eigh(Sb, Swr, eigvals_only=True)[::-1][:q - 1]
    np.testing.assert_allclose(lam, ref, rtol=1e-8)
    assert np.all(np.diff(lam) <= 1e-12) and lam.min() >= 0


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_n_components_bound():
    rng = np.random.RandomState(2)
    X = rng.randn(60, 6)
    S = UniformBags(r=1).generate(rng.randint(5, size=60), n_classes=5, random_state=rng)
    assert DelinReducer(max_iter=2).fit(X, S).n_components_ == 4            # q - 1
    assert DelinReducer(max_iter=2).fit(X[:, :2], S).n_components_ == 2     # d < q - 1
    assert DelinReducer(n_components=3, max_iter=2).fit(X, S).transform(X).shape == (60, 3)
    with pytest.raises(DataValidationError, match="exceeds min"):          # depends on the data
        DelinReducer(n_components=5).fit(X, S)
    for params in ({"n_components": 0}, {"n_components": 1.5}, {"k": 0}, {"max_iter": 0}, {"tol": -1.0},
                   {"reg": -1e-3}, {"update": "mean"}):
        (name,) = params
        with pytest.raises(InvalidParameterError, match=f"The '{name}' parameter of DelinReducer must be"):
            DelinReducer(**params).fit(X, S)


def test_recovers_a_planted_signal_subspace():
    """Classes differ only in features 0-1; features 2-9 are high-variance noise. DELIN's 2-D
    projection spans the signal plane (PCA's spans noise) and disambiguates the bags."""
    rng = np.random.RandomState(3)
    n, d, q = 400, 10, 4
    y = rng.randint(q, size=n)
    centres = 3.0 * np.array([[1, 1], [1, -1], [-1, 1], [-1, -1]])
    X = np.hstack([centres[y] + 0.7 * rng.randn(n, 2), 4.0 * rng.randn(n, d - 2)])
    S = UniformBags(r=1).generate(y, n_classes=q, random_state=rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est = DelinReducer(n_components=2).fit(X, S)
    signal = np.eye(d)[:, :2]
    assert _sin_largest_angle(est.projection_, signal) < 0.1
    assert _sin_largest_angle(PCA(2).fit(X).components_.T, signal) > 0.9
    assert np.mean(np.argmax(est.confidences_, axis=1) == y) > 0.9


# ----------------------------------------------------------------------------- kNN step
def literal_vote_update(Z, F, S, k):
    """DELIN.m's update, one example at a time."""
    n, q = F.shape
    nbr = NearestNeighbors(n_neighbors=k).fit(Z).kneighbors(return_distance=False)
    out = F.copy()
    for i in range(n):
        cand = [c for c in range(q) if S[i, c]]
        score = {c: sum((k - a) * F[j, c] for a, j in enumerate(nbr[i])) for c in cand}
        count = {c: sum(1 for j in nbr[i] if F[j, c] > 0) for c in cand}
        top = max(score.values())
        if top <= 0:
            continue
        best = [c for c in cand if abs(score[c] - top) <= 1e-12 * max(1.0, top)]
        v = max(count[c] for c in best)
        best = [c for c in best if count[c] == v]
        if v * len(best) > k:
            best = best[:1]
        if len(best) == len(cand):
            continue
        others = [c for c in cand if c not in best]
        row = np.zeros(q)
        for c in best:
            row[c] = v / k
        for c in others:
            row[c] = max(1 - v * len(best) / k, 0.0) / len(others)
        out[i] = row / row.sum()
    return out


def literal_aggregate_update(Z, F, S, k):
    nbr = NearestNeighbors(n_neighbors=k).fit(Z).kneighbors(return_distance=False)
    out = np.zeros_like(F)
    for i in range(F.shape[0]):
        b = F[i] + sum(F[j] for j in nbr[i])
        b = np.where(S[i], b, 0.0)
        out[i] = b / b.sum()
    return out


@pytest.mark.parametrize("uniform", [True, False])
def test_knn_updates_equal_literal_loops(uniform):
    rng = np.random.RandomState(4)
    n, q, k = 60, 5, 4
    Z = rng.randn(n, 3)
    S = UniformBags(r=2).generate(rng.randint(q, size=n), n_classes=q, random_state=rng)
    S[:5] = False                     # a few singletons and a full row
    S[np.arange(5), rng.randint(q, size=5)] = True
    S[5] = True
    F = S / S.sum(axis=1, keepdims=True)     # uniform start: many exact ties
    if not uniform:
        F = np.where(S & (rng.rand(n, q) < 0.8), rng.rand(n, q), 0.0)
        F[F.sum(axis=1) == 0] = S[F.sum(axis=1) == 0]
        F /= F.sum(axis=1, keepdims=True)
    new = knn_disambiguation(Z, F, S, k, update="vote")
    np.testing.assert_allclose(new, literal_vote_update(Z, F, S, k), atol=1e-12)
    assert not np.allclose(new, F)
    np.testing.assert_allclose(knn_disambiguation(Z, F, S, k, update="aggregate"),
                               literal_aggregate_update(Z, F, S, k), atol=1e-12)
    for G in (new, knn_disambiguation(Z, F, S, k, update="aggregate")):
        assert np.abs(G[~S]).max() == 0 and np.allclose(G.sum(axis=1), 1.0)


# ----------------------------------------------------------------------------- it learns
@pytest.mark.parametrize("update", ["vote", "aggregate"])
def test_plknn_after_delin_learns_on_digits(update):
    """digits, uniform bags r = 2, holdout 25 %. Measured: 0.953 (vote), 0.960 (aggregate);
    candidate-frequency baseline 0.100."""
    X, y = load_digits(return_X_y=True)
    S = UniformBags(r=2, random_state=0).generate(y)
    Xtr, Xte, Str, _, ytr, yte = train_test_split(X, S, y, test_size=0.25, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        pipe = make_pipeline(StandardScaler(), DelinReducer(max_iter=10, update=update),
                             PlKnnLearner()).fit(Xtr, Str)
    acc = np.mean(pipe.predict(Xte) == yte)
    baseline = np.mean(yte == np.argmax(Str.sum(axis=0)))
    trans = np.mean(np.argmax(pipe[1].confidences_, axis=1) == ytr)
    print(f"digits r=2 holdout: PL-KNN-DELIN ({update}) {acc:.3f} (disambiguation {trans:.3f}), "
          f"candidate-frequency baseline {baseline:.3f}")
    assert pipe[1].n_components_ == 9
    assert baseline < 0.2
    assert acc >= 0.85 and acc >= baseline + 0.6

