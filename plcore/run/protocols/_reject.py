"""The reject option in the split protocols (kfold, holdout): for a learner with the tag
``reject_option`` (DST-PLL), each test row's reject score joins its prediction row, a step
gets the accepted fraction, the accuracy of the accepted rows and the rejection risk at cost
0.1, and the run the reject curve over all test rows (Fuchs, Kalinke & Boehm, TMLR 2025;
shared/design/frontier.md section 4.2)."""

from __future__ import annotations

import numpy as np
from sklearn.pipeline import Pipeline

from plcore.metrics import reject_curve, rejection_risk
from plcore.run.pipeline import final_step
from plcore.tags import get_pll_tags

#: the authors' threshold sweep for DST-PLL's reject score: -1 to 1 in steps of 0.01
THRESHOLDS = np.round(np.arange(-1.0, 1.0 + 1e-9, 0.01), 2)
#: the rejection cost of the logged risk (the middle of the paper's table, 0 .. 0.2)
COST = 0.1


def pipeline_reject_score(pipe, X) -> np.ndarray:
    """The reject score of the pipeline's learner (tag ``reject_option``) for the rows ``X``, which
    pass through the steps before it."""
    final = final_step(pipe)
    Z = pipe[:-1].transform(X) if isinstance(pipe, Pipeline) and len(pipe.steps) > 1 else X
    return np.asarray(final.reject_score(Z), dtype=float)


def reject_metrics(pipe, X_test, y_test, pred, rows) -> dict:
    """The step's reject metrics (none unless the pipeline's learner has the tag ``reject_option``):
    ``accepted_fraction`` (rows with reject score > 0), ``accepted_accuracy`` and
    ``rejection_risk_0.1`` where the true labels ``y_test`` are given (None when no row is
    accepted). Adds ``reject_score`` to the test rows' prediction ``rows``."""
    if not get_pll_tags(final_step(pipe)).reject_option:
        return {}
    r = pipeline_reject_score(pipe, X_test)
    for row, value in zip(rows, r):
        row["reject_score"] = float(value)
    if y_test is None:
        return {}
    accepted, correct = r > 0, np.asarray(pred) == np.asarray(y_test)
    return {"accepted_fraction": float(accepted.mean()),
            "accepted_accuracy": float(correct[accepted].mean()) if accepted.any() else None,
            f"rejection_risk_{COST:g}": rejection_risk(y_test, pred, accepted, COST) if accepted.any() else None}


def reject_curves(predictions) -> dict:
    """The reject curve of all test rows with a reject score and a true label (every step's):
    ``reject_curve_threshold``, ``reject_curve_fraction_rejected`` and ``reject_curve_accuracy``
    (NaN where 10 rows or fewer are accepted, as the authors drop them); empty without them."""
    rows = [r for r in predictions if "reject_score" in r and "y_true" in r]
    if not rows:
        return {}
    frac, acc = reject_curve([r["y_true"] for r in rows], [r["y_pred"] for r in rows],
                             [r["reject_score"] for r in rows], THRESHOLDS)
    return {"reject_curve_threshold": THRESHOLDS, "reject_curve_fraction_rejected": frac,
            "reject_curve_accuracy": acc}
