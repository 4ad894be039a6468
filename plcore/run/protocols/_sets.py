"""A split's prediction-set metrics, for a fitted final step that has ``predict_set``
(:class:`plcore.prediction_sets.ConformalSetLearner`): mean set size, the fraction of empty sets, the
fraction of sets that meet their row's candidate set (label-free: what the conformal guarantee is
about) and, with true labels, the fraction of sets that hold the true label."""

from __future__ import annotations

import numpy as np

from plcore.metrics import set_candidate_coverage, set_coverage, set_size
from plcore.run.pipeline import final_step


def predict_sets(pipe, X):
    """The prediction sets of ``pipe``'s final step for the rows ``X`` (passed through the steps
    before it): a boolean ``(n, q)`` matrix, columns in the final step's ``classes_`` order; None
    when the final step has no ``predict_set``."""
    final = final_step(pipe)
    if not hasattr(final, "predict_set"):
        return None
    Z = pipe[:-1].transform(X) if final is not pipe and len(pipe.steps) > 1 else X
    return np.asarray(final.predict_set(Z), dtype=bool)


def set_metrics(pipe, X_test, S_test, y_test=None) -> dict:
    """``{set_size, set_empty_fraction, set_candidate_coverage[, set_coverage]}`` of the test rows
    (``S_test`` their candidate sets, ``y_test`` their true labels as column indices, or None);
    empty when the final step gives no sets."""
    sets = predict_sets(pipe, X_test)
    if sets is None:
        return {}
    out = {"set_size": set_size(sets), "set_empty_fraction": float(np.mean(~sets.any(axis=1))),
           "set_candidate_coverage": set_candidate_coverage(S_test, sets)}
    if y_test is not None:
        out["set_coverage"] = set_coverage(y_test, sets)
    return out
