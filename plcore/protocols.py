"""Evaluation protocols (DESIGN.md section 5).

Preprocessing (``standardize`` | ``minmax`` | ``none``) is always fitted on the training
part only, as the first step of the evaluated pipeline.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import KFold
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import MinMaxScaler, StandardScaler
from tqdm.auto import tqdm

from plcore.data import PLDataset
from plcore.exceptions import ConfigError, DataValidationError
from plcore.metrics import accuracy, transductive_accuracy

__all__ = ["make_preprocessor", "build_pipeline", "FoldResult", "KFoldResult", "kfold"]

PREPROCESSING = ("standardize", "minmax", "none")


def make_preprocessor(preprocessing: str):
    """The scaler for a preprocessing name, or None for ``"none"``."""
    if preprocessing == "standardize":
        return StandardScaler()
    if preprocessing == "minmax":
        return MinMaxScaler()
    if preprocessing == "none":
        return None
    raise ConfigError(f"preprocessing must be one of {PREPROCESSING}, got {preprocessing!r}")


def build_pipeline(estimators, preprocessing: str = "standardize") -> Pipeline:
    """``make_pipeline(scaler, *estimators)`` with fresh clones of the estimators."""
    if not isinstance(estimators, (list, tuple)):
        estimators = [estimators]
    steps = [clone(e) for e in estimators if e is not None]
    scaler = make_preprocessor(preprocessing)
    if scaler is not None:
        steps.insert(0, scaler)
    return make_pipeline(*steps)


@dataclass
class FoldResult:
    fold: int
    accuracy: float
    transductive_accuracy: float | None
    fit_time: float
    predict_time: float
    test_index: np.ndarray
    y_pred: np.ndarray


@dataclass
class KFoldResult:
    folds: list = field(default_factory=list)

    def _values(self, name):
        vals = [getattr(f, name) for f in self.folds]
        return np.array([v for v in vals if v is not None], dtype=float)

    def summary(self) -> dict:
        """Summary metrics (public names: ``accuracy_mean``, ``accuracy_std``, ...)."""
        out = {}
        for name in ("accuracy", "transductive_accuracy", "fit_time", "predict_time"):
            v = self._values(name)
            if v.size:
                out[f"{name}_mean"] = float(v.mean())
                out[f"{name}_std"] = float(v.std())
        return out


def _final_step(pipe):
    return pipe.steps[-1][1] if isinstance(pipe, Pipeline) else pipe


def kfold(estimators, dataset: PLDataset, *, n_splits: int = 10, shuffle: bool = True,
          random_state=0, preprocessing: str = "standardize", progress: bool = True,
          callback=None) -> KFoldResult:
    """k-fold cross-validation of ``[reducer, ] learner`` on a partial-label data set.

    Each fold fits ``scaler -> estimators`` on the training fold's ``(X, S)`` and scores
    accuracy against the test fold's true labels. Transductive accuracy (the learner's
    ``confidences_`` vs the training fold's true labels) is reported when available.
    ``callback(fold_result)`` is called after each fold.
    """
    if not dataset.is_partial:
        raise DataValidationError(
            f"data set {dataset.name!r} has no candidate sets; generate them with a bag generator first"
        )
    if dataset.y_true is None:
        raise DataValidationError(f"data set {dataset.name!r} has no true labels to evaluate against")
    dataset.validate()
    splitter = KFold(n_splits=n_splits, shuffle=shuffle, random_state=random_state if shuffle else None)
    result = KFoldResult()
    X, S, y = dataset.X, dataset.S, dataset.y_true
    it = enumerate(splitter.split(X))
    bar = tqdm(it, total=n_splits, desc=f"{n_splits}-fold {dataset.name}", disable=None if progress else True,
               leave=False, unit="fold")
    for i, (train, test) in bar:
        pipe = build_pipeline(estimators, preprocessing)
        t0 = time.perf_counter()
        pipe.fit(X[train], S[train])
        t1 = time.perf_counter()
        pred = pipe.predict(X[test])
        t2 = time.perf_counter()
        final = _final_step(pipe)
        trans = None
        if getattr(final, "confidences_", None) is not None:
            trans = transductive_accuracy(y[train], final.confidences_, final.classes_)
        fold = FoldResult(i, accuracy(y[test], pred), trans, t1 - t0, t2 - t1, test, pred)
        result.folds.append(fold)
        bar.set_postfix(acc=f"{fold.accuracy:.3f}")
        if callback is not None:
            callback(fold)
    return result
