"""PLC end to end: recovery of well-separated clusters, graph helpers, baselines, stored splits."""

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.datasets import make_blobs

from plcore.exceptions import InvalidParameterError
from plcore.metrics import clustering_accuracy
from plcore.utils import normalise_rows
from plcore_plc import KMeansClusterer, PlcClusterer, SpectralClusterer
from plcore_plc._graph import gram_blocks, knn, t_matrix, weights_matrix
from plcore_plc._spectral import njw_spectral_clustering


def _blobs(n=120, q=3, seed=0):
    rng = np.random.RandomState(seed)
    centers = rng.uniform(-10, 10, size=(q, 5))
    return make_blobs(n_samples=n, centers=centers, cluster_std=0.5, random_state=seed)


def test_singleton_candidates_well_separated_acc_1():
    X, y = _blobs()
    S = np.zeros((len(y), 3), bool)
    S[np.arange(len(y)), y] = True
    plc = PlcClusterer(random_state=0).fit(X, S)
    assert clustering_accuracy(y, plc.labels_) == 1.0
    np.testing.assert_array_equal(plc.pseudo_labels_, y)
    assert sp.issparse(plc.affinity_) and abs(plc.affinity_ - plc.affinity_.T).max() < 1e-12
    # every S/D solve's objective trace is non-increasing
    assert all(np.all(np.diff(o) <= 0) for o in plc.sd_objectives_)


def test_partial_labels_well_separated_acc_1_every_solver():
    X, y = _blobs(n=150, q=3, seed=1)
    rng = np.random.RandomState(0)
    S = np.ones((150, 3), bool)
    lab = rng.rand(150) < 0.2
    S[lab] = False
    S[lab, y[lab]] = True
    S[lab, (y[lab] + 1) % 3] = True  # one false positive each
    for params in ({}, {"f_step": "batched"}, {"sd_solver": "dense"}):
        plc = PlcClusterer(random_state=0, **params).fit(X, S)
        assert clustering_accuracy(y[~lab], plc.labels_[~lab]) == 1.0
        conf = plc.confidences_
        assert np.all(conf[~S] == 0) and np.allclose(conf.sum(axis=1), 1.0)


def test_literal_graph_helpers():
    rng = np.random.RandomState(0)
    Z = normalise_rows(rng.randn(20, 6))
    np.testing.assert_allclose(np.linalg.norm(Z, axis=1), 1.0)
    nbr = knn(Z, 4)
    d = ((Z[:, None] - Z[None]) ** 2).sum(-1)
    np.fill_diagonal(d, np.inf)
    np.testing.assert_array_equal(np.sort(nbr, 1), np.sort(np.argsort(d, 1)[:, :4], 1))
    G = gram_blocks(Z, nbr)
    j = 7
    O = Z[j] - Z[nbr[j]]
    np.testing.assert_allclose(G[j], O @ O.T)
    w = rng.dirichlet(np.ones(4), size=20)
    Wc = weights_matrix(w, nbr)
    np.testing.assert_allclose(Wc.toarray()[j, nbr[j]], w[j])
    # T = (I - W)(I - W'), any (non-symmetric, column sums != 1) paper-W; its quadratic form is
    # checked against Eq. (2) summed literally in test_plc_simplex.py
    Wp = Wc.T.toarray() * rng.uniform(0.5, 1.5, size=(20, 20))
    A = np.eye(20) - Wp
    np.testing.assert_allclose(t_matrix(sp.csr_matrix(Wp)).toarray(), A @ A.T, atol=1e-12)


def test_njw_recovers_disconnected_blocks():
    blocks = [np.ones((b, b)) - np.eye(b) for b in (30, 40, 50)]
    W = sp.block_diag(blocks, format="csr")
    y = np.repeat([0, 1, 2], [30, 40, 50])
    assert clustering_accuracy(y, njw_spectral_clustering(W, 3, random_state=0)) == 1.0
    big = sp.block_diag([sp.csr_matrix(np.ones((150, 150)) - np.eye(150))] * 3, format="csr")
    yb = np.repeat([0, 1, 2], 150)
    for solver in ("dense", "lobpcg", "arpack"):
        assert clustering_accuracy(yb, njw_spectral_clustering(big, 3, random_state=0, solver=solver)) == 1.0


def test_baselines_default_to_number_of_classes():
    X, y = _blobs(q=3)
    S = np.ones((len(y), 4), bool)
    assert KMeansClusterer(random_state=0).fit(X, S).n_clusters_ == 4
    assert SpectralClusterer(random_state=0).fit(X, S).n_clusters_ == 4
    assert PlcClusterer(random_state=0, outer_iter=1).fit(X, S).n_clusters_ == 4
    assert clustering_accuracy(y, KMeansClusterer(n_clusters=3, random_state=0).fit(X).labels_) == 1.0


def test_bad_parameters_raise():
    X, y = _blobs(n=30)
    for bad in ({"k": 0}, {"alpha": -1.0}, {"alpha": float("inf")}, {"f_step": "x"},
                {"sd_solver": "sparse"}, {"f_tol": 0.0},
                {"lam": 0.0, "mu": 0.0}, {"w_tol": 0.0}, {"n_clusters": 0}):
        with pytest.raises(InvalidParameterError):
            PlcClusterer(**bad).fit(X, y)
    with pytest.raises(InvalidParameterError, match=r"The 'k' parameter of PlcClusterer must be an int "
                                                    r"in the range \[1, inf\)\. Got 0 instead\."):
        PlcClusterer(k=0).fit(X, y)
    for cls, bad in ((KMeansClusterer, {"n_clusters": 0}), (SpectralClusterer, {"affinity": "x"}),
                     (SpectralClusterer, {"n_neighbors": 0})):
        with pytest.raises(InvalidParameterError):
            cls(**bad).fit(X, y)


@pytest.mark.data
def test_msrc_stored_splits_are_used(data_home):
    from plcore.datasets import load_dataset
    from plcore.run.protocols import clustering_partitions

    ds = load_dataset("msrc-v2-plc-splits", data_home=data_home)
    parts = clustering_partitions(ds, rho=0.05, n_partitions=3, splits="auto", random_state=0)
    assert len(parts) == 10 and all(tr.sum() == 176 and (tr ^ te).all() for tr, te in parts)


def test_label_only_weights_lam_zero_converge():
    """lam = 0 leaves Q_j = mu Gf, zero wherever a sample and its neighbours share F's row (here:
    most rows have one candidate); the weight QPs must still be solved, without hitting the cap."""
    import warnings

    from sklearn.exceptions import ConvergenceWarning

    X, y = _blobs(n=150, q=3, seed=2)
    S = np.zeros((150, 3), bool)
    S[np.arange(150), y] = True
    S[:20] = True
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        plc = PlcClusterer(lam=0.0, mu=1.0, random_state=0).fit(X, S)
    assert clustering_accuracy(y[20:], plc.labels_[20:]) == 1.0
