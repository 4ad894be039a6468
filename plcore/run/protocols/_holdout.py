"""The holdout protocol: repeated random (optionally stratified) train / test splits through the
shared fold loop."""

from __future__ import annotations

from typing import Callable

import numpy as np
from sklearn.model_selection import train_test_split

from plcore.data import PLDataset
from plcore.exceptions import ConfigError, DataValidationError
from plcore.registry import ProtocolSpec
from plcore.run.defaults import protocol_defaults
from plcore.run.protocols._shared import (
    apply_bags,
    _check_preprocessing,
    _checks,
    _EXACT,
    _feeds_truth,
    LABEL_FREE_KEYS,
    _learns_from_labels,
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
from plcore.validation import Integral, Interval, Real


def holdout(setup: Setup, dataset: PLDataset, *, test_size: float = 0.2, n_repeats: int = 1,
            preprocessing: str = "standardize", stratify: bool = False, official_split: bool = False,
            reduced_preprocessing: str = "none",
            exact_labels: str = "auto", refit: bool = True, select: dict | None = None, n_jobs: int = 1,
            random_state=0, progress: bool = True, callback: Callable | None = None) -> ProtocolResult:
    """Repeated random train/test splits (``n_repeats`` seeds from ``random_state``).

    Exact-label baselines are trained on the true labels, as in :func:`kfold`; data without
    true labels are estimated label-free, as :func:`kfold` does. ``refit=True``
    ends with the pipeline fitted on all rows (candidate sets drawn with ``random_state``).
    ``official_split``: train on the data set's own training part and test on its test part
    (``meta["test_rows"]``: CIFAR-10, CIFAR-100, PLCIFAR10, Fashion-MNIST) in every repeat, the
    repeats differing in their seeds and candidate draws; ``test_size`` and ``stratify`` unused.
    ``n_jobs`` runs the repeats in that many processes, as :func:`kfold` runs its folds.
    """
    if not isinstance(setup, Setup):
        setup = Setup(learner=setup)
    _need_learner(setup, "holdout")
    if not 0.0 < test_size < 1.0:
        raise ConfigError(f"test_size must be in (0, 1), got {test_size}")
    feed_truth = _feeds_truth(setup.learner, exact_labels, dataset)
    select = _check_selection(setup, select, feed_truth, dataset=dataset)
    official = _official_test_rows(dataset) if official_split else None
    if stratify and dataset.y_true is None:
        raise DataValidationError(f"stratify=true splits by the true labels, and data set {dataset.name!r} has none")
    if select["method"] == "oracle":
        return oracle(holdout, setup, dataset, select, score_key="accuracy_mean", callback=callback, refit=refit,
                      test_size=test_size, n_repeats=n_repeats, preprocessing=preprocessing, stratify=stratify,
                      official_split=official_split, reduced_preprocessing=reduced_preprocessing,
                      exact_labels=exact_labels, n_jobs=n_jobs,
                      random_state=random_state)
    rng = np.random.RandomState(random_state)
    seeds = rng.randint(np.iinfo(np.int32).max, size=n_repeats)
    learns = _learns_from_labels(dataset, setup.bags)
    tasks = []
    for r in range(n_repeats):
        # a generator that learns from labels draws each split's candidates itself (_split_candidates)
        ds = dataset if learns else apply_bags(dataset, setup.bags, int(seeds[r]))
        idx = np.arange(ds.n_samples)
        if official is not None:
            train, test = idx[~official], idx[official]
        else:
            train, test = train_test_split(idx, test_size=test_size, random_state=int(seeds[r]),
                                           stratify=ds.y_true if stratify else None)
        S_learner = _singletons(ds.y_true, ds.n_classes) if feed_truth else None
        tasks.append(dict(setup=setup, X=ds.X, S=_split_candidates(dataset, setup.bags, ds, train, int(seeds[r])),
                          y=ds.y_true, train=train, test=test,
                          preprocessing=preprocessing, step=r, reduced_preprocessing=reduced_preprocessing,
                          classes=ds.classes, S_learner=S_learner, select=select, random_state=int(seeds[r])))
    return _evaluate_splits("holdout", setup, tasks, desc=f"holdout {dataset.name}", feed_truth=feed_truth,
                            preprocessing=preprocessing, reduced_preprocessing=reduced_preprocessing,
                            refit_data=(lambda: apply_bags(dataset, setup.bags, random_state)) if refit else None,
                            select=select, random_state=random_state, n_jobs=n_jobs, progress=progress,
                            callback=callback)


def _official_test_rows(dataset: PLDataset) -> np.ndarray:
    rows = dataset.meta.get("test_rows")
    if rows is None or not 0 < int(np.sum(rows)) < dataset.n_samples:
        raise ConfigError(f"protocol.official_split=true needs a data set with its own test part (cifar10, cifar100, "
                          f"plcifar10, fashion-mnist); {dataset.name} has none: use protocol.test_size")
    return np.asarray(rows, dtype=bool)


def _check_holdout_data(params, dataset):
    if params.get("official_split"):
        _official_test_rows(dataset)
        return
    n_test = int(np.ceil(params["test_size"] * dataset.n_samples))
    if n_test < 1 or n_test >= dataset.n_samples:
        raise DataValidationError(f"protocol.test_size={params['test_size']} leaves no training or no test rows "
                                  f"of the {dataset.n_samples} rows of {dataset.name}")


#: the holdout protocol as the registry knows it (``protocol=holdout``)
SPEC = ProtocolSpec(
    "holdout", holdout, protocol_defaults("holdout"),
    summary_keys=("accuracy_mean", "accuracy_std"), label_free_keys=LABEL_FREE_KEYS, step_name="repeat",
    count_param="n_repeats",
    constraints={"test_size": [Interval(Real, 0, 1, closed="neither")],
                 "n_repeats": [Interval(Integral, 1, None, closed="left")], "stratify": ["boolean"],
                 "official_split": ["boolean"],
                 "preprocessing": _PREPROCESSING, "reduced_preprocessing": _PREPROCESSING,
                 "exact_labels": _EXACT, "refit": ["boolean"], "select": [dict], "n_jobs": _N_JOBS},
    check_data=_checks(_check_holdout_data, _check_preprocessing))
