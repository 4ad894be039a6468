"""PLENCH's tabular protocol (Wang et al., ICLR 2025): per trial one split, ``n_draws`` random
hyperparameter draws fitted on it with a checkpoint per epoch, and the test accuracy of the
checkpoint each selection rule picks (:mod:`plcore.run.checkpoints`)."""

from __future__ import annotations

import hashlib
import itertools
import time
from typing import Callable

import numpy as np

from plcore.data import PLDataset
from plcore.exceptions import ConfigError, DataValidationError
from plcore.metrics import approximated_accuracy, covering_rate
from plcore.registry import ProtocolSpec
from plcore.run.checkpoints import CRITERIA, select_checkpoints, standard_error
from plcore.run.defaults import protocol_defaults
from plcore.run.pipeline import make_preprocessor
from plcore.run.protocols._shared import (
    apply_bags,
    _feeds_truth,
    _label_source,
    _learns_from_labels,
    _need_learner,
    _progress,
    ProtocolResult,
    Setup,
    _singletons,
    _split_candidates,
)
from plcore.tags import get_pll_tags
from plcore.utils import dense_candidates
from plcore.validation import Integral, Interval, Real, StrOptions

#: PLENCH's z-score adds this to every feature's standard deviation
_STD_EPS = 1e-6


def plench(setup: Setup, dataset: PLDataset, *, n_trials: int = 3, n_draws: int = 20, test_size: float = 0.1,
           validation_size: float = 0.1, zscore: str = "all_rows", random_state=0, progress: bool = True,
           callback: Callable | None = None) -> ProtocolResult:
    """PLENCH's tabular protocol: random hyperparameter draws, checkpoints chosen by CR, AA and the oracle.

    Trial ``t`` has the trial seed ``random_state + t`` (with seed 0 the trials are PLENCH's
    ``trial_seed`` 0, 1, ...): the rows are shuffled with ``seed_hash(trial seed)`` (PLENCH's md5
    seed), the first ``int(n (1 - test_size))`` are the training part and the rest the test rows;
    the training part is shuffled again with the same seed and its first ``int(n_train
    validation_size)`` rows are the validation rows, the rest the rows the learner fits on.
    ``zscore="all_rows"`` scales every feature by ``(x - mean) / (std + 1e-6)`` over all ``n``
    rows, test rows included, as PLENCH does (their features, never their labels, shape the
    scaling); ``"train_rows"`` is plcore's usual ``standardize`` fitted on the fit rows only.
    Data with exact labels get candidate sets from the run's bag generator, drawn per trial.

    Draw 0 is the learner as configured; draw ``d >= 1`` replaces the parameters of its
    component's ``search_distributions`` (else its ``search_space`` grid) by one random point,
    seeded by ``seed_hash(d, trial seed)``; every fit is seeded by ``seed_hash("fit", d, trial
    seed)`` (``random_state``). Every draw is fitted on the fit rows; a learner tagged
    ``epoch_checkpoints`` records a checkpoint after every epoch (early stopping off), any other
    one checkpoint, its fitted model. A checkpoint holds the validation rows' covering rate and
    approximated accuracy (candidate sets), their accuracy (true labels) and the test accuracy.
    Per trial the step logs, for each criterion ``cr``, ``aa``, ``oracle``, ``oracle_es``,
    ``<criterion>_accuracy`` (the chosen checkpoint's test accuracy), ``_draw``, ``_epoch``
    (checkpoint, from 1) and ``_value`` (the validation value it maximised), and the CR choice's
    drawn parameters as ``selected.learner.<param>``. Summary: ``<criterion>_accuracy_mean`` and
    ``<criterion>_accuracy_sem`` (PLENCH's standard error: std / sqrt(n_trials)).
    """
    if not isinstance(setup, Setup):
        setup = Setup(learner=setup)
    if isinstance(random_state, bool) or not isinstance(random_state, (int, np.integer)):
        raise ConfigError(f"protocol 'plench' derives its trial seeds from an integer seed, got {random_state!r}")
    params = {"n_trials": n_trials, "n_draws": n_draws, "test_size": test_size, "validation_size": validation_size,
              "zscore": zscore}
    SPEC.validate(params, dataset)
    _check_plench_setup(params, setup)
    learner = setup.learner
    space = _declared_space(learner) if n_draws > 1 else {}
    feed_truth = _feeds_truth(learner, "auto")
    checkpoints = get_pll_tags(learner).epoch_checkpoints
    if checkpoints and learner.get_params(deep=False).get("early_stopping"):
        print("note: protocol=plench selects among the epochs itself: early stopping is off", flush=True)
    result = ProtocolResult("plench")
    _label_source(result, feed_truth, learner)
    learns = _learns_from_labels(dataset, setup.bags)
    fits = itertools.product(range(n_trials), range(n_draws))
    curves, fit_time, trial = [], 0.0, None
    for t, d in _progress(fits, n_trials * n_draws, f"plench {dataset.name}", progress):
        trial_seed = int(random_state) + t
        if d == 0:
            trial = _trial_data(dataset, setup.bags, learns, trial_seed, test_size, validation_size, zscore,
                                feed_truth)
            curves, fit_time = [], 0.0
        drawn = _draw(space, d, trial_seed)
        t0 = time.perf_counter()
        curves.append(_fit_draw(learner, drawn, _seed_hash("fit", d, trial_seed), trial, checkpoints))
        fit_time += time.perf_counter() - t0
        if d == n_draws - 1:
            step = _trial_step(t, curves, space, learner, trial_seed, fit_time)
            result.steps.append(step)
            if callback is not None:
                callback(step)
    for name in CRITERIA:
        values = [s[f"{name}_accuracy"] for s in result.steps]
        result.summary[f"{name}_accuracy_mean"] = float(np.mean(values))
        result.summary[f"{name}_accuracy_sem"] = standard_error(values)
    result.summary["fit_time_mean"] = float(np.mean([s["fit_time"] for s in result.steps]))
    return result


def _seed_hash(*parts) -> int:
    """A seed from ``parts``: the md5 digest of their tuple's text, modulo 2**31 (PLENCH's rule)."""
    return int.from_bytes(hashlib.md5(str(parts).encode("utf-8")).digest(), "big") % 2**31


def plench_split(n: int, trial_seed: int, test_size: float, validation_size: float):
    """``(fit, validation, test)`` row indices of a trial (see :func:`plench`)."""
    seed = _seed_hash(trial_seed)
    rows = np.arange(n)
    np.random.RandomState(seed).shuffle(rows)
    n_train = int(n * (1 - test_size))
    train, test = rows[:n_train], rows[n_train:]
    keys = np.arange(n_train)
    np.random.RandomState(seed).shuffle(keys)
    n_val = int(n_train * validation_size)
    return train[keys[n_val:]], train[keys[:n_val]], test


def zscored(X: np.ndarray, fit_rows, zscore: str) -> np.ndarray:
    """Every row of ``X`` scaled: over all rows (``"all_rows"``, PLENCH's ``(x - mean) / (std +
    1e-6)``) or by ``standardize`` fitted on ``fit_rows`` (``"train_rows"``)."""
    X = np.asarray(X, dtype=np.float64)
    if zscore == "all_rows":
        return (X - X.mean(axis=0)) / (X.std(axis=0) + _STD_EPS)
    return make_preprocessor("standardize").fit(X[fit_rows]).transform(X)


class _Trial:
    """One trial's rows: the fit rows' features and candidate sets (the true labels' singletons
    for an exact-label baseline), the validation rows' candidate sets and labels, the test labels."""

    def __init__(self, X, S, y, fit, val, test, S_learner):
        self.X_fit, self.S_fit = X[fit], S_learner[fit]
        self.X_eval = X[np.concatenate([val, test])]   # validation rows first, then the test rows
        self.n_val = len(val)
        self.S_val, self.y_val, self.y_test = S[val], y[val], y[test]


def _trial_data(dataset, bags, learns, trial_seed, test_size, validation_size, zscore, feed_truth) -> _Trial:
    fit, val, test = plench_split(dataset.n_samples, trial_seed, test_size, validation_size)
    seed = _seed_hash(trial_seed)
    ds = dataset if learns else apply_bags(dataset, bags, seed)   # a learning generator: the training part only
    S = dense_candidates(_split_candidates(dataset, bags, ds, np.sort(np.concatenate([fit, val])), seed)).astype(bool)
    y = np.asarray(ds.y_true)
    return _Trial(zscored(ds.X, fit, zscore), S, y, fit, val, test,
                  _singletons(y, ds.n_classes) if feed_truth else S)


def _declared_space(learner) -> dict:
    """The learner's declared space: its component's ``search_distributions``, else its grid."""
    from plcore.registry import get_registry

    comp = get_registry().component_of(learner, "learner")
    if comp is None:
        return {}
    return dict(comp.spec.search_distributions or comp.spec.search_space or {})


def _draw(space: dict, d: int, trial_seed: int) -> dict:
    """Draw ``d`` of a trial: ``{}`` (the configured learner) for ``d == 0``, else one random point."""
    if d == 0:
        return {}
    from sklearn.model_selection import ParameterSampler

    from plcore.utils.distributions import sampler

    points = ParameterSampler({k: sampler(v) for k, v in space.items()}, n_iter=1,
                              random_state=_seed_hash(d, trial_seed))
    return next(iter(points))


def _fit_draw(learner, drawn: dict, fit_seed: int, trial: _Trial, checkpoints: bool) -> np.ndarray:
    """Fit one draw on the trial's fit rows: its checkpoints, ``(n_checkpoints, 4)``."""
    from sklearn.base import clone

    est = clone(learner).set_params(**drawn)
    if "random_state" in est.get_params(deep=False):
        est.set_params(random_state=fit_seed)
    records = []

    def record(epoch, fitted):
        records.append(_checkpoint(fitted, trial))

    if checkpoints:
        est.fit(trial.X_fit, trial.S_fit, on_epoch=record)
    else:
        record(0, est.fit(trial.X_fit, trial.S_fit))
    return np.asarray(records, dtype=np.float64)


def _checkpoint(est, trial: _Trial) -> tuple:
    """Validation covering rate, approximated accuracy and accuracy, and test accuracy of ``est``
    now. A learner without ``predict_proba`` puts all its mass on its prediction (AA = CR)."""
    pred = np.searchsorted(est.classes_, est.predict(trial.X_eval))
    if hasattr(est, "predict_proba"):
        proba = est.predict_proba(trial.X_eval)
    else:
        proba = np.eye(len(est.classes_))[pred]
    v = trial.n_val
    return (covering_rate(trial.S_val, pred[:v]), approximated_accuracy(trial.S_val, proba[:v]),
            float(np.mean(pred[:v] == trial.y_val)), float(np.mean(pred[v:] == trial.y_test)))


def _trial_step(t, curves, space, learner, trial_seed, fit_time) -> dict:
    """A trial's step metrics: each criterion's choice (:func:`plench`)."""
    step = {"step": t}
    chosen = select_checkpoints(curves)
    for name, c in chosen.items():
        step.update({f"{name}_accuracy": c.test_accuracy, f"{name}_draw": c.draw, f"{name}_epoch": c.checkpoint + 1,
                     f"{name}_value": c.value})
    configured = learner.get_params(deep=False)
    drawn = _draw(space, chosen["cr"].draw, trial_seed)
    for key in space:
        value = drawn.get(key, configured.get(key))
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            step[f"selected.learner.{key}"] = value
    step["n_checkpoints"] = int(sum(len(c) for c in curves))
    step["fit_time"] = fit_time
    return step


def _check_plench_data(params, dataset):
    n = dataset.n_samples
    n_train = int(n * (1 - params["test_size"]))
    n_val = int(n_train * params["validation_size"])
    if n_train >= n or n_val < 1:
        raise DataValidationError(
            f"protocol.test_size={params['test_size']} and validation_size={params['validation_size']} leave "
            f"{n - n_train} test and {n_val} validation row(s) of the {n} rows of {dataset.name}: each needs one")


def _check_plench_setup(params, setup):
    _need_learner(setup, "plench")
    if setup.reducer is not None:
        raise ConfigError("protocol 'plench' fits the learner on the scaled features: it takes no reducer "
                          "(leave out +reducer=...)")
    if params["n_draws"] > 1:
        space = _declared_space(setup.learner)
        if not space:
            raise ConfigError(f"protocol.n_draws={params['n_draws']}: {type(setup.learner).__name__} declares no "
                              "search_distributions or search_space to draw from; use protocol.n_draws=1")
        missing = sorted(set(space) - set(setup.learner.get_params(deep=False)))
        if missing:
            raise ConfigError(f"{type(setup.learner).__name__}'s declared search space names parameter(s) it does "
                              f"not have: {', '.join(missing)}")


#: the PLENCH protocol as the registry knows it (``protocol=plench``)
SPEC = ProtocolSpec(
    "plench", plench, protocol_defaults("plench"),
    summary_keys=tuple(f"{name}_accuracy_{stat}" for name in CRITERIA for stat in ("mean", "sem")),
    step_name="trial", count_param="n_trials",
    constraints={"n_trials": [Interval(Integral, 1, None, closed="left")],
                 "n_draws": [Interval(Integral, 1, None, closed="left")],
                 "test_size": [Interval(Real, 0, 1, closed="neither")],
                 "validation_size": [Interval(Real, 0, 1, closed="neither")],
                 "zscore": [StrOptions({"all_rows", "train_rows"})]},
    check_data=_check_plench_data, check_setup=_check_plench_setup)
