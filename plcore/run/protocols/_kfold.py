"""The k-fold protocol: shuffled, seeded folds through the shared fold loop."""

from __future__ import annotations

from typing import Callable

from sklearn.model_selection import KFold

from plcore.data import PLDataset
from plcore.exceptions import DataValidationError
from plcore.registry import ProtocolSpec
from plcore.run.defaults import protocol_defaults
from plcore.run.protocols._shared import (
    apply_bags,
    _check_preprocessing,
    _checks,
    _EXACT,
    _feeds_truth,
    LABEL_FREE_KEYS,
    _N_JOBS,
    _need_learner,
    _PREPROCESSING,
    ProtocolResult,
    Setup,
    _singletons,
    _split_candidates,
)
from plcore.run.protocols._splits import _check_selection, _evaluate_splits
from plcore.run.selection import oracle
from plcore.validation import Integral, Interval, StrOptions


def kfold(setup: Setup, dataset: PLDataset, *, n_splits: int = 10, shuffle: bool = True,
          preprocessing: str = "standardize", fit_reducer_on: str = "train", reduced_preprocessing: str = "none",
          exact_labels: str = "auto", refit: bool = True, select: dict | None = None, n_jobs: int = 1,
          random_state=0, progress: bool = True, callback: Callable | None = None) -> ProtocolResult:
    """k-fold cross-validation: fit ``scaler -> [reducer ->] learner`` on each training fold.

    Accuracy is measured on the test fold's true labels; transductive accuracy (the
    learner's ``confidences_`` vs the training fold's truth) where available.
    Summary: ``accuracy_mean/std``, ``transductive_accuracy_mean/std``, ``fit_time_mean``.
    Data without true labels are estimated label-free on the test folds' candidate sets:
    ``covering_rate_mean/std`` and, where the learner gives scores,
    ``approximated_accuracy_mean/std`` (:mod:`plcore.metrics`).
    ``fit_reducer_on="all"`` fits the reducer transductively on every row's features and
    candidate sets (test rows' true labels are never used) -- how some papers appear to have
    evaluated dimensionality reduction; the default ``"train"`` is the inductive protocol.
    ``reduced_preprocessing`` (default ``"none"``) scales the reducer's output before the
    learner (see :class:`RescaledReducer`). An exact-label baseline (tag
    ``exact_label_baseline``) is trained on the true labels (``exact_labels="auto"``; the
    run tag ``training_labels`` says which labels the learner saw). ``refit=True`` ends with
    the pipeline fitted on all rows (``result.model``; logged as the run's MLflow model).
    ``select`` (:mod:`plcore.run.selection`) chooses hyperparameters by nested, label-free inner
    cross-validation on each training fold; the choices are step metrics ``selected.<param>``.
    ``n_jobs`` runs the folds in that many processes (-1: one per core) and the refit's
    selection candidates likewise; the steps are those of the serial run (:func:`_map_steps`).
    """
    if not isinstance(setup, Setup):
        setup = Setup(learner=setup)
    _need_learner(setup, "kfold")
    feed_truth = _feeds_truth(setup.learner, exact_labels, dataset)
    select = _check_selection(setup, select, feed_truth, fit_reducer_on, dataset)
    if select["method"] == "oracle":
        return oracle(kfold, setup, dataset, select, score_key="accuracy_mean", callback=callback, refit=refit,
                      n_splits=n_splits, shuffle=shuffle, preprocessing=preprocessing, fit_reducer_on=fit_reducer_on,
                      reduced_preprocessing=reduced_preprocessing, exact_labels=exact_labels,
                      n_jobs=n_jobs, random_state=random_state)
    ds = apply_bags(dataset, setup.bags, random_state)
    ds.validate()
    S_learner = _singletons(ds.y_true, ds.n_classes) if feed_truth else None
    splitter = KFold(n_splits=n_splits, shuffle=shuffle, random_state=random_state if shuffle else None)
    tasks = [dict(setup=setup, X=ds.X, S=_split_candidates(dataset, setup.bags, ds, train, random_state),
                  y=ds.y_true, train=train, test=test, preprocessing=preprocessing,
                  step=i, fit_reducer_on=fit_reducer_on, reduced_preprocessing=reduced_preprocessing,
                  classes=ds.classes, S_learner=S_learner, select=select, random_state=random_state)
             for i, (train, test) in enumerate(splitter.split(ds.X))]
    return _evaluate_splits("kfold", setup, tasks, desc=f"{n_splits}-fold {ds.name}", feed_truth=feed_truth,
                            preprocessing=preprocessing, reduced_preprocessing=reduced_preprocessing,
                            refit_data=(lambda: ds) if refit else None,
                            select=select, random_state=random_state, n_jobs=n_jobs, progress=progress,
                            callback=callback)


def _check_kfold_data(params, dataset):
    if params["n_splits"] > dataset.n_samples:
        raise DataValidationError(f"protocol.n_splits={params['n_splits']} exceeds the {dataset.n_samples} rows "
                                  f"of {dataset.name}")


#: the k-fold protocol as the registry knows it (``protocol=kfold``)
SPEC = ProtocolSpec(
    "kfold", kfold, protocol_defaults("kfold"),
    summary_keys=("accuracy_mean", "accuracy_std"), label_free_keys=LABEL_FREE_KEYS, step_name="fold",
    count_param="n_splits",
    constraints={"n_splits": [Interval(Integral, 2, None, closed="left")], "shuffle": ["boolean"],
                 "preprocessing": _PREPROCESSING, "fit_reducer_on": [StrOptions({"train", "all"})],
                 "reduced_preprocessing": _PREPROCESSING, "exact_labels": _EXACT, "refit": ["boolean"],
                 "select": [dict], "n_jobs": _N_JOBS},
    check_data=_checks(_check_kfold_data, _check_preprocessing))
