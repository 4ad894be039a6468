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
    mcc,
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


def _textbook_mcc(y, p):
    """Gorodkin's R_K from the confusion matrix C: (c s - sum_k p_k t_k) / sqrt((s^2 - sum p_k^2)(s^2 - sum t_k^2))."""
    classes = sorted(set(y) | set(p))
    C = np.array([[sum(1 for a, b in zip(y, p) if a == i and b == j) for j in classes] for i in classes])
    c, s, t_k, p_k = np.trace(C), C.sum(), C.sum(axis=1), C.sum(axis=0)
    den = np.sqrt((s**2 - p_k @ p_k) * (s**2 - t_k @ t_k))
    return 0.0 if den == 0 else (c * s - p_k @ t_k) / den


def test_mcc_is_the_multiclass_r_k_of_the_confusion_matrix():
    rng = np.random.default_rng(0)
    for _ in range(20):
        y, p = rng.integers(0, 4, 30), rng.integers(0, 4, 30)
        p[:10] = y[:10]
        assert mcc(y, p) == pytest.approx(_textbook_mcc(list(y), list(p)))
    assert mcc([0, 1, 2, 1], [0, 1, 2, 1]) == 1.0
    assert mcc([0, 1, 2, 1], [1, 1, 1, 1]) == 0.0       # one class predicted: undefined, reported as 0
    with pytest.raises(DataValidationError, match="entries"):
        mcc([0, 1], [0])


def test_prediction_set_metrics_are_literal_loops():
    from plcore.metrics import set_candidate_coverage, set_coverage, set_size

    rng = np.random.default_rng(1)
    sets = rng.random((40, 5)) < 0.4
    S = rng.random((40, 5)) < 0.3
    y = rng.integers(0, 5, 40)
    assert set_size(sets) == pytest.approx(sum(sum(bool(b) for b in row) for row in sets) / 40)
    assert set_coverage(y, sets) == pytest.approx(sum(1 for i in range(40) if sets[i, y[i]]) / 40)
    assert set_candidate_coverage(S, sets) == pytest.approx(
        sum(1 for i in range(40) if any(sets[i, j] and S[i, j] for j in range(5))) / 40)
    names = np.array(["e", "a", "d", "b", "c"])   # columns are ``classes``, labels are names
    assert set_coverage(names[y], sets, classes=names) == set_coverage(y, sets)
    assert set_size(np.zeros((3, 4), bool)) == 0.0 and set_coverage([0, 1, 2], np.eye(3, dtype=bool)) == 1.0
    with pytest.raises(DataValidationError, match="rows"):
        set_coverage(y[:5], sets)
    with pytest.raises(DataValidationError, match="not in classes"):
        set_coverage(["zz"] * 40, sets, classes=names)
    with pytest.raises(DataValidationError, match="2-D"):
        set_size(np.ones(4, bool))


# --------------------------------------------------------------------------- reject option
def _literal_reject_point(y, p, r, t):
    """One point of the authors' sweep (script_create_plots.py): accepted = r > t; a point
    with 10 accepted rows or fewer has no accuracy."""
    acc_rows = [i for i in range(len(y)) if r[i] > t]
    frac = (len(y) - len(acc_rows)) / len(y)
    if len(acc_rows) <= 10:
        return frac, float("nan")
    return frac, sum(1 for i in acc_rows if y[i] == p[i]) / len(acc_rows)


def test_reject_curve_and_risk_equal_a_literal_loop():
    from plcore.metrics import reject_curve, rejection_risk

    rng = np.random.default_rng(0)
    y, p = rng.integers(0, 3, 80), rng.integers(0, 3, 80)
    r = np.round(rng.uniform(-1, 1, 80), 2)          # ties with the thresholds on purpose
    p[r > 0.3] = y[r > 0.3]
    thresholds = np.round(np.arange(-1, 1.01, 0.01), 2)
    frac, acc = reject_curve(y, p, r, thresholds)
    for k, t in enumerate(thresholds):
        f_ref, a_ref = _literal_reject_point(y, p, r, t)
        assert frac[k] == pytest.approx(f_ref)
        assert (np.isnan(acc[k]) and np.isnan(a_ref)) or acc[k] == pytest.approx(a_ref)
    assert np.isnan(acc[-1]) and frac[0] == 0.0
    accepted = r > 0
    ref = (1 - np.mean(y[accepted] == p[accepted])) + 0.1 * np.mean(~accepted)
    assert rejection_risk(y, p, accepted, 0.1) == pytest.approx(ref)
    assert rejection_risk(y, p, accepted, 0.0) == pytest.approx(1 - np.mean(y[accepted] == p[accepted]))
    assert np.isnan(rejection_risk(y, p, np.zeros(80, bool), 0.1))
    with pytest.raises(DataValidationError, match="score has 3 entries"):
        reject_curve(y, p, r[:3], thresholds)


def test_accuracy_at_rejection_rate_picks_the_closest_reject_fraction():
    from plcore.metrics import accuracy_at_rejection_rate

    rng = np.random.default_rng(1)
    y, p = rng.integers(0, 4, 60), rng.integers(0, 4, 60)
    score = rng.random(60)
    p[score > 0.5] = y[score > 0.5]
    for rate in (0.0, 0.1, 0.33, 0.5, 0.8, 0.95):
        best = None
        for t in [-np.inf] + sorted(set(score)):          # literal: every threshold, the first closest wins
            f, a = _literal_reject_point(y, p, score, t)
            if not np.isnan(a) and (best is None or abs(f - rate) < abs(best[0] - rate)):
                best = (f, a)
        acc, frac, _ = accuracy_at_rejection_rate(y, p, score, rate)
        assert (acc, frac) == pytest.approx((best[1], best[0]))
    assert np.isnan(accuracy_at_rejection_rate(y[:5], p[:5], score[:5], 0.1)[0])

