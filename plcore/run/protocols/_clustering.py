"""The partial-label clustering protocol: a fraction rho of rows keep their candidate sets, the
rest get every label; ACC (Hungarian map) and NMI on the unlabelled rows over partitions."""

from __future__ import annotations

import time
import warnings
from typing import Callable

import numpy as np
from sklearn.base import clone

from plcore.data import PLDataset
from plcore.exceptions import ConfigError, DataValidationError
from plcore.metrics import best_cluster_map, clustering_accuracy, nmi
from plcore.registry import ProtocolSpec
from plcore.run.defaults import protocol_defaults
from plcore.run.pipeline import make_preprocessor
from plcore.run.protocols._shared import (
    apply_bags,
    _check_preprocessing,
    _mean_std,
    _PREPROCESSING,
    _progress,
    ProtocolResult,
    Setup,
)
from plcore.run.selection import candidates, check_select, oracle, select_clusterer
from plcore.utils import dense_candidates
from plcore.validation import Integral, Interval, Real, StrOptions


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


def present_classes(dataset: PLDataset, classes: str):
    """The label columns clustered and scored: those with a true instance (``classes="present"``;
    Lost has 16 columns but 14 such classes), or all of them."""
    if classes not in ("present", "all"):
        raise ConfigError(f"classes must be present or all, got {classes!r}")
    if classes == "all":
        return np.arange(dataset.n_classes)
    return np.flatnonzero(np.bincount(dataset.y_true, minlength=dataset.n_classes) > 0)


_present_classes = present_classes  # the name the clustering protocol calls


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


def cluster_partition(clusterer, ds: PLDataset, X_all, keep, labelled, *, select: dict, select_seed: int,
                      by_part=None):
    """Cluster every row of one partition: the ``labelled`` rows keep their candidate sets (in the
    ``keep`` columns; a row left with none counts as unlabelled), the others get every label;
    ``by_part`` (a scaler) is fitted separately on the labelled and the unlabelled rows of ``ds.X``
    instead of using ``X_all``. The clusterer's parameters are chosen by ``select`` from the
    labelled rows' candidate sets. Returns the fitted clusterer, the choices, the trials (or None)
    and the fit time."""
    S = dense_candidates(ds.S)[:, keep]  # a copy
    emptied = labelled & ~S.any(axis=1)  # every candidate in a left-out column (a noisy bag)
    if emptied.any():
        warnings.warn(f"clustering: {int(emptied.sum())} labelled row(s) of {ds.name} had candidates only in "
                      f"left-out label columns; they are treated as unlabelled", UserWarning, stacklevel=3)
    S[~labelled | emptied] = True
    X = X_all
    if by_part is not None:
        X = np.empty_like(X_all, dtype=np.float64)
        for part in (labelled, ~labelled):
            if part.any():
                X[part] = clone(by_part).fit_transform(ds.X[part])
    t0 = time.perf_counter()
    selected, trials = {}, None
    if select["method"] != "none":
        clusterer, selected, trials = select_clusterer(clusterer, X, S, select, select_seed)
    else:
        clusterer = clone(clusterer).fit(X, S)
    return clusterer, selected, trials, time.perf_counter() - t0


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
        clusterer, selected, trials, fit_time = cluster_partition(
            setup.clusterer, ds, X_all, keep, labelled, select=select, select_seed=select_seed,
            by_part=scaler if preprocessing_by_part else None)
        labels = np.asarray(clusterer.labels_)
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


#: the clustering protocol as the registry knows it (``protocol=clustering``)
SPEC = ProtocolSpec(
    "clustering", clustering, protocol_defaults("clustering"),
    summary_keys=("acc_mean", "acc_std", "nmi_mean", "nmi_std"), needs="clusterer", step_name="partition",
    count_param="n_partitions",
    constraints={"rho": [Interval(Real, 0, 1, closed="both")],
                 "n_partitions": [Interval(Integral, 1, None, closed="left")],
                 "splits": [StrOptions({"auto", "file", "random"})],
                 "draw": [StrOptions({"stratified", "uniform"})], "classes": [StrOptions({"present", "all"})],
                 "preprocessing": _PREPROCESSING,
                 "preprocessing_by_part": ["boolean"], "select": [dict]},
    check_data=_check_preprocessing)
