"""One outer fold under a budget of optimizer steps and configurations (the ``field/3``
leaderboard, issue 72; ``../shared/design/field3.md``): PLENCH's selection (Wang et al., ICLR 2025)
with every configuration's checkpoints kept, as TabArena keeps them (Erickson et al., 2025), so
that a tuned figure at a smaller budget is computed from what was kept, never re-run.

The fold's training rows are split once into the rows the learners fit on and validation rows
(:func:`validation_split`, the same for every row of the board). Configuration 0 is the
component as configured (its shipped defaults); configuration ``j >= 1`` replaces the
parameters of the components' declared space (``search_distributions``, else the grid
``search_space``) by the ``j``-th random point drawn with ``seed``, the same on every fold and task. A learner tagged
``epoch_checkpoints`` trains ``ceil(steps / steps per epoch)`` epochs (steps per epoch: the fit
rows over its integer ``batch_size``) and records a checkpoint at the first epoch end at or after
every ``every`` steps and at the last; any other pipeline one checkpoint, its fitted model. A
checkpoint holds the validation rows' covering rate and approximated accuracy (their candidate
sets), their accuracy (their true labels: for the oracle columns of a report, never for a
choice) and the test accuracy. The **default** is configuration 0 at its last checkpoint; the
**tuned** choice is the (configuration, checkpoint) with the largest ``criterion`` on the
validation rows (:func:`plcore.run.checkpoints.select_checkpoints`: ties to the earliest
checkpoint and the first configuration). Both keep their test rows' predictions and the fit rows'
disambiguation (:func:`disambiguated`).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace

import numpy as np

from sklearn.base import clone

from plcore.exceptions import ConfigError
from plcore.metrics import approximated_accuracy, covering_rate
from plcore.run.checkpoints import select_checkpoints
from plcore.run.pipeline import build_pipeline, final_step, make_preprocessor
from plcore.run.protocols._plench import _seed_hash
from plcore.run.selection import with_params
from plcore.tags import get_pll_tags

__all__ = ["Budget", "BudgetFold", "budget_fold", "validation_split", "draw_configurations", "epochs_for",
           "disambiguated", "fold_seeds", "CRITERION_COLUMN", "DIGITS"]

#: the decimals a checkpoint's values keep (what a run file stores, and what the choice is made on)
DIGITS = 8
#: the checkpoint columns a tuned choice may maximise (``budget.criterion``), as
#: :func:`~plcore.run.checkpoints.select_checkpoints` names its criteria
CRITERION_COLUMN = {"covering_rate": "cr", "approximated_accuracy": "aa"}


@dataclass(frozen=True)
class Budget:
    """A fold's budget (a protocol track's ``budget:``): ``steps`` optimizer steps a deep
    configuration trains, a checkpoint every ``every`` steps, ``configurations`` configurations
    (the first the defaults), the ``validation`` share of the training rows held out, and the
    label-free ``criterion`` of the tuned choice."""

    steps: int
    every: int
    configurations: int
    validation: float
    criterion: str = "covering_rate"

    @classmethod
    def from_dict(cls, data: dict) -> Budget:
        try:
            budget = cls(int(data["steps"]), int(data["every"]), int(data["configurations"]),
                         float(data["validation"]), str(data.get("criterion", "covering_rate")))
        except (KeyError, TypeError, ValueError) as err:
            raise ConfigError(f"a budget needs integer steps, every and configurations and a validation share, "
                              f"got {data!r} ({err})") from None
        if budget.steps < 1 or budget.every < 1 or budget.configurations < 1 or not 0 < budget.validation < 1:
            raise ConfigError(f"a budget needs steps, every and configurations >= 1 and 0 < validation < 1, got {data!r}")
        if budget.criterion not in CRITERION_COLUMN:
            raise ConfigError(f"budget.criterion must be one of {', '.join(CRITERION_COLUMN)}, got {budget.criterion!r}")
        return budget

    def to_dict(self) -> dict:
        return {"steps": self.steps, "every": self.every, "configurations": self.configurations,
                "validation": self.validation, "criterion": self.criterion}


@dataclass
class BudgetFold:
    """What :func:`budget_fold` returns: per configuration its drawn parameters, checkpoint steps
    and the four checkpoint columns (``curves[j]``: ``(n_checkpoints, 4)``, the columns of
    :data:`plcore.run.checkpoints.COLUMNS`) and fit seconds; the fit and validation rows; the
    tuned choice ``(configuration, checkpoint)``; the default's and the tuned choice's test
    predictions and fit rows' disambiguation (class indices)."""

    params: list
    steps: list
    curves: list
    fit_seconds: list
    fit_rows: np.ndarray
    validation_rows: np.ndarray
    chosen: tuple
    predictions: dict = field(default_factory=dict)
    disambiguation: dict = field(default_factory=dict)


def validation_split(n: int, share: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(fit, validation)`` positions (sorted) among ``n`` training rows: ``ceil(share n)`` rows
    (at least one, leaving one to fit on) drawn by ``seed`` are the validation rows."""
    n_val = min(max(1, math.ceil(share * n)), n - 1)
    if n_val < 1:
        raise ConfigError(f"a validation split needs two training rows, got {n}")
    perm = np.random.RandomState(seed).permutation(n)
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])


def draw_configurations(space: dict, n: int, seed: int) -> list[dict]:
    """``n`` configurations: ``{}`` (the defaults), then ``n - 1`` random points of ``space``
    (scikit-learn's ``ParameterSampler`` seeded by ``seed``: a grid's points without replacement,
    as many as it has where that is fewer)."""
    from sklearn.model_selection import ParameterSampler

    from plcore.utils.distributions import is_distribution, sampler

    if n <= 1 or not space:
        return [{}]
    draws = n - 1
    if not any(is_distribution(v) for v in space.values()):
        draws = min(draws, math.prod(len(v) for v in space.values()))
    sampled = {k: sampler(v) for k, v in space.items()}
    return [{}] + [dict(point) for point in ParameterSampler(sampled, n_iter=draws, random_state=seed)]


def epochs_for(steps: int, n_fit: int, batch_size) -> tuple[int, int]:
    """``(epochs, steps per epoch)`` of a budget of ``steps`` optimizer steps on ``n_fit`` rows in
    batches of ``batch_size`` (an integer: a budget counts steps of a fixed batch)."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)):
        raise ConfigError(f"a budget of optimizer steps needs an integer batch_size, got {batch_size!r}")
    per_epoch = math.ceil(n_fit / min(int(batch_size), n_fit))
    return math.ceil(steps / per_epoch), per_epoch


def disambiguated(model, X_fit, S_fit) -> np.ndarray:
    """The fit rows' disambiguated labels (class indices): the model's most probable candidate of
    each row (its ``predict_proba`` restricted to the row's candidate set; a model without
    ``predict_proba`` gives its prediction)."""
    S = np.asarray(S_fit.toarray() if hasattr(S_fit, "toarray") else S_fit) > 0
    classes = np.asarray(final_step(model).classes_ if hasattr(model, "steps") else model.classes_, dtype=int)
    if not hasattr(model, "predict_proba"):
        return classes[np.searchsorted(classes, model.predict(X_fit))] if len(classes) else np.empty(0, int)
    scores = np.full(S.shape, -np.inf)
    scores[:, classes] = model.predict_proba(X_fit)
    return np.argmax(np.where(S, scores, -np.inf), axis=1)


class _Rows:
    """A fold's rows as the configurations see them: the fit rows' features and sets (the
    learner's: the truth's singletons for an exact-label baseline), the validation rows' sets and
    labels, the test rows' labels."""

    def __init__(self, X, S, y, fit, val, test, S_learner):
        self.X, self.fit, self.val, self.test = X, fit, val, test
        self.S_fit, self.S_fit_given = S_learner[fit], S[fit]
        self.S_val, self.y_val, self.y_test = S[val], y[val], y[test]


def _scores(model, X, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    """(class indices predicted, (n, n_classes) probabilities) of ``model`` on ``X``."""
    classes = np.asarray(final_step(model).classes_ if hasattr(model, "steps") else model.classes_, dtype=int)
    proba = np.zeros((X.shape[0], n_classes))
    if hasattr(model, "predict_proba"):
        proba[:, classes] = model.predict_proba(X)
        pred = np.argmax(proba, axis=1)
    else:
        pred = np.asarray(model.predict(X), dtype=int)
        proba[np.arange(len(pred)), pred] = 1.0
    return pred, proba


def _checkpoint(model, rows: _Rows, Xv, Xt, n_classes: int) -> tuple[tuple, np.ndarray]:
    """A checkpoint's four columns and the test rows' predictions."""
    pv, probav = _scores(model, Xv, n_classes)
    pt, _ = _scores(model, Xt, n_classes) if len(Xt) else (np.empty(0, dtype=int), None)
    values = (covering_rate(rows.S_val, pv), approximated_accuracy(rows.S_val, probav),
              float(np.mean(pv == rows.y_val)), float(np.mean(pt == rows.y_test)) if len(pt) else float("nan"))
    # a diverged network (NaN outputs) scores 0, the worst: never chosen, never a file that cannot be written
    return tuple(round(float(v), DIGITS) if np.isfinite(v) else 0.0 for v in values), pt


def fold_seeds(seed: int, fold: int) -> dict:
    """The seeds of outer fold ``fold`` under the track seed ``seed``: its validation split's, and
    configuration ``j``'s fit seed as ``fit(j)``. The configurations' draws take ``seed`` itself:
    every fold and task of a row tries the same configurations."""
    return {"split": _seed_hash("split", fold, seed), "fit": lambda j: _seed_hash("fit", j, fold, seed)}


def budget_fold(setup, X, S, y, train, test, *, budget: Budget, space: dict, preprocessing: str, seed: int,
                fold: int = 0, S_learner=None, echo=None) -> BudgetFold:
    """Outer fold ``fold`` (the module says how): ``setup``'s configurations (drawn from ``space``,
    ``{"<role>.<param>": values or distribution}``) fitted on the fit rows of ``train`` and scored
    on its validation rows, the test rows ``test`` predicted at every checkpoint (:func:`fold_seeds`).
    ``S_learner``: the sets the learner fits (an exact-label baseline's singletons); ``echo``: a line
    per configuration."""
    S = np.asarray(S.toarray() if hasattr(S, "toarray") else S).astype(bool)
    S_learner = S if S_learner is None else np.asarray(S_learner).astype(bool)
    n_classes = S.shape[1]
    seeds = fold_seeds(seed, fold)
    fit_pos, val_pos = validation_split(len(train), budget.validation, seeds["split"])
    rows = _Rows(X, S, np.asarray(y), np.asarray(train)[fit_pos], np.asarray(train)[val_pos], np.asarray(test),
                 S_learner)
    points = draw_configurations(space or {}, budget.configurations, seed)
    deep = setup.learner is not None and get_pll_tags(setup.learner).epoch_checkpoints
    if deep and setup.reducer is not None:
        raise ConfigError("a budget of steps fits a deep learner on the scaled features: it takes no reducer")
    column = 0 if budget.criterion == "covering_rate" else 1
    out = BudgetFold(params=[], steps=[], curves=[], fit_seconds=[], fit_rows=rows.fit, validation_rows=rows.val,
                     chosen=(0, 0))
    kept = []   # per configuration: (test predictions, disambiguation) at its best checkpoint, and at its last
    for j, point in enumerate(points):
        trial = with_params(setup, point) if point else replace(  # configuration 0: copies, the caller's untouched
            setup, **{k: clone(getattr(setup, k)) for k in ("learner", "reducer") if getattr(setup, k) is not None})
        t0 = time.perf_counter()
        steps, curve, best, last = (_deep_configuration if deep else _pipeline_configuration)(
            trial, rows, budget, preprocessing, n_classes, column, seeds["fit"](j))
        out.fit_seconds.append(time.perf_counter() - t0)
        out.params.append(point)
        out.steps.append(steps)
        out.curves.append(np.asarray(curve, dtype=np.float64))
        kept.append((best, last))
        if echo is not None:
            echo(f"configuration {j}: {len(steps)} checkpoint(s), best {budget.criterion} "
                 f"{max(c[column] for c in curve):.4f} ({out.fit_seconds[-1]:.1f} s)")
    choice = select_checkpoints(out.curves)[CRITERION_COLUMN[budget.criterion]]
    out.chosen = (choice.draw, choice.checkpoint)
    best_index, (pred, dis) = kept[choice.draw][0]
    if best_index != choice.checkpoint:   # the earliest best checkpoint is the one kept while training
        raise RuntimeError(f"kept checkpoint {best_index}, chose {choice.checkpoint}")
    out.predictions = {"tuned": pred, "default": kept[0][1][0]}
    out.disambiguation = {"tuned": dis, "default": kept[0][1][1]}
    return out


def _seeded(est, seed: int):
    if est is not None and "random_state" in est.get_params(deep=False):
        est.set_params(random_state=seed)
    return est


def _deep_configuration(trial, rows: _Rows, budget: Budget, preprocessing, n_classes, column, fit_seed):
    """A deep learner's configuration: trained ``budget.steps`` steps with checkpoints (the module)."""
    scaler = make_preprocessor(preprocessing)
    Xf, Xv, Xt = rows.X[rows.fit], rows.X[rows.val], rows.X[rows.test]
    if scaler is not None:
        scaler.fit(Xf)
        Xf, Xv = scaler.transform(Xf), scaler.transform(Xv)
        Xt = scaler.transform(Xt) if len(Xt) else Xt
    learner = _seeded(trial.learner, fit_seed)
    n_epochs, per_epoch = epochs_for(budget.steps, len(rows.fit), learner.get_params(deep=False)["batch_size"])
    learner.set_params(n_epochs=n_epochs)
    steps, curve, state = [], [], {"next": budget.every, "best": (-1, None), "value": -math.inf, "last": None}

    def record(epoch, fitted):
        done = (epoch + 1) * per_epoch
        if done < state["next"] and epoch + 1 < n_epochs:
            return
        while state["next"] <= done:
            state["next"] += budget.every
        values, pred = _checkpoint(fitted, rows, Xv, Xt, n_classes)
        steps.append(done)
        curve.append(values)
        if values[column] > state["value"]:
            state["value"] = values[column]
            state["best"] = (len(curve) - 1, (pred, disambiguated(fitted, Xf, rows.S_fit_given)))
        if epoch + 1 == n_epochs:
            state["last"] = (pred, disambiguated(fitted, Xf, rows.S_fit_given))

    learner.fit(Xf, rows.S_fit, on_epoch=record)
    return steps, curve, state["best"], state["last"]


def _pipeline_configuration(trial, rows: _Rows, budget, preprocessing, n_classes, column, fit_seed):
    """Any other pipeline's configuration: fitted once, one checkpoint (step 0)."""
    for kind in ("reducer", "learner"):
        _seeded(getattr(trial, kind), fit_seed)
    pipe = build_pipeline(trial.estimators(), preprocessing)
    Xf = rows.X[rows.fit]
    pipe.fit(Xf, rows.S_fit)
    values, pred = _checkpoint(pipe, rows, rows.X[rows.val], rows.X[rows.test], n_classes)
    kept = (pred, disambiguated(pipe, Xf, rows.S_fit_given))
    return [0], [values], (0, kept), kept
