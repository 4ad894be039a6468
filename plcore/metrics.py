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
    "covering_rate",
    "partial_log_likelihood",
    "approximated_accuracy",
    "clustering_covering_rate",
    "covering_rate_scorer",
    "partial_log_likelihood_scorer",
    "approximated_accuracy_scorer",
    "clustering_covering_rate_scorer",
    "SCORERS",
    "get_scorer",
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


# ----------------------------------------------------------------------------- label-free criteria
# Criteria computed from candidate sets only (no true labels): what model selection may use.


def _class_index(y_pred, classes):
    """Column index of each predicted label (labels from ``classes``; indices when None)."""
    y_pred = np.asarray(y_pred).ravel()
    if classes is None:
        return y_pred.astype(np.int64)
    classes = np.asarray(classes)
    order = np.argsort(classes)
    pos = np.searchsorted(classes, y_pred, sorter=order)
    pos = np.clip(pos, 0, len(classes) - 1)
    idx = order[pos]
    if not np.array_equal(classes[idx], y_pred):
        raise DataValidationError("predictions hold labels that are not in classes")
    return idx


def covering_rate(S, y_pred, classes=None) -> float:
    """Fraction of predictions that lie in their row's candidate set (PLENCH's CR).

    ``S`` is the (n, q) candidate matrix (dense or sparse); ``y_pred`` labels from
    ``classes`` (column order of ``S``), or column indices when ``classes`` is None.
    """
    from plcore.utils import dense_candidates

    S = dense_candidates(S)
    idx = _class_index(y_pred, classes)
    if idx.shape[0] != S.shape[0]:
        raise DataValidationError(f"S has {S.shape[0]} rows but y_pred has {idx.shape[0]} entries")
    return float(np.mean(S[np.arange(S.shape[0]), idx]))


def partial_log_likelihood(S, proba, eps: float = 1e-12) -> float:
    """Mean log of the probability mass a model puts on each row's candidate set,
    ``1/n sum_i log sum_{l in S_i} p_il`` (higher is better; 0 = all mass on the candidates)."""
    from plcore.utils import dense_candidates

    S = dense_candidates(S)
    P = np.asarray(proba, dtype=np.float64)
    if P.shape != S.shape:
        raise DataValidationError(f"proba has shape {P.shape} but S has {S.shape}")
    mass = np.where(S, P, 0.0).sum(axis=1)
    return float(np.mean(np.log(np.maximum(mass, eps))))


def approximated_accuracy(S, proba, eps: float = 1e-12) -> float:
    """PLENCH's Approximated Accuracy (AA; Wang et al., ICLR 2025, ``val_approximated_accuracy``):
    the model's probabilities restricted to each row's candidates and renormalised, read at the
    model's prediction ``argmax_j p_ij`` (over all classes), averaged over the rows. An estimate of
    the accuracy from candidate sets only: 0 for a prediction outside the candidate set."""
    from plcore.utils import dense_candidates

    S = dense_candidates(S)
    P = np.asarray(proba, dtype=np.float64)
    if P.shape != S.shape:
        raise DataValidationError(f"proba has shape {P.shape} but S has {S.shape}")
    masked = np.where(S, P, 0.0)
    conf = masked / (masked.sum(axis=1, keepdims=True) + eps)
    return float(np.mean(conf[np.arange(S.shape[0]), np.argmax(P, axis=1)]))


def clustering_covering_rate(S, labels) -> float:
    """Label-free clustering criterion: map clusters one-to-one to classes so that the
    labelled rows' cluster classes fall in their candidate sets as often as possible
    (Hungarian assignment), then the covering rate of the labelled rows.

    Labelled rows are those whose candidate set is not all classes; with none, 0.0.
    """
    from plcore.utils import dense_candidates

    S = dense_candidates(S)
    labels = np.asarray(labels).ravel()
    labelled = ~S.all(axis=1)
    if not labelled.any():
        return 0.0
    clusters, inv = np.unique(labels[labelled], return_inverse=True)
    hits = np.zeros((clusters.size, S.shape[1]))
    np.add.at(hits, inv, S[labelled].astype(np.float64))
    rows, cols = linear_sum_assignment(-hits)
    return float(hits[rows, cols].sum() / labelled.sum())


def covering_rate_scorer(estimator, X, S) -> float:
    """``scoring=`` callable: :func:`covering_rate` of ``estimator.predict(X)`` against ``S``."""
    classes = getattr(estimator, "classes_", None)
    return covering_rate(S, estimator.predict(X), classes)


def partial_log_likelihood_scorer(estimator, X, S) -> float:
    """``scoring=`` callable: :func:`partial_log_likelihood` of ``estimator.predict_proba(X)``."""
    return partial_log_likelihood(S, estimator.predict_proba(X))


def approximated_accuracy_scorer(estimator, X, S) -> float:
    """``scoring=`` callable: :func:`approximated_accuracy` of ``estimator.predict_proba(X)``."""
    return approximated_accuracy(S, estimator.predict_proba(X))


def clustering_covering_rate_scorer(estimator, X, S) -> float:
    """``scoring=`` callable for clusterers: fit-predict on ``(X, S)``, then
    :func:`clustering_covering_rate` (clusterers are transductive: they label what they fit)."""
    return clustering_covering_rate(S, estimator.fit_predict(X, S))


#: label-free scorers by name (for ``protocol.select.scoring`` and :func:`get_scorer`)
SCORERS = {
    "covering_rate": covering_rate_scorer,
    "partial_log_likelihood": partial_log_likelihood_scorer,
    "approximated_accuracy": approximated_accuracy_scorer,
    "clustering_covering_rate": clustering_covering_rate_scorer,
}


def get_scorer(scoring):
    """A scorer by plcore name (:data:`SCORERS`), else scikit-learn's :func:`~sklearn.metrics.get_scorer`
    (whose scorers need true labels: not label-free), or a callable as is."""
    if callable(scoring):
        return scoring
    if scoring in SCORERS:
        return SCORERS[scoring]
    from sklearn.metrics import get_scorer as sklearn_get_scorer

    return sklearn_get_scorer(scoring)
