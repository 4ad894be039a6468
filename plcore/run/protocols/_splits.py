"""The fold loop that k-fold and holdout share: each split's pipeline fitted on its training
rows (with nested label-free selection where asked) and scored on its test rows, the splits run
here or in worker processes (:func:`_evaluate_splits`), and the refit on all rows."""

from __future__ import annotations

import time

import numpy as np

from plcore.exceptions import ConfigError
from plcore.metrics import accuracy, approximated_accuracy, covering_rate, mcc, transductive_accuracy
from plcore.preprocessing import fitted_reducer
from plcore.run.pipeline import build_pipeline, final_step
from plcore.run.protocols._sets import set_metrics
from plcore.run.protocols._reject import reject_curves, reject_metrics
from plcore.run.protocols._shared import ProtocolResult, _label_source, _mean_std, _progress, _singletons
from plcore.run.selection import check_select, make_search, selected_values


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


def _prediction_rows(step, test, y, pred, scores, classes):
    """Rows of ``predictions.csv``: indices, class indices and names (the true ones where ``y``
    is given), one score per class."""
    names = [str(c) for c in classes]
    rows = []
    for j, (i, p) in enumerate(zip(test, pred)):
        row = {"step": step, "index": int(i)}
        if y is not None:
            row.update({"y_true": int(y[i]), "y_pred": int(p), "label_true": names[int(y[i])],
                        "label_pred": names[int(p)]})
        else:
            row.update({"y_pred": int(p), "label_pred": names[int(p)]})
        if scores is not None:
            row.update({f"score_{n}": float(v) for n, v in zip(names, scores[j])})
        rows.append(row)
    return rows


def _refit(setup, X, S, preprocessing, reduced_preprocessing, classes, S_learner=None, select=None,
           random_state=None, n_jobs=1, features=None):
    """The pipeline refitted on all rows (``refit=True``; with nested selection, the search
    run on all rows -- its candidates in ``n_jobs`` processes -- and its best pipeline): what
    the run logs as its model, with the data's feature columns ``features`` (a fitted
    :class:`~plcore.feature_columns.FeatureColumns`, or None) that it reads new rows through."""
    pipe = build_pipeline(setup.estimators(), preprocessing, reduced_preprocessing)
    if select is not None and select["method"] != "none":
        from plcore.utils.workers import worker_pool

        with worker_pool():  # the search's n_jobs workers end with this process
            pipe = make_search(pipe, select, random_state, n_jobs=n_jobs).fit(X, S).best_estimator_
    else:
        _fit_pipeline(pipe, X, S, np.arange(X.shape[0]), has_reducer=setup.reducer is not None, S_learner=S_learner)
    from plcore.registry import model_packages, pip_requirements

    return {"pipeline": pipe, "X_example": X[:5], "classes": list(classes), "features": features,
            "requirements": pip_requirements(), "packages": model_packages()}


def _check_selection(setup, select, feed_truth, fit_reducer_on="train", dataset=None):
    """Normalised ``select`` settings; the combinations nested selection does not support fail here."""
    select = check_select(select, setup)
    if select["method"] == "oracle" and dataset is not None and dataset.y_true is None:
        raise ConfigError(f"select.method=oracle tunes on the test rows' true labels, and data set {dataset.name!r} "
                          "has none; choose label-free: select.method=grid or random")
    if select["method"] in ("grid", "random"):
        if feed_truth:
            raise ConfigError("protocol.select with an exact-label baseline is not supported: its inner "
                              "folds would score true labels; use exact_labels=never or select.method=none")
        if fit_reducer_on == "all" and setup.reducer is not None:
            raise ConfigError("protocol.select with fit_reducer_on=all is not supported: the inner folds "
                              "would see the outer test rows")
    return select


def _transductive_accuracy(pipe, final, X_train, S_train, y_train):
    """The training rows' disambiguation against their hidden true labels: the learner's
    ``confidences_`` where it keeps them, else its scores on the training rows restricted to
    each row's candidate set (as the field's frontier code scores every method), else its
    predictions."""
    if getattr(final, "confidences_", None) is not None:
        return transductive_accuracy(y_train, final.confidences_, final.classes_)
    if hasattr(pipe, "predict_proba"):
        S = S_train.toarray() if hasattr(S_train, "toarray") else np.asarray(S_train)
        scores = np.full(S.shape, -np.inf)
        scores[:, np.asarray(final.classes_, dtype=int)] = pipe.predict_proba(X_train)
        return transductive_accuracy(y_train, np.where(S > 0, scores, -np.inf))
    return accuracy(y_train, pipe.predict(X_train))


def evaluate_split(setup, X, S, y, train, test, preprocessing, step, predictions, fit_reducer_on="train",
                   reduced_preprocessing="none", classes=None, S_learner=None, select=None, random_state=None):
    """One outer fold, as k-fold and holdout run each: the pipeline (``preprocessing``, the
    setup's reducer and learner) fitted on the rows ``train`` (with the nested selection
    ``select`` on them alone, or on ``S_learner``'s sets where given: an exact-label baseline),
    then the rows ``test`` predicted. Appends the test rows' prediction rows (``y_pred`` among
    them) to ``predictions`` and returns the step's metrics (``fit_time``, ``predict_time``, the
    ``selected.<param>`` values chosen, the scores)."""
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
    if y is not None and S_learner is None:  # trivial on the truth
        trans = _transductive_accuracy(pipe, final, X[train], S[train], y[train])
    scores = pipe.predict_proba(X[test]) if hasattr(pipe, "predict_proba") else None
    classes = np.arange(S.shape[1]) if classes is None else classes
    predictions.extend(_prediction_rows(step, test, y, pred, scores, classes))
    if y is not None:
        scored = {"accuracy": accuracy(y[test], pred), "mcc": mcc(y[test], pred), "transductive_accuracy": trans}
    else:  # no true labels: the label-free estimates on the test rows' candidate sets
        scored = {"covering_rate": covering_rate(S[test], pred),
                  "approximated_accuracy": approximated_accuracy(S[test], scores) if scores is not None else None}
    out = {"step": step, **scored, "fit_time": t1 - t0, "predict_time": t2 - t1, **selected}
    out.update(set_metrics(pipe, X[test], S[test], y[test] if y is not None else None))  # sets (predict_set)
    out.update(reject_metrics(pipe, X[test], None if y is None else y[test], pred, predictions[-len(test):]))
    if getattr(final, "n_threads_", None) is not None:   # the CPU threads a learner chose (plcore-deep)
        out["n_threads"] = int(final.n_threads_)
    if setup.reducer is not None:  # the reducer is the step before the learner
        reducer = fitted_reducer(pipe.steps[-2][1])
        out["n_components"] = getattr(reducer, "n_components_", None)
        conf = getattr(reducer, "confidences_", None)
        if conf is not None and y is not None:
            conf = conf[train] if conf.shape[0] == X.shape[0] and len(train) != X.shape[0] else conf
            out["reducer_transductive_accuracy"] = transductive_accuracy(y[train], conf)
    return out


_evaluate_split = evaluate_split  # the name the protocols' own fold loop calls


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
    for key in ("accuracy", "mcc", "transductive_accuracy", "covering_rate", "approximated_accuracy", "fit_time",
                "predict_time", "n_components", "reducer_transductive_accuracy", "set_size", "set_coverage",
                "set_candidate_coverage", "set_empty_fraction", "accepted_fraction",
                "accepted_accuracy", "rejection_risk_0.1"):
        _mean_std(result.steps, key, result.summary)
    result.curves.update(reject_curves(result.predictions))   # the reject option (tag reject_option)
    threads = sorted({s["n_threads"] for s in result.steps if s.get("n_threads") is not None})
    if threads:
        result.params["learner.n_threads_used"] = ", ".join(map(str, threads))
    if refit_data is not None:
        ds = refit_data()
        S_learner = _singletons(ds.y_true, ds.n_classes) if feed_truth else None
        result.model = _refit(setup, ds.X, ds.S, preprocessing, reduced_preprocessing, ds.classes, S_learner,
                              select, random_state, n_jobs, features=ds.meta.get("features"))
    return result
