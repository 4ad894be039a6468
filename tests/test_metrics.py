"""Tests of plcore.metrics."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.metrics import normalized_mutual_info_score

from plcore.data import PLDataset
from plcore.exceptions import DataValidationError
from plcore.metrics import (
    accuracy,
    average_candidates,
    best_cluster_map,
    clustering_accuracy,
    nmi,
    transductive_accuracy,
)


def _brute_force_acc(y, labels):
    """Best one-to-one cluster -> class map by trying every permutation."""
    y, labels = np.asarray(y), np.asarray(labels)
    classes, clusters = np.unique(y), np.unique(labels)
    m = max(len(classes), len(clusters))
    best = 0
    for perm in itertools.permutations(range(m)):
        # cluster i -> class perm[i]; indices beyond the real ones mean "unmatched"
        hits = 0
        for i, c in enumerate(clusters):
            if perm[i] < len(classes):
                hits += int(np.sum((labels == c) & (y == classes[perm[i]])))
        best = max(best, hits)
    return best / len(y)


# --------------------------------------------------------------------------- accuracy


def test_accuracy():
    assert accuracy([0, 1, 2, 1], [0, 1, 1, 1]) == pytest.approx(0.75)
    assert accuracy(np.array(["a", "b"]), np.array(["a", "b"])) == 1.0
    assert accuracy([0, 0, 0], [1, 1, 1]) == 0.0
    assert isinstance(accuracy([0], [0]), float)


def test_accuracy_errors():
    with pytest.raises(DataValidationError, match="y_true has 3 entries but y_pred has 2"):
        accuracy([0, 1, 2], [0, 1])
    with pytest.raises(ValueError, match="empty"):
        accuracy([], [])


# --------------------------------------------------------------------------- transductive accuracy


def test_transductive_accuracy_argmax():
    conf = np.array([[0.9, 0.1, 0.0], [0.2, 0.5, 0.3], [0.1, 0.1, 0.8], [0.6, 0.4, 0.0]])
    y = np.array([0, 1, 2, 1])
    assert transductive_accuracy(y, conf) == pytest.approx(0.75)
    assert transductive_accuracy(y, sp.csr_matrix(conf)) == pytest.approx(0.75)


def test_transductive_accuracy_with_classes_mapping():
    conf = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    classes = np.array([10, 20, 30])
    assert transductive_accuracy([20, 10, 30], conf, classes=classes) == 1.0
    # without the mapping the column indices are compared to the labels
    assert transductive_accuracy([20, 10, 30], conf) == 0.0
    assert transductive_accuracy([1, 0, 2], conf) == 1.0
    names = np.array(["cat", "dog", "eel"])
    assert transductive_accuracy(["dog", "dog", "eel"], conf, classes=names) == pytest.approx(2 / 3)


def test_transductive_accuracy_errors():
    with pytest.raises(DataValidationError, match="2-D"):
        transductive_accuracy([0, 1], np.array([0.2, 0.8]))
    with pytest.raises(DataValidationError, match="entries"):
        transductive_accuracy([0, 1, 1], np.eye(2))


# --------------------------------------------------------------------------- clustering accuracy


@pytest.mark.parametrize("seed", range(12))
def test_clustering_accuracy_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 30))
    n_classes = int(rng.integers(1, 6))
    n_clusters = int(rng.integers(1, 6))
    y = rng.integers(0, n_classes, size=n)
    labels = rng.integers(0, n_clusters, size=n)
    assert clustering_accuracy(y, labels) == pytest.approx(_brute_force_acc(y, labels))


def test_clustering_accuracy_perfect_up_to_relabelling():
    y = np.array([0, 0, 1, 1, 2, 2, 2])
    assert clustering_accuracy(y, np.array([7, 7, 3, 3, 5, 5, 5])) == 1.0
    assert clustering_accuracy(y, np.array(["b", "b", "a", "a", "c", "c", "c"])) == 1.0


@pytest.mark.parametrize("seed", range(5))
def test_clustering_accuracy_invariant_to_cluster_relabelling(seed):
    rng = np.random.default_rng(100 + seed)
    y = rng.integers(0, 4, size=40)
    labels = np.where(rng.random(40) < 0.7, y, rng.integers(0, 5, size=40))
    base = clustering_accuracy(y, labels)
    perm = rng.permutation(5)
    assert clustering_accuracy(y, perm[labels]) == pytest.approx(base)
    assert clustering_accuracy(y, 1000 + 37 * labels) == pytest.approx(base)
    assert clustering_accuracy(y, np.array(list("vwxyz"))[labels]) == pytest.approx(base)
    # ACC is computed against the classes, so relabelling the classes changes nothing either
    assert clustering_accuracy(rng.permutation(4)[y], labels) == pytest.approx(base)
    assert nmi(y, perm[labels]) == pytest.approx(nmi(y, labels))


def test_clustering_accuracy_more_clusters_than_classes():
    y = np.array([0, 0, 0, 1, 1, 1])
    labels = np.array([0, 0, 1, 2, 2, 3])
    # best: 0 -> class 0 (2 hits), 2 -> class 1 (2 hits); clusters 1 and 3 stay unmatched
    assert clustering_accuracy(y, labels) == pytest.approx(4 / 6)
    assert clustering_accuracy(y, labels) == pytest.approx(_brute_force_acc(y, labels))
    # each example in its own cluster: only one example per class can be matched
    assert clustering_accuracy(y, np.arange(6)) == pytest.approx(2 / 6)


def test_clustering_accuracy_fewer_clusters_than_classes():
    y = np.array([0, 1, 2, 0, 1, 2])
    assert clustering_accuracy(y, np.zeros(6, dtype=int)) == pytest.approx(2 / 6)


def test_best_cluster_map_is_one_to_one():
    y = np.array([0, 0, 1, 1, 1, 2])
    labels = np.array([5, 5, 5, 9, 9, 4])
    mapping = best_cluster_map(y, labels)
    assert mapping == {5: 0, 9: 1, 4: 2}
    assert len(set(mapping.values())) == len(mapping)


def test_clustering_accuracy_errors():
    with pytest.raises(DataValidationError, match="entries"):
        clustering_accuracy([0, 1], [0, 1, 1])


# --------------------------------------------------------------------------- NMI


@pytest.mark.parametrize("seed", range(6))
def test_nmi_matches_sklearn(seed):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, size=50)
    labels = rng.integers(0, 6, size=50)
    assert nmi(y, labels) == pytest.approx(normalized_mutual_info_score(y, labels))
    assert nmi(y, labels) == pytest.approx(nmi(labels, y))


def test_nmi_extremes():
    y = np.array([0, 0, 1, 1, 2, 2])
    assert nmi(y, np.array([4, 4, 8, 8, 6, 6])) == pytest.approx(1.0)
    assert 0.0 <= nmi(y, np.array([0, 1, 0, 1, 0, 1])) < 0.1
    with pytest.raises(DataValidationError):
        nmi([0, 1], [0])


# --------------------------------------------------------------------------- average candidates


def test_average_candidates_dense_and_sparse():
    S = np.array([[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]])
    assert average_candidates(S) == pytest.approx(2.5)
    assert average_candidates(S.astype(bool)) == pytest.approx(2.5)
    for fmt in (sp.csr_matrix, sp.csc_matrix, sp.coo_matrix):
        assert average_candidates(fmt(S)) == pytest.approx(2.5)
    assert average_candidates(S.tolist()) == pytest.approx(2.5)
    assert isinstance(average_candidates(sp.csr_matrix(S)), float)


def test_average_candidates_agrees_with_dataset():
    rng = np.random.default_rng(0)
    S = rng.random((30, 5)) < 0.5
    S[:, 0] = True
    ds = PLDataset(rng.normal(size=(30, 2)), sp.csr_matrix(S))
    assert average_candidates(ds.S) == pytest.approx(ds.average_candidates())
    assert average_candidates(S) == pytest.approx(S.sum() / 30)


def test_approximated_accuracy_is_plenchs_formula_written_out():
    """AA (PLENCH ``val_approximated_accuracy``): candidate-masked, renormalised probability at
    the unmasked argmax, averaged; compared with a literal loop."""
    from plcore.metrics import SCORERS, approximated_accuracy

    rng = np.random.RandomState(0)
    P = rng.dirichlet(np.ones(4), size=50)
    S = rng.rand(50, 4) < 0.5
    S[np.arange(50), rng.randint(0, 4, 50)] = True
    expected = []
    for p, s in zip(P, S):
        pred = int(np.argmax(p))
        expected.append(p[pred] / p[s].sum() if s[pred] else 0.0)
    assert approximated_accuracy(S, P) == pytest.approx(np.mean(expected), rel=1e-9)
    # exact labels: AA is the plain accuracy; all candidates: AA is the mean top probability
    y = rng.randint(0, 4, 50)
    assert approximated_accuracy(np.eye(4, dtype=bool)[y], P) == pytest.approx(np.mean(P.argmax(1) == y))
    assert approximated_accuracy(np.ones((50, 4), bool), P) == pytest.approx(P.max(axis=1).mean())
    assert "approximated_accuracy" in SCORERS
