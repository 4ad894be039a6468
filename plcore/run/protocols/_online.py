"""The online protocol: test-then-train over a shuffled stream, repeated with fresh candidate
sets and order; the metric is the mean mistake rate after each trial."""

from __future__ import annotations

import time
from typing import Callable

import numpy as np
from sklearn.base import clone

from plcore.data import PLDataset
from plcore.exceptions import ConfigError
from plcore.registry import ProtocolSpec
from plcore.run.defaults import protocol_defaults
from plcore.run.pipeline import make_preprocessor
from plcore.run.protocols._shared import (
    apply_bags,
    _check_preprocessing,
    _checks,
    _EXACT,
    _feeds_truth,
    _label_source,
    _mean_std,
    _need_learner,
    _PREPROCESSING,
    _progress,
    ProtocolResult,
    Setup,
    _singletons,
)
from plcore.tags import get_pll_tags
from plcore.utils import dense_candidates
from plcore.validation import Integral, Interval


def prequential(learner, X, S, classes, kernel=None):
    """Predict each example, then learn from it (test-then-train); return the predictions.

    ``learner`` is unfitted (a fresh clone); it ends fitted on the whole stream. ``X``
    (n, d) and the dense boolean ``S`` (n, q) are in stream order. With a ``kernel`` (the
    compiled predict-then-update loop an online plugin registers with its component,
    ``ComponentSpec.prequential``) one call does it all; otherwise the learner is
    initialised with ``partial_fit(X[:0], S[:0], classes=classes)`` and updated with one
    ``predict`` + ``partial_fit`` per example. Both give the same predictions (the
    conformance suite checks registered kernels against this loop).
    """
    if kernel is not None:
        return np.asarray(kernel(learner, X, S, classes))
    learner.partial_fit(X[:0], S[:0], classes=classes)
    preds = np.empty(X.shape[0], dtype=np.asarray(classes).dtype)
    for i in range(X.shape[0]):
        preds[i] = learner.predict(X[i:i + 1])[0]
        learner.partial_fit(X[i:i + 1], S[i:i + 1])
    return preds


def online(setup: Setup, dataset: PLDataset, *, n_runs: int = 100, preprocessing: str = "none",
           exact_labels: str = "auto", select: dict | None = None, random_state=0, progress: bool = True,
           callback: Callable | None = None) -> ProtocolResult:
    """Online protocol: predict each example before learning from it (test-then-train).

    Each of ``n_runs`` runs draws fresh candidate sets (from the bag generator) and a
    fresh random order. The metric is the mistake rate w.r.t. the true label after each
    trial; the mean curve over runs is ``curves["mistake_rate"]`` and its last value
    ``mistake_rate_final_mean``. The stream is evaluated by :func:`prequential`, with the
    learner's registered compiled kernel when it has one. The learner must be tagged
    ``online``. Exact-label baselines (tag ``exact_label_baseline``) are fed singleton
    sets of the true label (``exact_labels="auto"``). Preprocessing, if any, is fitted on
    the whole stream (everything is training data).
    """
    if not isinstance(setup, Setup):
        setup = Setup(learner=setup)
    _need_learner(setup, "online")
    _check_no_select({"select": select})
    if not get_pll_tags(setup.learner).online:
        raise ConfigError(f"protocol 'online' needs an online learner (tag online, with partial_fit); "
                          f"{type(setup.learner).__name__} is not one")
    if setup.reducer is not None:
        raise ConfigError("protocol 'online' streams raw examples: a reducer is not supported")
    feed_truth = _feeds_truth(setup.learner, exact_labels)
    from plcore.registry import get_registry

    kernel = get_registry().prequential_kernel(setup.learner)
    scaler = make_preprocessor(preprocessing)
    X = dataset.X if scaler is None else scaler.fit_transform(dataset.X)
    n, q = dataset.n_samples, dataset.n_classes
    y = dataset.y_true
    rng = np.random.RandomState(random_state)
    curves = np.zeros((n_runs, n))
    result = ProtocolResult("online")
    _label_source(result, feed_truth, setup.learner)
    classes = np.arange(q)
    for r in _progress(range(n_runs), n_runs, f"online {dataset.name}", progress):
        seed = int(rng.randint(np.iinfo(np.int32).max))
        S = _singletons(y, q) if feed_truth else dense_candidates(apply_bags(dataset, setup.bags, seed).S)
        order = np.random.RandomState(seed).permutation(n)
        t0 = time.perf_counter()
        preds = prequential(clone(setup.learner), X[order], S[order], classes, kernel)
        mistakes = (preds != y[order]).astype(float)
        curves[r] = np.cumsum(mistakes) / np.arange(1, n + 1)
        step = {"step": r, "mistake_rate_final": float(curves[r, -1]),
                "fit_time": time.perf_counter() - t0}
        result.steps.append(step)
        if callback is not None:
            callback(step)
    result.curves["mistake_rate"] = curves.mean(axis=0)
    result.curves["mistake_rate_std"] = curves.std(axis=0)
    _mean_std(result.steps, "mistake_rate_final", result.summary)
    _mean_std(result.steps, "fit_time", result.summary)
    return result


def _check_no_select(params, dataset=None):
    if (params.get("select") or {}).get("method", "none") != "none":
        raise ConfigError("protocol 'online' does not select hyperparameters: a stream has no training part to "
                          "search before it is predicted; choose them with kfold/holdout and protocol.select")


#: the online protocol as the registry knows it (``protocol=online``)
SPEC = ProtocolSpec(
    "online", online, protocol_defaults("online"),
    summary_keys=("mistake_rate_final_mean", "mistake_rate_final_std"), step_name="run", count_param="n_runs",
    constraints={"n_runs": [Interval(Integral, 1, None, closed="left")], "exact_labels": _EXACT,
                 "preprocessing": _PREPROCESSING, "select": [dict]},
    check_data=_checks(_check_preprocessing, _check_no_select))
