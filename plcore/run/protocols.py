"""Evaluation protocols: k-fold, holdout, online (test-then-train) and partial-label clustering.

Preprocessing (``standardize`` | ``minmax`` | ``none``) is always fitted on the training
part only, as the first step of the evaluated pipeline.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import KFold, train_test_split
from tqdm.auto import tqdm

from plcore.data import PLDataset
from plcore.exceptions import ConfigError, DataValidationError
from plcore.metrics import accuracy, best_cluster_map, clustering_accuracy, nmi, transductive_accuracy
from plcore.preprocessing import fitted_reducer
from plcore.progress import enabled as iteration_progress
from plcore.registry import ProtocolSpec
from plcore.run.defaults import SELECT_DEFAULTS, protocol_defaults
from plcore.run.pipeline import build_pipeline, final_step, make_preprocessor
from plcore.run.selection import candidates, check_select, make_search, oracle, select_clusterer, selected_values
from plcore.tags import get_pll_tags
from plcore.utils import dense_candidates
from plcore.validation import Integral, Interval, Options, Real, StrOptions

__all__ = ["Setup", "ProtocolResult",
           "bags_apply", "apply_bags", "prequential", "kfold", "holdout", "online", "clustering", "PROTOCOLS",
           "default_config"]


@dataclass
class Setup:
    """The components of one run (any may be None)."""

    learner: Any = None
    reducer: Any = None
    clusterer: Any = None
    bags: Any = None

    def estimators(self):
        return [e for e in (self.reducer, self.learner) if e is not None]


@dataclass
class ProtocolResult:
    """What a protocol returns; :mod:`plcore.tracking` logs it generically.

    ``steps`` holds one dict of metrics per fold / run / partition (key ``step``);
    ``summary`` the public summary metrics; ``predictions`` rows for the predictions
    artifact; ``curves`` named 1-D arrays (e.g. the online mistake-rate curve);
    ``extra`` anything else (e.g. a confusion matrix); ``tags`` strings that describe what
    ran (e.g. ``training_labels``), logged as run tags; ``params`` what the protocol derived
    from the data (e.g. clustering's ``classes_scored``), logged as run parameters; ``model``
    the refitted pipeline (``{"pipeline", "X_example", "classes", "requirements"}``) where the
    protocol refits.
    """

    protocol: str
    steps: list = field(default_factory=list)
    summary: dict = field(default_factory=dict)
    predictions: list = field(default_factory=list)
    curves: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)
    tags: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)
    model: Any = None


def _mean_std(steps, key, out, prefix=None):
    vals = np.array([s[key] for s in steps if s.get(key) is not None], dtype=float)
    if vals.size:
        out[f"{prefix or key}_mean"] = float(vals.mean())
        out[f"{prefix or key}_std"] = float(vals.std())


def bags_apply(dataset: PLDataset, bags) -> bool:
    """Whether ``bags`` changes the candidate sets of ``dataset``.

    A generator makes candidate sets for data with exact labels only; on data that carry
    their own candidate sets it applies only when tagged ``corrupts_existing_labels``
    (``DropTrueBags``). The app and every protocol decide this here.
    """
    return bags is not None and (not dataset.is_partial or get_pll_tags(bags).corrupts_existing_labels)


def apply_bags(dataset: PLDataset, bags, random_state=None, fit_rows=None) -> PLDataset:
    """Candidate sets for a run: ``bags`` applied where :func:`bags_apply`, else the data's own.

    ``fit_rows``: the only rows a generator that learns from features and labels (tag
    ``learns_from_labels``) may fit to -- a split's training part. Raises when the data set has
    exact labels only and no generator is given.
    """
    if not bags_apply(dataset, bags):
        if not dataset.is_partial:
            raise DataValidationError(
                f"data set {dataset.name!r} has exact labels only: choose a bag generator "
                "(e.g. bags=uniform) to create candidate sets")
        return dataset
    if dataset.y_true is None:
        raise DataValidationError(f"bag generator needs the true labels of {dataset.name!r}")
    S = bags.generate(dataset.y_true, dataset.X, random_state, n_classes=dataset.n_classes, S=dataset.S,
                      fit_rows=fit_rows)
    return dataset.with_candidates(S)


def _learns_from_labels(dataset: PLDataset, bags) -> bool:
    """Whether ``bags`` applies to ``dataset`` and fits a model to its labels (per split, then)."""
    return bags_apply(dataset, bags) and get_pll_tags(bags).learns_from_labels


def _split_candidates(dataset: PLDataset, bags, ds: PLDataset, train, random_state):
    """A split's candidate matrix: ``ds.S`` (generated once for all rows), or, for a generator
    that learns from labels, candidates generated with the split's training rows only."""
    if _learns_from_labels(dataset, bags):
        return apply_bags(dataset, bags, random_state, fit_rows=train).S
    return ds.S


def _progress(iterable, total, desc, progress):
    """The steps of a protocol with a bar (ETA) on a terminal; inside, methods may show a
    per-iteration bar (:mod:`plcore.progress`)."""
    bar = tqdm(iterable, total=total, desc=desc, disable=None if progress else True, leave=True)
    with iteration_progress(progress):
        yield from bar


def _map_steps(fn, tasks, *, n_jobs: int, progress: bool, total: int, desc: str):
    """``fn(**task)`` for every task, yielded in task order: here when ``n_jobs == 1``, else in
    ``n_jobs`` worker processes (joblib's loky; -1: one per core). Each worker is limited to
    ``cpu_count // n_jobs`` BLAS / OpenMP threads (threadpoolctl, and the thread variables
    PyTorch reads), so the workers do not oversubscribe the machine; the steps' results are
    those of the serial run at the same thread count (their seeds do not depend on the order)."""
    if n_jobs == 1:
        for task in _progress(tasks, total, desc, progress):
            yield fn(**task)
        return
    from joblib import Parallel, cpu_count, delayed, effective_n_jobs

    from plcore.utils.workers import worker_pool

    workers = min(effective_n_jobs(n_jobs), max(1, len(tasks)))
    with worker_pool(inner_max_num_threads=max(1, cpu_count() // workers)):
        results = Parallel(n_jobs=workers, return_as="generator")(delayed(fn)(**task) for task in tasks)
        yield from _progress(results, total, desc, progress)


def _split_step(**kwargs):
    """One split evaluated (:func:`_evaluate_split`): ``(step metrics, prediction rows)``; a
    module-level function, so that worker processes can run it."""
    predictions = []
    step = _evaluate_split(predictions=predictions, **kwargs)
    return step, predictions


def _fit_pipeline(pipe, X, S, train, *, has_reducer: bool, S_learner=None, reducer_rows=None):
    """Fit ``scaler -> [reducer ->] learner`` on the training rows ``train``.

    The reducer sees the candidate sets ``S`` of ``reducer_rows`` (default the training rows;
    all rows for a transductive fit -- their features and candidate sets, never their true
    labels); the learner is fitted on the training rows with ``S_learner`` (default ``S``; the
    true labels' singletons for an exact-label baseline, which the reducer never sees).
    """
    if S_learner is None and reducer_rows is None:
        return pipe.fit(X[train], S[train])  # the ordinary inductive fit
    S_learner = S if S_learner is None else S_learner
    rows = train if reducer_rows is None else reducer_rows
    n_pre = len(pipe.steps) - (2 if has_reducer else 1)
    Xs = X
    for _, scaler in pipe.steps[:n_pre]:
        Xs = scaler.fit(Xs[train]).transform(Xs)
    Z = Xs[train]
    if has_reducer:
        reducer = pipe.steps[-2][1]
        reducer.fit(Xs[rows], S[rows])  # a RescaledReducer also scales its output on these rows
        Z = reducer.transform(Z)
    pipe.steps[-1][1].fit(Z, S_learner[train])
    return pipe


def _feeds_truth(learner, exact_labels: str) -> bool:
    """Whether the learner is trained on singleton sets of the true label (``exact_labels``:
    ``auto`` = when it is tagged ``exact_label_baseline``, ``always``, ``never``)."""
    if exact_labels not in ("auto", "always", "never"):
        raise ConfigError(f"exact_labels must be auto, always or never, got {exact_labels!r}")
    return exact_labels == "always" or (exact_labels == "auto" and get_pll_tags(learner).exact_label_baseline)


def _singletons(y, q):
    S = np.zeros((y.shape[0], q), dtype=bool)
    S[np.arange(y.shape[0]), y] = True
    return S


def _label_source(result, feed_truth, learner):
    result.tags["training_labels"] = "exact" if feed_truth else "candidates"
    if feed_truth:
        print(f"note: {type(learner).__name__} is trained on the true labels (exact-label baseline)", flush=True)


def _prediction_rows(step, test, y, pred, scores, classes):
    """Rows of ``predictions.csv``: indices, class indices and names, one score per class."""
    names = [str(c) for c in classes]
    rows = []
    for j, (i, t, p) in enumerate(zip(test, y[test], pred)):
        row = {"step": step, "index": int(i), "y_true": int(t), "y_pred": int(p),
               "label_true": names[int(t)], "label_pred": names[int(p)]}
        if scores is not None:
            row.update({f"score_{n}": float(v) for n, v in zip(names, scores[j])})
        rows.append(row)
    return rows


def _refit(setup, X, S, preprocessing, reduced_preprocessing, classes, S_learner=None, select=None,
           random_state=None, n_jobs=1):
    """The pipeline refitted on all rows (``refit=True``; with nested selection, the search
    run on all rows -- its candidates in ``n_jobs`` processes -- and its best pipeline): what
    the run logs as its model."""
    pipe = build_pipeline(setup.estimators(), preprocessing, reduced_preprocessing)
    if select is not None and select["method"] != "none":
        from plcore.utils.workers import worker_pool

        with worker_pool():  # the search's n_jobs workers end with this process
            pipe = make_search(pipe, select, random_state, n_jobs=n_jobs).fit(X, S).best_estimator_
    else:
        _fit_pipeline(pipe, X, S, np.arange(X.shape[0]), has_reducer=setup.reducer is not None, S_learner=S_learner)
    from plcore.registry import pip_requirements

    return {"pipeline": pipe, "X_example": X[:5], "classes": list(classes), "requirements": pip_requirements()}


def _check_selection(setup, select, feed_truth, fit_reducer_on="train"):
    """Normalised ``select`` settings; the combinations nested selection does not support fail here."""
    select = check_select(select, setup)
    if select["method"] in ("grid", "random"):
        if feed_truth:
            raise ConfigError("protocol.select with an exact-label baseline is not supported: its inner "
                              "folds would score true labels; use exact_labels=never or select.method=none")
        if fit_reducer_on == "all" and setup.reducer is not None:
            raise ConfigError("protocol.select with fit_reducer_on=all is not supported: the inner folds "
                              "would see the outer test rows")
    return select


def _evaluate_split(setup, X, S, y, train, test, preprocessing, step, predictions, fit_reducer_on="train",
                    reduced_preprocessing="none", classes=None, S_learner=None, select=None, random_state=None):
    """Fit on ``train``, predict ``test``; append the prediction rows; return the step's metrics."""
    if fit_reducer_on not in ("train", "all"):
        raise ConfigError(f"fit_reducer_on must be 'train' or 'all', got {fit_reducer_on!r}")
    pipe = build_pipeline(setup.estimators(), preprocessing, reduced_preprocessing)
    t0 = time.perf_counter()
    selected = {}
    if select is not None and select["method"] != "none":  # nested: inner CV on the training part only
        search = make_search(pipe, select, random_state).fit(X[train], S[train])
        pipe, selected = search.best_estimator_, selected_values(search, select)
    else:
        transductive = fit_reducer_on == "all" and setup.reducer is not None
        _fit_pipeline(pipe, X, S, train, has_reducer=setup.reducer is not None, S_learner=S_learner,
                      reducer_rows=np.arange(X.shape[0]) if transductive else None)
    t1 = time.perf_counter()
    pred = pipe.predict(X[test])
    t2 = time.perf_counter()
    final = final_step(pipe)
    trans = None
    if S_learner is None and getattr(final, "confidences_", None) is not None:  # trivial on true labels
        trans = transductive_accuracy(y[train], final.confidences_, final.classes_)
    scores = pipe.predict_proba(X[test]) if hasattr(pipe, "predict_proba") else None
    classes = np.arange(S.shape[1]) if classes is None else classes
    predictions.extend(_prediction_rows(step, test, y, pred, scores, classes))
    out = {"step": step, "accuracy": accuracy(y[test], pred), "transductive_accuracy": trans,
           "fit_time": t1 - t0, "predict_time": t2 - t1, **selected}
    if setup.reducer is not None:  # the reducer is the step before the learner
        reducer = fitted_reducer(pipe.steps[-2][1])
        out["n_components"] = getattr(reducer, "n_components_", None)
        conf = getattr(reducer, "confidences_", None)
        if conf is not None:
            conf = conf[train] if conf.shape[0] == X.shape[0] and len(train) != X.shape[0] else conf
            out["reducer_transductive_accuracy"] = transductive_accuracy(y[train], conf)
    return out


def _need_learner(setup, name):
    if setup.learner is None:
        raise ConfigError(f"protocol {name!r} needs a learner (e.g. +learner=plknn)")


def kfold(setup: Setup, dataset: PLDataset, *, n_splits: int = 10, shuffle: bool = True,
          preprocessing: str = "standardize", fit_reducer_on: str = "train", reduced_preprocessing: str = "none",
          exact_labels: str = "auto", refit: bool = True, select: dict | None = None, n_jobs: int = 1,
          random_state=0, progress: bool = True, callback: Callable | None = None) -> ProtocolResult:
    """k-fold cross-validation: fit ``scaler -> [reducer ->] learner`` on each training fold.

    Accuracy is measured on the test fold's true labels; transductive accuracy (the
    learner's ``confidences_`` vs the training fold's truth) where available.
    Summary: ``accuracy_mean/std``, ``transductive_accuracy_mean/std``, ``fit_time_mean``.
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
    feed_truth = _feeds_truth(setup.learner, exact_labels)
    select = _check_selection(setup, select, feed_truth, fit_reducer_on)
    if select["method"] == "oracle":
        return oracle(kfold, setup, dataset, select, score_key="accuracy_mean", callback=callback, refit=refit,
                      n_splits=n_splits, shuffle=shuffle, preprocessing=preprocessing, fit_reducer_on=fit_reducer_on,
                      reduced_preprocessing=reduced_preprocessing, exact_labels=exact_labels,
                      n_jobs=n_jobs, random_state=random_state)
    ds = apply_bags(dataset, setup.bags, random_state)
    if ds.y_true is None:
        raise DataValidationError(f"data set {ds.name!r} has no true labels to evaluate against")
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


def _evaluate_splits(name, setup, tasks, *, desc, feed_truth, preprocessing, reduced_preprocessing, refit_data,
                     select, random_state, n_jobs, progress, callback) -> ProtocolResult:
    """The step loop kfold and holdout share: every split of ``tasks`` evaluated
    (:func:`_split_step`, in ``n_jobs`` processes), each step reported to ``callback`` in
    order, the summary, and, given ``refit_data()`` (the data set with its candidate sets),
    the pipeline refitted on all its rows."""
    result = ProtocolResult(name)
    _label_source(result, feed_truth, setup.learner)
    for step, predictions in _map_steps(_split_step, tasks, n_jobs=n_jobs, progress=progress, total=len(tasks),
                                        desc=desc):
        result.steps.append(step)
        result.predictions.extend(predictions)
        if callback is not None:
            callback(step)
    for key in ("accuracy", "transductive_accuracy", "fit_time", "predict_time", "n_components",
                "reducer_transductive_accuracy"):
        _mean_std(result.steps, key, result.summary)
    if refit_data is not None:
        ds = refit_data()
        S_learner = _singletons(ds.y_true, ds.n_classes) if feed_truth else None
        result.model = _refit(setup, ds.X, ds.S, preprocessing, reduced_preprocessing, ds.classes, S_learner,
                              select, random_state, n_jobs)
    return result


def holdout(setup: Setup, dataset: PLDataset, *, test_size: float = 0.2, n_repeats: int = 1,
            preprocessing: str = "standardize", stratify: bool = False, reduced_preprocessing: str = "none",
            exact_labels: str = "auto", refit: bool = True, select: dict | None = None, n_jobs: int = 1,
            random_state=0, progress: bool = True, callback: Callable | None = None) -> ProtocolResult:
    """Repeated random train/test splits (``n_repeats`` seeds from ``random_state``).

    Exact-label baselines are trained on the true labels, as in :func:`kfold`. ``refit=True``
    ends with the pipeline fitted on all rows (candidate sets drawn with ``random_state``).
    ``n_jobs`` runs the repeats in that many processes, as :func:`kfold` runs its folds.
    """
    if not isinstance(setup, Setup):
        setup = Setup(learner=setup)
    _need_learner(setup, "holdout")
    if not 0.0 < test_size < 1.0:
        raise ConfigError(f"test_size must be in (0, 1), got {test_size}")
    feed_truth = _feeds_truth(setup.learner, exact_labels)
    select = _check_selection(setup, select, feed_truth)
    if select["method"] == "oracle":
        return oracle(holdout, setup, dataset, select, score_key="accuracy_mean", callback=callback, refit=refit,
                      test_size=test_size, n_repeats=n_repeats, preprocessing=preprocessing, stratify=stratify,
                      reduced_preprocessing=reduced_preprocessing, exact_labels=exact_labels, n_jobs=n_jobs,
                      random_state=random_state)
    rng = np.random.RandomState(random_state)
    seeds = rng.randint(np.iinfo(np.int32).max, size=n_repeats)
    learns = _learns_from_labels(dataset, setup.bags)
    tasks = []
    for r in range(n_repeats):
        # a generator that learns from labels draws each split's candidates itself (_split_candidates)
        ds = dataset if learns else apply_bags(dataset, setup.bags, int(seeds[r]))
        idx = np.arange(ds.n_samples)
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


def stratified_mask(y, rho: float, rng) -> np.ndarray:
    """The PLC demo's labelled rows: for each class in label order ``ceil(rho n_c)`` rows at
    random, the list cut to ``round(rho n)`` (the rule that reproduces the demo's stored MSRCv2
    and ecoli masks: their last classes lose the rows the cut removes)."""
    y = np.asarray(y)
    picked = [rng.permutation(np.flatnonzero(y == c))[:int(np.ceil(rho * np.sum(y == c)))] for c in np.unique(y)]
    labelled = np.zeros(y.size, dtype=bool)
    labelled[np.concatenate(picked)[:int(round(rho * y.size))]] = True
    return labelled


def clustering_partitions(dataset: PLDataset, *, rho: float, n_partitions: int, splits: str,
                          random_state, draw: str = "stratified"):
    """Labelled masks: the data set's stored splits (``splits="auto"|"file"``), else ``n_partitions``
    draws of ``round(rho n)`` rows, ``draw="stratified"`` by true class (:func:`stratified_mask`)
    or ``"uniform"``."""
    stored = dataset.meta.get("splits")
    if splits == "file" and not stored:
        raise ConfigError(f"splits=file but data set {dataset.name!r} carries no stored splits")
    if stored and splits in ("auto", "file"):
        return [(np.asarray(tr, bool), np.asarray(te, bool)) for tr, te in stored]
    if splits not in ("auto", "random", "file"):
        raise ConfigError(f"splits must be auto, file or random, got {splits!r}")
    if draw not in ("stratified", "uniform"):
        raise ConfigError(f"draw must be stratified or uniform, got {draw!r}")
    if not 0.0 <= rho <= 1.0:
        raise ConfigError(f"rho must be in [0, 1], got {rho}")
    if draw == "stratified" and dataset.y_true is None:
        raise DataValidationError(f"draw=stratified needs the true labels of {dataset.name!r}; use draw=uniform")
    rng = np.random.RandomState(random_state)
    n = dataset.n_samples
    out = []
    for _ in range(n_partitions):
        if draw == "stratified":
            labelled = stratified_mask(dataset.y_true, rho, rng)
        else:
            labelled = np.zeros(n, dtype=bool)
            labelled[rng.choice(n, size=int(round(rho * n)), replace=False)] = True
        out.append((labelled, ~labelled))
    return out


def _present_classes(dataset: PLDataset, classes: str):
    """The label columns clustered and scored: those with a true instance (``classes="present"``;
    Lost has 16 columns but 14 such classes), or all of them."""
    if classes not in ("present", "all"):
        raise ConfigError(f"classes must be present or all, got {classes!r}")
    if classes == "all":
        return np.arange(dataset.n_classes)
    return np.flatnonzero(np.bincount(dataset.y_true, minlength=dataset.n_classes) > 0)


def _diagnostics(clusterer, y, evaluated) -> dict:
    """What a clusterer exposes about itself, scored on the evaluated rows: the accuracy of its
    ``pseudo_labels_`` (label columns, no cluster map needed) and ``n_graph_components_``."""
    out = {}
    pseudo = getattr(clusterer, "pseudo_labels_", None)
    if pseudo is not None and evaluated.any():
        out["pseudo_label_acc"] = float(np.mean(np.asarray(pseudo)[evaluated] == y[evaluated]))
    if getattr(clusterer, "n_graph_components_", None) is not None:
        out["graph_components"] = int(clusterer.n_graph_components_)
    return out


def clustering(setup: Setup, dataset: PLDataset, *, rho: float = 0.1, n_partitions: int = 10,
               splits: str = "auto", draw: str = "stratified", classes: str = "present",
               preprocessing: str = "standardize", preprocessing_by_part: bool = False,
               select: dict | None = None, random_state=0, progress: bool = True,
               callback: Callable | None = None) -> ProtocolResult:
    """Partial-label clustering: a fraction ``rho`` keeps its candidate sets, the rest get all labels.

    All rows are clustered; ACC (Hungarian best map) and NMI are measured on the
    unlabelled part. Stored splits (``msrc-v2-plc-splits``: ``train_idx`` = labelled,
    ``test_idx`` = evaluated) are used when present (``splits="auto"``); otherwise ``draw``
    picks the labelled rows per class as the PLC demo does (``"stratified"``) or uniformly.
    ``classes="present"`` clusters into, and scores over, the classes with a true instance only
    (the other label columns are dropped from the candidate sets; logged as the run parameter
    ``classes_left_out``). The preprocessing is
    fitted on all rows, or with ``preprocessing_by_part`` separately on the labelled and the
    unlabelled part of every partition (the PLC paper's public demo z-scores them separately).
    Summary: ``acc_mean/std``, ``nmi_mean/std``, ``fit_time_mean``; for clusterers with
    ``pseudo_labels_`` (PLC's argmax of its initial confidences) also their accuracy on the
    unlabelled rows, ``pseudo_label_acc`` (the ceiling of a method that ends at its pseudo-labels),
    and with ``n_graph_components_`` the number of connected components of its graph. ``select``
    chooses the clusterer's parameters on each partition by the labelled part's candidate sets only
    (:func:`plcore.run.selection.select_clusterer`); the choices are ``selected.clusterer.<param>``.
    """
    if not isinstance(setup, Setup):
        setup = Setup(clusterer=setup)
    if setup.clusterer is None:
        raise ConfigError("protocol 'clustering' needs a clusterer (e.g. +clusterer=plc)")
    select = check_select(select, setup)
    if select["method"] == "oracle":
        return oracle(clustering, setup, dataset, select, score_key="acc_mean", callback=callback, rho=rho,
                      n_partitions=n_partitions, splits=splits, draw=draw, classes=classes,
                      preprocessing=preprocessing, preprocessing_by_part=preprocessing_by_part,
                      random_state=random_state)
    if dataset.y_true is None:
        raise DataValidationError(f"data set {dataset.name!r} has no true labels to evaluate against")
    parts = clustering_partitions(dataset, rho=rho, n_partitions=n_partitions, splits=splits,
                                  random_state=random_state, draw=draw)
    scaler = make_preprocessor(preprocessing)
    X_all = dataset.X if scaler is None else scaler.fit_transform(dataset.X)
    keep = _present_classes(dataset, classes)
    if keep.size < 2:
        raise DataValidationError(f"data set {dataset.name!r} has {keep.size} class(es) with a true instance: "
                                  "nothing to cluster")
    position = np.full(dataset.n_classes, -1)
    position[keep] = np.arange(keep.size)
    y = position[dataset.y_true]  # true labels as columns of the kept candidate matrix
    names = [str(dataset.classes[c]) for c in keep]
    result = ProtocolResult("clustering")
    left_out = [str(c) for i, c in enumerate(dataset.classes) if position[i] < 0]
    result.params.update({"classes_scored": int(keep.size), "classes_left_out": ", ".join(left_out) or "none"})
    if left_out:
        warnings.warn(f"clustering: {len(left_out)} label column(s) of {dataset.name} have no true instance "
                      f"({', '.join(left_out)}): {keep.size} clusters, scored over those classes "
                      f"(protocol.classes=all keeps every column)", UserWarning, stacklevel=2)
    confusion = np.zeros((keep.size, keep.size), dtype=np.int64)
    candidate_acc = []
    select_seed = 0 if random_state is None else int(random_state)  # the same candidates on every partition
    rng = np.random.RandomState(random_state)
    for p, (labelled, evaluated) in enumerate(_progress(parts, len(parts), f"clustering {dataset.name}",
                                                         progress)):
        ds = apply_bags(dataset, setup.bags, int(rng.randint(np.iinfo(np.int32).max)),
                        fit_rows=np.flatnonzero(labelled))  # a generator learning from labels: the labelled rows
        S = dense_candidates(ds.S)[:, keep]  # a copy
        emptied = labelled & ~S.any(axis=1)  # every candidate in a left-out column (a noisy bag)
        if emptied.any():
            warnings.warn(f"clustering: {int(emptied.sum())} labelled row(s) of {dataset.name} had candidates only in "
                          f"left-out label columns; they are treated as unlabelled", UserWarning, stacklevel=2)
        S[~labelled | emptied] = True
        X = X_all
        if preprocessing_by_part and scaler is not None:
            X = np.empty_like(X_all, dtype=np.float64)
            for part in (labelled, ~labelled):
                if part.any():
                    X[part] = clone(scaler).fit_transform(dataset.X[part])
        t0 = time.perf_counter()
        selected = {}
        trials = None
        if select["method"] != "none":
            clusterer, selected, trials = select_clusterer(setup.clusterer, X, S, select, select_seed)
        else:
            clusterer = clone(setup.clusterer).fit(X, S)
        labels = np.asarray(clusterer.labels_)
        fit_time = time.perf_counter() - t0
        if trials is not None:  # reporting only, outside the timing
            candidate_acc.append([clustering_accuracy(y[evaluated], np.asarray(lab)[evaluated]) for _, lab in trials])
        mapping = best_cluster_map(y[evaluated], labels[evaluated])
        mapped = np.array([mapping.get(c, -1) for c in labels[evaluated]])
        valid = mapped >= 0
        np.add.at(confusion, (y[evaluated][valid], mapped[valid]), 1)
        step = {"step": p, "acc": clustering_accuracy(y[evaluated], labels[evaluated]),
                "nmi": nmi(y[evaluated], labels[evaluated]), "n_labelled": int(labelled.sum()),
                "fit_time": fit_time, **selected, **_diagnostics(clusterer, y, evaluated)}
        result.steps.append(step)
        result.predictions.extend({"step": p, "index": int(i), "y_true": int(y[i]), "label_true": names[int(y[i])],
                                   "cluster": int(labels[i]), "evaluated": bool(evaluated[i])}
                                  for i in range(dataset.n_samples))
        if callback is not None:
            callback(step)
    for key in ("acc", "nmi", "fit_time", "pseudo_label_acc", "graph_components"):
        if key in result.steps[0]:
            _mean_std(result.steps, key, result.summary)
    result.extra["confusion"] = confusion
    if candidate_acc:  # reporting only: every candidate's ACC on the evaluated rows, (partitions, candidates)
        result.extra["candidate_acc"] = np.asarray(candidate_acc)
        result.extra["candidates"] = candidates(select, select_seed)
    return result


_PREPROCESSING = [str]  # a registered preprocessor name, "none" or a dotted class path (checked when built)
_EXACT = [StrOptions({"auto", "always", "never"})]


def _check_kfold_data(params, dataset):
    if params["n_splits"] > dataset.n_samples:
        raise DataValidationError(f"protocol.n_splits={params['n_splits']} exceeds the {dataset.n_samples} rows "
                                  f"of {dataset.name}")


def _check_holdout_data(params, dataset):
    n_test = int(np.ceil(params["test_size"] * dataset.n_samples))
    if n_test < 1 or n_test >= dataset.n_samples:
        raise DataValidationError(f"protocol.test_size={params['test_size']} leaves no training or no test rows "
                                  f"of the {dataset.n_samples} rows of {dataset.name}")


def _check_preprocessing(params, dataset=None):
    for key in ("preprocessing", "reduced_preprocessing"):
        if key in params:
            make_preprocessor(params[key])  # unknown names fail here, in one line


def _check_no_select(params, dataset=None):
    if (params.get("select") or {}).get("method", "none") != "none":
        raise ConfigError("protocol 'online' does not select hyperparameters: a stream has no training part to "
                          "search before it is predicted; choose them with kfold/holdout and protocol.select")


def _checks(*fns):
    def run(params, dataset):
        for fn in fns:
            fn(params, dataset)
    return run


#: ``n_jobs``: a positive number of worker processes, or -1 (one per core)
_N_JOBS = [Interval(Integral, 1, None, closed="left"), Options(Integral, {-1})]

PROTOCOLS = {
    "kfold": ProtocolSpec(
        "kfold", kfold, protocol_defaults("kfold"),
        summary_keys=("accuracy_mean", "accuracy_std"), step_name="fold", count_param="n_splits",
        constraints={"n_splits": [Interval(Integral, 2, None, closed="left")], "shuffle": ["boolean"],
                     "preprocessing": _PREPROCESSING, "fit_reducer_on": [StrOptions({"train", "all"})],
                     "reduced_preprocessing": _PREPROCESSING, "exact_labels": _EXACT, "refit": ["boolean"],
                     "select": [dict], "n_jobs": _N_JOBS},
        check_data=_checks(_check_kfold_data, _check_preprocessing)),
    "holdout": ProtocolSpec(
        "holdout", holdout, protocol_defaults("holdout"),
        summary_keys=("accuracy_mean", "accuracy_std"), step_name="repeat", count_param="n_repeats",
        constraints={"test_size": [Interval(Real, 0, 1, closed="neither")],
                     "n_repeats": [Interval(Integral, 1, None, closed="left")], "stratify": ["boolean"],
                     "preprocessing": _PREPROCESSING, "reduced_preprocessing": _PREPROCESSING,
                     "exact_labels": _EXACT, "refit": ["boolean"], "select": [dict], "n_jobs": _N_JOBS},
        check_data=_checks(_check_holdout_data, _check_preprocessing)),
    "online": ProtocolSpec(
        "online", online, protocol_defaults("online"),
        summary_keys=("mistake_rate_final_mean", "mistake_rate_final_std"), step_name="run", count_param="n_runs",
        constraints={"n_runs": [Interval(Integral, 1, None, closed="left")], "exact_labels": _EXACT,
                     "preprocessing": _PREPROCESSING, "select": [dict]},
        check_data=_checks(_check_preprocessing, _check_no_select)),
    "clustering": ProtocolSpec(
        "clustering", clustering, protocol_defaults("clustering"),
        summary_keys=("acc_mean", "acc_std", "nmi_mean", "nmi_std"), needs="clusterer", step_name="partition",
        count_param="n_partitions",
        constraints={"rho": [Interval(Real, 0, 1, closed="both")],
                     "n_partitions": [Interval(Integral, 1, None, closed="left")],
                     "splits": [StrOptions({"auto", "file", "random"})],
                     "draw": [StrOptions({"stratified", "uniform"})], "classes": [StrOptions({"present", "all"})],
                     "preprocessing": _PREPROCESSING,
                     "preprocessing_by_part": ["boolean"], "select": [dict]},
        check_data=_check_preprocessing),
}


def default_config(name: str) -> dict:
    """The Hydra config node of a built-in protocol: ``{"name": name, **defaults}``."""
    return PROTOCOLS[name].config()
