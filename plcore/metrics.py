"""Evaluation metrics for partial-label learning and partial-label clustering."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import matthews_corrcoef, normalized_mutual_info_score

from plcore.exceptions import DataValidationError

__all__ = [
    "accuracy",
    "transductive_accuracy",
    "mcc",
    "clustering_accuracy",
    "best_cluster_map",
    "nmi",
    "average_candidates",
    "set_size",
    "set_coverage",
    "set_candidate_coverage",
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
    "reject_curve",
    "rejection_risk",
    "accuracy_at_rejection_rate",
    "expected_calibration_error",
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


def mcc(y_true, y_pred) -> float:
    """Matthews' correlation coefficient of the predictions, the multiclass R_K of
    :func:`sklearn.metrics.matthews_corrcoef` (0 where it is undefined: one class predicted or true)."""
    y_true, y_pred = _check_same_length(y_true, y_pred, ("y_true", "y_pred"))
    return float(matthews_corrcoef(y_true, y_pred))


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


def _check_sets(sets) -> np.ndarray:
    sets = sets.toarray() if sp.issparse(sets) else np.asarray(sets)
    if sets.ndim != 2 or sets.shape[0] == 0:
        raise DataValidationError(f"sets must be a non-empty 2-D (n, q) boolean matrix, got shape {sets.shape}")
    return sets.astype(bool)


def set_size(sets) -> float:
    """Mean size ``|C(x)|`` of prediction sets given as an ``(n, q)`` boolean matrix (row i marks
    the classes in the set of example i; e.g. ``predict_set`` of
    :class:`plcore.prediction_sets.ConformalSetLearner`)."""
    return float(_check_sets(sets).sum(axis=1).mean())


def set_coverage(y_true, sets, classes=None) -> float:
    """Fraction of rows whose prediction set holds the true label, mean ``[y_i in C(x_i)]``.

    ``sets`` is an ``(n, q)`` boolean matrix whose columns are ``classes`` (labels; column
    indices when None), ``y_true`` the true labels (a label outside ``classes`` raises).
    """
    sets = _check_sets(sets)
    idx = _class_index(y_true, classes)
    if idx.shape[0] != sets.shape[0]:
        raise DataValidationError(f"sets has {sets.shape[0]} rows but y_true has {idx.shape[0]} entries")
    if idx.min() < 0 or idx.max() >= sets.shape[1]:
        raise DataValidationError(f"y_true holds labels outside the {sets.shape[1]} columns of sets")
    return float(np.mean(sets[np.arange(sets.shape[0]), idx]))


def set_candidate_coverage(S, sets) -> float:
    """Fraction of rows whose prediction set meets their candidate set, mean ``[C(x_i) & S_i != {}]``
    (label-free). For :class:`plcore.prediction_sets.ConformalSetLearner` this is the event its guarantee
    is about: ``C(x)`` holds the candidate the model scores highest, w.p. ``>= 1 - alpha``."""
    from plcore.utils import dense_candidates

    sets = _check_sets(sets)
    S = dense_candidates(S)
    if S.shape != sets.shape:
        raise DataValidationError(f"sets has shape {sets.shape} but S has {S.shape}")
    return float(np.mean((sets & S).any(axis=1)))


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


# ----------------------------------------------------------------------------- reject option
# Fuchs, Kalinke & Boehm, "Partial-Label Learning with a Reject Option", TMLR 2025 (the authors'
# script_create_plots.py; shared/design/frontier.md section 4.2). A prediction is accepted iff its
# score exceeds the threshold: DST-PLL's reject score r (threshold 0), or another method's largest
# probability.

#: the authors drop curve points with this many accepted rows or fewer
REJECT_MIN_ACCEPTED = 10


def _check_reject(y_true, y_pred, score):
    y_true, y_pred = _check_same_length(y_true, y_pred, ("y_true", "y_pred"))
    score = np.asarray(score, dtype=float).ravel()
    if score.shape[0] != y_true.shape[0]:
        raise DataValidationError(f"score has {score.shape[0]} entries but y_true has {y_true.shape[0]}")
    return y_true == y_pred, score


def reject_curve(y_true, y_pred, score, thresholds, min_accepted: int = REJECT_MIN_ACCEPTED + 1):
    """The reject curve (Fuchs et al., TMLR 2025, Section 5; frontier.md section 4.2): for every
    threshold t of ``thresholds``, the rows with ``score > t`` are accepted, the others rejected.

    Returns ``(fraction_rejected, accepted_accuracy)``, two arrays of ``len(thresholds)``: the
    fraction of rows rejected and the accuracy of the accepted rows, NaN where fewer than
    ``min_accepted`` rows are accepted (the authors drop points with 10 accepted rows or
    fewer). Their sweep: ``np.arange(-1, 1.01, 0.01)`` for DST-PLL's reject score, from 0 for
    a largest probability.
    """
    correct, score = _check_reject(y_true, y_pred, score)
    thresholds = np.asarray(thresholds, dtype=float).ravel()
    accepted = score[None, :] > thresholds[:, None]                  # (n_thresholds, n)
    n_acc = accepted.sum(axis=1)
    hits = (accepted & correct[None, :]).sum(axis=1)
    acc = np.divide(hits, n_acc, out=np.full(n_acc.shape, np.nan), where=n_acc >= max(1, min_accepted))
    return 1.0 - n_acc / score.shape[0], acc


def rejection_risk(y_true, y_pred, accepted, cost: float) -> float:
    """The risk with rejection cost ``cost`` (Fuchs et al., TMLR 2025; frontier.md section 4.2):
    ``R = (1 - accuracy of the accepted rows) + cost * fraction rejected``; ``accepted`` is a
    boolean mask (e.g. ``reject_score > 0``). NaN when no row is accepted. The paper tabulates
    ``cost`` in {0, 0.05, 0.1, 0.15, 0.2}.
    """
    correct, accepted = _check_reject(y_true, y_pred, accepted)
    accepted = accepted.astype(bool)
    if not accepted.any():
        return float("nan")
    return float((1.0 - correct[accepted].mean()) + cost * (1.0 - accepted.mean()))


def accuracy_at_rejection_rate(y_true, y_pred, score, rate: float,
                               min_accepted: int = REJECT_MIN_ACCEPTED + 1) -> tuple:
    """Accuracy of the accepted rows at the threshold whose reject fraction is closest to ``rate``
    (Fuchs et al., TMLR 2025, the comparison at DST-PLL's rejection rate; frontier.md section 4.2).

    The thresholds tried are the sorted unique values of ``score`` and one below the smallest
    (nothing rejected); rows with ``score > t`` are accepted; thresholds leaving fewer than
    ``min_accepted`` accepted rows are not tried (the authors stop there). The first of equally
    close thresholds wins. The authors also jitter tied scores (``1e-6 N(0, 1)``, seed 42) so
    that ties can be split: pass a jittered ``score`` to do the same.

    Returns ``(accuracy, fraction_rejected, threshold)``; ``(nan, nan, nan)`` if no threshold
    leaves enough rows.
    """
    _, score = _check_reject(y_true, y_pred, score)
    values = np.unique(score)
    thresholds = np.concatenate([[np.nextafter(values[0], -np.inf)], values])
    frac, acc = reject_curve(y_true, y_pred, score, thresholds, min_accepted)
    ok = np.flatnonzero(~np.isnan(acc))
    if ok.size == 0:
        return float("nan"), float("nan"), float("nan")
    best = ok[np.argmin(np.abs(frac[ok] - rate))]
    return float(acc[best]), float(frac[best]), float(thresholds[best])


def expected_calibration_error(confidence, correct, n_bins: int = 15) -> float:
    """ECE (Guo et al., 2017, eq. 3): the rows binned by confidence into ``n_bins`` equal-width
    bins of (0, 1], the bins' ``|mean confidence - accuracy|`` weighted by their share of rows."""
    confidence = np.asarray(confidence, dtype=float)
    correct = np.asarray(correct, dtype=float)
    _check_same_length(confidence, correct, ("confidence", "correct"))
    bins = np.clip(np.ceil(confidence * n_bins).astype(int) - 1, 0, n_bins - 1)
    total = 0.0
    for b in np.unique(bins):
        inside = bins == b
        total += inside.mean() * abs(confidence[inside].mean() - correct[inside].mean())
    return float(total)
