"""CENDA against a literal dense implementation, invariants, ill-posed inputs, known answers."""

import warnings

import numpy as np
import pytest
import scipy.linalg as sla
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.pipeline import make_pipeline

from plcore.exceptions import InvalidParameterError
from plcore.learners import PlKnnLearner
from plcore_cenda import CendaConditioningWarning, CendaPlKnnLearner, CendaReducer
from plcore_cenda._projection import select_n_components, subspace_distance

from cenda_reference import dense_cenda  # tests/cenda_reference.py (tests/conftest.py puts tests/ on sys.path)


def random_pl(m=60, d=10, q=5, r=1, offset=0.0, seed=0, signal=1.5):
    """Gaussian classes (shifted by ``offset``: nothing is centred) with r false positives."""
    rng = np.random.RandomState(seed)
    y = rng.randint(q, size=m)
    means = rng.normal(scale=signal, size=(q, d))
    X = means[y] + rng.normal(size=(m, d)) + offset
    S = np.zeros((m, q), dtype=bool)
    S[np.arange(m), y] = True
    for i in range(m):
        S[i, rng.choice(np.setdiff1d(np.arange(q), [y[i]]), size=r, replace=False)] = True
    return X, S, y


def _quiet_fit(est, X, S):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X, S)


def assert_same_subspace(P, Q, atol=1e-7):
    assert P.shape == Q.shape
    assert np.max(sla.subspace_angles(P, Q)) < atol


def assert_same_columns_up_to_sign(P, Q, rtol=1e-6):
    for j in range(P.shape[1]):
        s = np.sign(P[:, j] @ Q[:, j])
        np.testing.assert_allclose(P[:, j], s * Q[:, j], rtol=rtol, atol=rtol * np.abs(Q[:, j]).max())


# ----------------------------------------------------------------------------- dense reference
@pytest.mark.parametrize("shape, offset, mu, thr", [
    ((60, 10, 5), 0.0, 0.5, 0.999),
    ((50, 12, 6), 3.0, 0.3, 0.9),       # uncentred features: the implicit H must be right
    ((20, 35, 4), -1.0, 0.5, 0.999),    # d > m
    ((70, 8, 7), 0.5, 0.0, 0.99),       # mu = 0: B = I
])
def test_matches_dense_reference_every_iteration(shape, offset, mu, thr):
    m, d, q = shape
    X, S, _ = random_pl(m, d, q, r=2, offset=offset, seed=m + d)
    T = 4
    _, _, _, hist = dense_cenda(X, S, thr=thr, mu=mu, k=5, max_iter=T, tol=0.0)
    assert len(hist) == T
    for t in range(1, T + 1):
        red = _quiet_fit(CendaReducer(thr=thr, mu=mu, k=5, max_iter=t, tol=0.0), X, sp.csr_matrix(S))
        ref = hist[t - 1]
        assert red.n_iter_ == t
        lam_ref = ref["eigenvalues"]
        r = red.eigenvalues_.size
        assert r == min(d, q)
        np.testing.assert_allclose(red.eigenvalues_, lam_ref[:r], rtol=1e-7, atol=1e-9 * lam_ref[0])
        assert np.all(lam_ref[r:] == 0)                 # rank(A) <= q
        assert red.n_components_ == ref["P"].shape[1]
        assert_same_subspace(red.projection_, ref["P"])
        assert_same_columns_up_to_sign(red.projection_, ref["P"])
        np.testing.assert_allclose(red.confidences_, ref["Y"], rtol=1e-9, atol=1e-12)


def test_matches_dense_reference_fixed_components_and_alpha():
    X, S, _ = random_pl(40, 9, 4, r=1, offset=2.0, seed=7)
    P_ref, lam_ref, Y_ref, hist = dense_cenda(X, S, n_components=2, alpha=0.3, k=3, max_iter=6, tol=1e-9)
    red = _quiet_fit(CendaReducer(n_components=2, alpha=0.3, k=3, max_iter=6, tol=1e-9), X, S)
    assert red.n_iter_ == len(hist)
    assert_same_subspace(red.projection_, P_ref)
    np.testing.assert_allclose(red.confidences_, Y_ref, rtol=1e-9, atol=1e-12)


def test_default_run_matches_dense_reference_to_convergence():
    X, S, _ = random_pl(80, 6, 4, r=1, seed=3, signal=3.0)
    P_ref, lam_ref, Y_ref, hist = dense_cenda(X, S)
    red = _quiet_fit(CendaReducer(), X, S)
    assert red.n_iter_ == len(hist)
    assert_same_subspace(red.projection_, P_ref)
    np.testing.assert_allclose(red.confidences_, Y_ref, rtol=1e-9, atol=1e-12)


# ----------------------------------------------------------------------------- invariants
def test_constraint_orthonormality_and_rank():
    X, S, _ = random_pl(200, 30, 6, r=2, offset=1.0, seed=11)
    red = _quiet_fit(CendaReducer(thr=1.0, max_iter=5), X, S)
    P = red.projection_
    B = 0.5 * X.T @ X + 0.5 * np.eye(X.shape[1])
    np.testing.assert_allclose(P.T @ B @ P, np.eye(P.shape[1]), atol=1e-9)      # Eq. (9)
    assert red.n_components_ <= S.shape[1] - 1                                      # rank(H Y) <= q - 1
    assert red.eigenvalues_[-1] == 0.0
    # the kept eigenpairs solve Eq. (12): A p = lambda B p
    Y = red.confidences_
    # (recompute A from the confidences that produced P: one more iteration's input)
    red1 = _quiet_fit(CendaReducer(thr=1.0, max_iter=1), X, S)
    Y0 = S / S.sum(axis=1, keepdims=True)
    C = (X - X.mean(axis=0)).T @ Y0
    A = C @ C.T
    P1 = red1.projection_
    np.testing.assert_allclose(A @ P1, B @ P1 * red1.eigenvalues_[:P1.shape[1]], rtol=1e-7,
                               atol=1e-8 * np.abs(A @ P1).max())
    assert Y.shape == S.shape


def test_confidences_on_candidates_sum_to_one_and_transform():
    X, S, _ = random_pl(120, 15, 8, r=3, seed=5)
    red = _quiet_fit(CendaReducer(max_iter=10), X, sp.csr_matrix(S))
    Y = red.confidences_
    assert np.all(Y >= 0) and np.all(Y[~S] == 0)
    np.testing.assert_allclose(Y.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(red.transform(X), X @ red.projection_)
    assert red.transform(X).shape == (120, red.n_components_)
    assert red.n_components_ <= S.shape[1]


def test_select_n_components_eq7():
    lam = np.array([5.0, 3.0, 1.0, 0.5, 0.0, 0.0])
    assert select_n_components(lam, 0.5) == 1          # 5 >= 0.5 * 9.5
    assert select_n_components(lam, 0.84) == 2         # 8 >= 7.98
    assert select_n_components(lam, 0.85) == 3         # 8 < 8.075 <= 9
    assert select_n_components(lam, 0.9) == 3          # 9 >= 8.55
    assert select_n_components(lam, 1.0) == 4          # all positive ones, never the zeros
    assert select_n_components(np.zeros(3), 0.9) == 0


def test_subspace_distance_is_sign_and_scale_invariant():
    rng = np.random.RandomState(0)
    P = rng.normal(size=(10, 3))
    assert subspace_distance(P, -2.0 * P[:, ::-1]) < 1e-12
    assert subspace_distance(P, P[:, :2]) == 1.0
    Q = P.copy()
    Q[:, 0] += 1e-4 * rng.normal(size=10)
    assert 0 < subspace_distance(P, Q) < 1e-3


def test_n_components_bounds():
    X, S, _ = random_pl(60, 10, 4)
    red = _quiet_fit(CendaReducer(n_components=4), X, S)
    assert red.n_components_ == 4 and red.projection_.shape == (10, 4)
    with pytest.raises(ValueError, match="n_components"):
        CendaReducer(n_components=5).fit(X, S)


@pytest.mark.parametrize("params", [dict(thr=0.0), dict(thr=1.5), dict(mu=-0.1), dict(mu=1.2),
                                    dict(k=0), dict(alpha=-1.0), dict(max_iter=0), dict(tol=-1.0),
                                    dict(n_components=0), dict(algorithm="nope"), dict(k=2.5)])
def test_bad_params_raise(params):
    X, S, _ = random_pl(30, 5, 3)
    with pytest.raises(ValueError):
        CendaReducer(**params).fit(X, S)


# ----------------------------------------------------------------------------- ill-posed B
def test_mu_one_with_more_features_than_samples_warns_and_works():
    X, S, _ = random_pl(15, 40, 3, seed=2)
    with pytest.warns(CendaConditioningWarning, match="ill-posed"):
        red = _fit_catching_other(CendaReducer(mu=1.0, max_iter=3), X, S)
    assert red.ridge_ > 0
    assert np.all(np.isfinite(red.projection_)) and np.all(np.isfinite(red.confidences_))
    B = X.T @ X + red.ridge_ * np.eye(40)
    np.testing.assert_allclose(red.projection_.T @ B @ red.projection_, np.eye(red.n_components_), atol=1e-6)


def test_collinear_features_mu_one_warn_but_mu_half_does_not():
    X, S, _ = random_pl(100, 6, 3, seed=4)
    X = np.hstack([X, X[:, :2]])   # duplicated columns: X^T X singular
    with pytest.warns(CendaConditioningWarning):
        _fit_catching_other(CendaReducer(mu=1.0, max_iter=2), X, S)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CendaConditioningWarning)
        red = _quiet_fit_except(CendaReducer(mu=0.5, max_iter=2), X, S)
    assert red.ridge_ == 0.0


def test_d_greater_than_m_default_mu():
    X, S, _ = random_pl(25, 300, 5, seed=9)
    red = _quiet_fit(CendaReducer(), X, S)
    assert red.ridge_ == 0.0 and red.projection_.shape[0] == 300
    assert red.n_components_ <= 4


def test_uninformative_candidates_warn():
    X, _, _ = random_pl(30, 5, 3)
    S = np.ones((30, 3), dtype=bool)   # every label everywhere: H Y = 0
    with pytest.warns(UserWarning, match="no positive eigenvalue"):
        red = _fit_catching_other(CendaReducer(max_iter=2), X, S)
    assert red.n_components_ == 1
    np.testing.assert_allclose(red.confidences_, 1 / 3)


def _fit_catching_other(est, X, S):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=Warning)
        warnings.simplefilter("always", CendaConditioningWarning)
        warnings.simplefilter("always", UserWarning)
        from sklearn.exceptions import ConvergenceWarning
        warnings.simplefilter("ignore", ConvergenceWarning)
        return est.fit(X, S)


def _quiet_fit_except(est, X, S):
    from sklearn.exceptions import ConvergenceWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        warnings.simplefilter("error", CendaConditioningWarning)
        return est.fit(X, S)


# ----------------------------------------------------------------------------- known answers
def signal_in_three_dims(m=600, d=60, q=4, seed=0):
    """Class means differ only in features 0, 1, 2; the other 57 are pure noise."""
    rng = np.random.RandomState(seed)
    y = rng.randint(q, size=m)
    centres = np.array([[1, 1, 1], [1, -1, -1], [-1, 1, -1], [-1, -1, 1]], dtype=float)[:q] * 2.0
    X = rng.normal(size=(m, d))
    X[:, :3] = centres[y] + 0.5 * rng.normal(size=(m, 3))
    S = np.zeros((m, q), dtype=bool)
    S[np.arange(m), y] = True
    S[np.arange(m), (y + 1 + rng.randint(q - 1, size=m)) % q] = True   # one false positive
    return X, S, y


def test_subspace_aligns_with_signal_dimensions():
    X, S, y = signal_in_three_dims()
    red = _quiet_fit(CendaReducer(), X, S)
    assert red.n_components_ == 3
    angles = sla.subspace_angles(red.projection_, np.eye(60)[:, :3])
    assert np.max(angles) < 0.2, angles                  # radians; 57 noise dims
    # disambiguation on this easy data recovers the truth
    assert np.mean(np.argmax(red.confidences_, axis=1) == y) > 0.95
    # with the true labels as candidates the alignment is at least as good
    red_true = _quiet_fit(CendaReducer(), X, np.eye(4, dtype=bool)[y])
    assert np.max(sla.subspace_angles(red_true.projection_, np.eye(60)[:, :3])) < 0.2


def test_cenda_helps_plknn_on_noisy_features_and_converges():
    X, S, y = signal_in_three_dims(m=900, seed=1)
    X[:, :3] *= 0.5                      # weaker signal: plain PL-KNN drowns in the noise dims
    tr, te = slice(0, 600), slice(600, None)
    base = PlKnnLearner(k=10).fit(X[tr], S[tr]).score(X[te], y[te])
    pipe = make_pipeline(CendaReducer(), PlKnnLearner(k=10))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pipe.fit(X[tr], S[tr])
    acc = pipe.score(X[te], y[te])
    assert acc > 0.95 and acc > base + 0.2, (acc, base)
    assert pipe[0].converged_ and pipe[0].n_components_ == 3


def test_converges_on_separable_data():
    X, S, y = signal_in_three_dims(m=300, d=6, seed=2)
    X[:, :3] *= 3
    red = CendaReducer(tol=1e-8).fit(X, S)
    assert red.converged_ and red.n_iter_ < 50
    assert red.subspace_changes_[-1] <= 1e-8


# ----------------------------------------------------------------------------- the learner
def test_learner_candidates_vote_equals_pipeline():
    X, S, y = random_pl(150, 12, 5, r=2, seed=8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lrn = CendaPlKnnLearner(vote="candidates", k=7, cenda_k=5, cenda_max_iter=5).fit(X[:100], S[:100])
        pipe = make_pipeline(CendaReducer(k=5, max_iter=5), PlKnnLearner(k=7)).fit(X[:100], S[:100])
    np.testing.assert_array_equal(lrn.predict(X[100:]), pipe.predict(X[100:]))
    np.testing.assert_allclose(lrn.predict_proba(X[100:]), pipe.predict_proba(X[100:]))
    np.testing.assert_allclose(lrn.confidences_, pipe[0].confidences_)


def test_learner_confidence_vote_is_the_weighted_confidence_sum():
    X, S, y = random_pl(80, 6, 4, r=1, seed=12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lrn = CendaPlKnnLearner(k=4, weights="uniform", cenda_max_iter=4).fit(X, S)
    Z = lrn.reducer_.transform(X[:5])
    Ztr = lrn.reducer_.transform(X)
    D = ((Z[:, None] - Ztr[None]) ** 2).sum(-1)
    nb = np.argsort(D, axis=1)[:, :4]
    expected = lrn.confidences_[nb].sum(axis=1)
    np.testing.assert_allclose(lrn.predict_proba(X[:5]), expected / expected.sum(1, keepdims=True))
    assert clone(lrn).get_params() == lrn.get_params()


def test_learner_bad_params():
    X, S, _ = random_pl(30, 5, 3)
    for p in (dict(vote="x"), dict(k=0), dict(cenda_thr=2.0), dict(weights="w"), dict(cenda_n_components=0)):
        name = next(iter(p))
        with pytest.raises(InvalidParameterError, match=f"The '{name}' parameter of CendaPlKnnLearner must be"):
            CendaPlKnnLearner(**p).fit(X, S)


# ----------------------------------------------------------------------------- registry / data
def test_registered_configs_instantiate_to_defaults():
    from hydra.utils import instantiate

    from plcore.registry import get_registry

    reg = get_registry()
    for kind, name, cls in (("reducer", "cenda", CendaReducer), ("learner", "plknn_cenda", CendaPlKnnLearner)):
        comp = reg.get(kind, name)
        assert comp.spec.cls is cls
        est = instantiate(comp.config())
        assert est.get_params() == cls().get_params()


def test_lost_keeps_thirteen_features(data_home):
    from sklearn.preprocessing import StandardScaler

    from plcore.datasets import load_dataset

    ds = load_dataset("lost", data_home=str(data_home))
    X = StandardScaler().fit_transform(ds.X)
    red = _quiet_fit(CendaReducer(), X, ds.S)
    assert red.n_components_ == 13                   # the paper's figure at thr 0.999
    assert np.mean(np.argmax(red.confidences_, axis=1) == ds.y_true) > 0.8
