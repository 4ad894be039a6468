"""Evaluation metrics for partial-label learning and partial-label clustering."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import normalized_mutual_info_score

from plcore.exceptions import DataValidationError

__all__ = [
    "accuracy",
    "transductive_accuracy",
    "clustering_accuracy",
    "best_cluster_map",
    "nmi",
    "average_candidates",
]


def _check_same_length(a, b, names):
    a, b = np.asarray(a).ravel(), np.asarray(b).ravel()
    if a.shape[0] != b.shape[0]:
        raise DataValidationError(f"{names[0]} has {a.shape[0]} entries but {names[1]} has {b.shape[0]}")
    if a.shape[0] == 0:
        raise DataValidationError(f"{names[0]} is empty")
    return a, b


def accuracy(y_true, y_pred) -> float:
    """Fraction of predictions equal to the true label."""
    y_true, y_pred = _check_same_length(y_true, y_pred, ("y_true", "y_pred"))
    return float(np.mean(y_true == y_pred))


def transductive_accuracy(y_true, confidences, classes=None) -> float:
    """Disambiguation accuracy on the training set.

    The disambiguated label of example i is ``argmax_j confidences[i, j]`` (mapped through
    ``classes`` when given); accuracy is against the true labels. This measures how well a
    method recovered the training labels, not how well it generalises.
    """
    conf = confidences.toarray() if sp.issparse(confidences) else np.asarray(confidences)
    if conf.ndim != 2:
        raise DataValidationError(f"confidences must be 2-D (n, q), got shape {conf.shape}")
    pred = np.argmax(conf, axis=1)
    if classes is not None:
        pred = np.asarray(classes)[pred]
    return accuracy(y_true, pred)


def best_cluster_map(y_true, labels) -> dict:
    """One-to-one map cluster -> class maximising agreement (Hungarian algorithm)."""
    y_true, labels = _check_same_length(y_true, labels, ("y_true", "labels"))
    classes, yt = np.unique(y_true, return_inverse=True)
    clusters, lb = np.unique(labels, return_inverse=True)
    counts = np.zeros((len(clusters), len(classes)), dtype=np.int64)
    np.add.at(counts, (lb, yt), 1)
    rows, cols = linear_sum_assignment(counts, maximize=True)
    return {clusters[r]: classes[c] for r, c in zip(rows, cols)}


def clustering_accuracy(y_true, labels) -> float:
    """Clustering ACC: accuracy under the best one-to-one cluster-to-class map.

    Clusters left unmatched (more clusters than classes) count as errors.
    """
    y_true, labels = _check_same_length(y_true, labels, ("y_true", "labels"))
    mapping = best_cluster_map(y_true, labels)
    mapped = np.array([mapping.get(c, None) for c in labels], dtype=object)
    return float(np.mean(mapped == y_true.astype(object)))


def nmi(y_true, labels) -> float:
    """Normalised mutual information (scikit-learn, arithmetic normalisation)."""
    y_true, labels = _check_same_length(y_true, labels, ("y_true", "labels"))
    return float(normalized_mutual_info_score(y_true, labels))


def average_candidates(S) -> float:
    """Mean candidate-set size of a candidate matrix."""
    S = S if sp.issparse(S) else np.asarray(S)
    return float(np.asarray(S.sum(axis=1)).mean())
