"""IPAL (Zhang & Yu, IJCAI 2015): batched OSQP weights vs exact NNLS, propagation and prediction
vs a literal dense textbook implementation, invariants, learning on digits (conformance: test_conformance.py)."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import nnls
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.neighbors import NearestNeighbors
from sklearn.preprocessing import StandardScaler

from plcore.datasets import UniformBags
from plcore.exceptions import InvalidParameterError
from plcore.testing import make_pl_data
from plcore_baselines._ipal import batched_nnls
from plcore_baselines.ipal import IpalLearner


# ----------------------------------------------------------------------------- Eq. (1)
@pytest.mark.parametrize("scale", [1.0, 1e3])
def test_batched_weights_equal_scipy_nnls_per_row(scale):
    """d > k (unique solutions): every block of the one OSQP problem == scipy's exact NNLS."""
    rng = np.random.RandomState(0)
    X = scale * rng.randn(80, 15)
    R = scale * rng.randn(50, 15)
    nbr = NearestNeighbors(n_neighbors=7).fit(R).kneighbors(X, return_distance=False)
    w, G, b = batched_nnls(X, R, nbr)
    ref = np.array([nnls(R[nbr[i]].T, X[i])[0] for i in range(X.shape[0])])
    assert np.all(w >= 0)
    np.testing.assert_allclose(w, ref, atol=1e-6, rtol=0)
    assert np.count_nonzero(ref == 0) > 0 and np.count_nonzero(ref > 0) > 0  # both kinds of constraint
    np.testing.assert_allclose(G[3], R[nbr[3]] @ R[nbr[3]].T, rtol=1e-12)
    np.testing.assert_allclose(b[3], R[nbr[3]] @ X[3], rtol=1e-12)


def test_batched_weights_degenerate_blocks_reach_the_nnls_optimum():
    """d < k (many minimisers): the squared residual equals the NNLS optimum to ~1e-6."""
    rng = np.random.RandomState(1)
    X = rng.randn(40, 3)
    nbr = NearestNeighbors(n_neighbors=8).fit(X).kneighbors(return_distance=False)
    w, _, _ = batched_nnls(X, X, nbr)
    res = np.linalg.norm(X - np.einsum("nk,nkd->nd", w, X[nbr]), axis=1)
    ref = np.array([nnls(X[nbr[i]].T, X[i])[1] for i in range(X.shape[0])])
    assert np.all(w >= 0)
    np.testing.assert_allclose(res ** 2, ref ** 2, atol=1e-6 * np.max(np.sum(X ** 2, axis=1)))


# ----------------------------------------------------------------------------- textbook IPAL
def textbook_ipal(Xtr, S, Xte, k, alpha, T, normr=True):
    """Literal dense IPAL, one row at a time (Zhang & Yu 2015, Table 1; ``normr`` of the
    authors' IPAL_train.m / IPAL_predict.m when ``normr``)."""
    n, q = S.shape
    if normr:
        Xtr = np.array([row / np.sqrt(sum(v * v for v in row)) for row in Xtr])
        Xte = np.array([row / np.sqrt(sum(v * v for v in row)) for row in Xte])
    nbr = NearestNeighbors(n_neighbors=k).fit(Xtr).kneighbors(return_distance=False)
    W = np.zeros((n, n))                      # W[j, i]: weight of x_j in the reconstruction of x_i
    for i in range(n):
        wi = nnls(Xtr[nbr[i]].T, Xtr[i])[0]
        for s, j in enumerate(nbr[i]):
            W[j, i] = wi[s]
    D = np.diag([W[:, i].sum() for i in range(n)])
    H = W @ np.linalg.pinv(D)                 # H = W D^-1 (zero columns stay zero)
    P0 = np.zeros((n, q))
    for i in range(n):
        for c in range(q):
            P0[i, c] = 1.0 / S[i].sum() if S[i, c] else 0.0
    F = P0.copy()
    for _ in range(T):
        Ft = alpha * H.T @ F + (1 - alpha) * P0
        for i in range(n):
            tot = sum(Ft[i, c] for c in range(q) if S[i, c])
            for c in range(q):
                F[i, c] = Ft[i, c] / tot if S[i, c] else 0.0
    mass0, mass = P0.sum(axis=0), F.sum(axis=0)
    yhat = np.array([max((c for c in range(q) if S[i, c]), key=lambda c: F[i, c] * mass0[c] / mass[c])
                     for i in range(n)])
    errors = np.zeros((Xte.shape[0], q))
    tnbr = NearestNeighbors(n_neighbors=k).fit(Xtr).kneighbors(Xte, return_distance=False)
    for t in range(Xte.shape[0]):
        w = nnls(Xtr[tnbr[t]].T, Xte[t])[0]
        for c in range(q):
            v = Xte[t].copy()
            for s, j in enumerate(tnbr[t]):
                if yhat[j] == c:
                    v -= w[s] * Xtr[j]
            errors[t, c] = np.linalg.norm(v)
    return F, yhat, errors


@pytest.mark.parametrize("row_normalize", [True, False])
def test_fit_and_predict_equal_the_textbook_loops(row_normalize):
    rng = np.random.RandomState(2)
    q, n, d = 4, 45, 12
    y = rng.randint(q, size=n + 15)
    X = rng.randn(n + 15, d) + 2.0 * np.eye(q, d)[y]
    S = UniformBags(r=1).generate(y[:n], n_classes=q, random_state=rng)
    F, yhat, errors = textbook_ipal(X[:n], S, X[n:], k=5, alpha=0.9, T=20, normr=row_normalize)
    est = IpalLearner(k=5, alpha=0.9, max_iter=20, row_normalize=row_normalize).fit(X[:n], S)
    np.testing.assert_allclose(est.propagated_confidences_, F, atol=1e-6)
    np.testing.assert_array_equal(est.disambiguated_, yhat)
    np.testing.assert_allclose(est.reconstruction_errors(X[n:]), errors, atol=1e-6)
    np.testing.assert_array_equal(est.predict(X[n:]), np.argmin(errors, axis=1))
    # the sparse candidate matrix gives the same model
    est_sp = IpalLearner(k=5, alpha=0.9, max_iter=20, row_normalize=row_normalize).fit(
        X[:n], sp.csr_matrix(S.astype(float)))
    np.testing.assert_allclose(est_sp.confidences_, est.confidences_, atol=1e-12)


def test_row_normalisation_makes_the_model_invariant_to_row_scaling():
    """With normr (the authors' code) rescaling any row by c > 0 changes nothing; without it,
    the same rescaling changes the graph."""
    X, S, _ = make_pl_data(n_samples=80, n_classes=4, r=1, random_state=5)
    Xte = X[:20] + 0.1
    c = np.random.RandomState(5).uniform(0.1, 10.0, size=(80, 1))
    a = IpalLearner(k=6).fit(X, S)
    b = IpalLearner(k=6).fit(c * X, S)
    np.testing.assert_allclose(b.propagated_confidences_, a.propagated_confidences_, atol=1e-6)
    np.testing.assert_allclose(b.reconstruction_errors(c[:20] * Xte), a.reconstruction_errors(Xte),
                               atol=1e-6)
    raw_a = IpalLearner(k=6, row_normalize=False).fit(X, S)
    raw_b = IpalLearner(k=6, row_normalize=False).fit(c * X, S)
    assert np.abs(raw_b.propagated_confidences_ - raw_a.propagated_confidences_).max() > 1e-3


def test_confidences_lie_on_candidates_and_sum_to_one():
    X, S, y = make_pl_data(n_samples=120, n_classes=5, r=2, random_state=3)
    est = IpalLearner(k=6).fit(X, S)
    for conf in (est.confidences_, est.propagated_confidences_):
        assert conf.shape == S.shape and np.all(conf >= 0)
        assert np.abs(conf[~S]).max() == 0.0
        np.testing.assert_allclose(conf.sum(axis=1), 1.0, atol=1e-12)
    assert S[np.arange(S.shape[0]), est.disambiguated_].all()
    # weights_: row i holds the k non-negative weights of x_i (W^T)
    assert est.weights_.shape == (120, 120) and np.all(est.weights_.getnnz(axis=1) <= 6)
    assert est.weights_.min() >= 0.0


def test_alpha_zero_keeps_the_initial_confidences():
    X, S, _ = make_pl_data(n_samples=60, n_classes=4, r=2, random_state=4)
    est = IpalLearner(alpha=0.0, max_iter=3).fit(X, S)
    np.testing.assert_allclose(est.propagated_confidences_, S / S.sum(axis=1, keepdims=True))


@pytest.mark.parametrize("params", [{"alpha": 1.0}, {"alpha": -0.1}, {"k": 0}, {"max_iter": 0},
                                    {"osqp_options": "fast"}, {"k": 2.5},
                                    {"row_normalize": "yes"}])
def test_bad_parameters_raise(params):
    X, S, _ = make_pl_data(n_samples=30)
    (name,) = params
    with pytest.raises(InvalidParameterError, match=f"The '{name}' parameter of IpalLearner must be"):
        IpalLearner(**params).fit(X, S)


# ----------------------------------------------------------------------------- it learns
def test_learns_on_digits_well_above_candidate_frequency():
    """digits z-scored, uniform bags r = 2, holdout 25 %. Measured: IPAL 0.980, baseline 0.100."""
    X, y = load_digits(return_X_y=True)
    S = UniformBags(r=2, random_state=0).generate(y)
    Xtr, Xte, Str, _, _, yte = train_test_split(X, S, y, test_size=0.25, random_state=0)
    sc = StandardScaler().fit(Xtr)
    acc = np.mean(IpalLearner().fit(sc.transform(Xtr), Str).predict(sc.transform(Xte)) == yte)
    baseline = np.mean(yte == np.argmax(Str.sum(axis=0)))
    print(f"digits r=2 holdout: IPAL {acc:.3f}, candidate-frequency baseline {baseline:.3f}")
    assert baseline < 0.2
    assert acc >= 0.9 and acc >= baseline + 0.6



# ----------------------------------------------------------------------------- shared selection
def test_fit_path_learners_equal_their_own_fits_and_share_the_graph(monkeypatch):
    """One Eq. (1) graph for every alpha and max_iter: each learner's confidences, weights and
    predictions are its own fit's, to the bit; the queries' NNLS runs once per query set."""
    X, S, _ = make_pl_data(n_samples=120, r=2, n_classes=4, random_state=4, cluster_std=3.0)
    X_test = make_pl_data(n_samples=40, r=2, n_classes=4, random_state=5, cluster_std=3.0)[0]
    points = [{"alpha": a, "max_iter": t} for a in (0.5, 0.8, 0.95) for t in (10, 100)]
    import plcore_baselines.ipal as ipal

    calls = []
    real = ipal.neighbour_nnls
    monkeypatch.setattr(ipal, "neighbour_nnls", lambda *a: calls.append(a[0].shape[0]) or real(*a))
    fitted = IpalLearner(k=8).fit_path(X, S, points)
    preds = [learner.reconstruction_errors(X_test) for learner in fitted]
    assert calls == [120, 40]     # the graph once, the test rows once
    monkeypatch.setattr(ipal, "neighbour_nnls", real)
    for point, learner, errors in zip(points, fitted, preds):
        own = IpalLearner(k=8).set_params(**point).fit(X, S)
        assert learner.get_params() == own.get_params()
        np.testing.assert_array_equal(learner.confidences_, own.confidences_)
        np.testing.assert_array_equal(learner.disambiguated_, own.disambiguated_)
        assert (learner.weights_ != own.weights_).nnz == 0
        np.testing.assert_array_equal(errors, own.reconstruction_errors(X_test))
    assert len({tuple(learner.disambiguated_) for learner in fitted}) > 1   # alpha matters here
    with pytest.raises(ValueError, match="alpha and max_iter only"):
        IpalLearner().fit_path(X, S, [{"k": 3}])


def test_fit_path_learner_refitted_forgets_the_shared_queries():
    """Refitted on other rows, a fit_path learner answers a query set it answered before as a
    fresh fit does, not from the shared queries of its first fit."""
    X, S, _ = make_pl_data(n_samples=120, r=2, n_classes=4, random_state=4, cluster_std=3.0)
    X2, S2, _ = make_pl_data(n_samples=120, r=2, n_classes=4, random_state=6, cluster_std=3.0)
    X_test = make_pl_data(n_samples=40, r=2, n_classes=4, random_state=5, cluster_std=3.0)[0]
    learner = IpalLearner(k=8).fit_path(X, S, [{"alpha": 0.5}, {"alpha": 0.95}])[0]
    learner.reconstruction_errors(X_test)
    learner.fit(X2, S2)
    own = IpalLearner(k=8, alpha=0.5).fit(X2, S2)
    np.testing.assert_array_equal(learner.reconstruction_errors(X_test), own.reconstruction_errors(X_test))


def test_shared_search_over_k_and_alpha_selects_as_grid_search_cv():
    from sklearn.model_selection import GridSearchCV, KFold, ParameterGrid
    from sklearn.pipeline import make_pipeline

    from plcore.metrics import get_scorer
    from plcore.run.shared_search import SharedSearchCV, path_keys

    X, S, _ = make_pl_data(n_samples=150, r=2, n_classes=4, random_state=6, cluster_std=3.5)
    pipe = make_pipeline(StandardScaler(), IpalLearner())
    space = {"ipallearner__k": [5, 10], "ipallearner__alpha": [0.5, 0.8, 0.95, 0.99]}
    cv, scorer = KFold(3, shuffle=True, random_state=0), get_scorer("covering_rate")
    ref = GridSearchCV(pipe, space, scoring=scorer, cv=cv).fit(X, S)
    ours = SharedSearchCV(pipe, list(ParameterGrid(space)), path_keys(pipe, space), scorer, cv).fit(X, S)
    assert path_keys(pipe, space) == ["ipallearner__alpha"]
    assert ours.best_params_ == ref.best_params_
    np.testing.assert_array_equal(ours.cv_results_["mean_test_score"], ref.cv_results_["mean_test_score"])
