"""What every protocol shares: the components of a run (:class:`Setup`), its result
(:class:`ProtocolResult`), candidate sets drawn from exact labels (:func:`apply_bags`) and the
parameter checks common to several protocols."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from plcore.data import PLDataset, _row_list
from plcore.exceptions import ConfigError, DataValidationError
from plcore.progress import enabled as iteration_progress
from plcore.run.pipeline import make_preprocessor
from plcore.tags import get_pll_tags
from plcore.validation import Integral, Interval, Options, StrOptions


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
    the refitted pipeline (``{"pipeline", "X_example", "classes", "requirements", "packages"}``) where the
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
    exact labels only and no generator is given, and when the generator leaves true labels out
    of their sets without the tag ``noisy_candidates`` (rows the data already had so, accepted
    with ``dataset.noisy=true``, excepted).
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
    drawn = dataset.with_candidates(S)
    if not get_pll_tags(bags).noisy_candidates:
        new = np.setdiff1d(drawn.rows_outside_candidates(), dataset.rows_outside_candidates())
        if new.size:
            raise DataValidationError(
                f"{type(bags).__name__} left the true label out of its candidate set in {new.size} of "
                f"{dataset.n_samples} rows (rows {_row_list(new)}) but does not declare noisy partial labels "
                "(tag noisy_candidates)")
    return drawn


def _learns_from_labels(dataset: PLDataset, bags) -> bool:
    """Whether ``bags`` applies to ``dataset`` and fits a model to its labels (per split, then)."""
    return bags_apply(dataset, bags) and get_pll_tags(bags).learns_from_labels


def _split_candidates(dataset: PLDataset, bags, ds: PLDataset, train, random_state):
    """A split's candidate matrix: ``ds.S`` (generated once for all rows), or, for a generator
    that learns from labels, candidates generated with the split's training rows only."""
    if _learns_from_labels(dataset, bags):
        return apply_bags(dataset, bags, random_state, fit_rows=train).S
    return ds.S


_PREPROCESSING = [str]  # a registered preprocessor name, "none" or a dotted class path (checked when built)


_EXACT = [StrOptions({"auto", "always", "never"})]


#: ``n_jobs``: a positive number of worker processes, or -1 (one per core)
_N_JOBS = [Interval(Integral, 1, None, closed="left"), Options(Integral, {-1})]


def _check_preprocessing(params, dataset=None):
    for key in ("preprocessing", "reduced_preprocessing"):
        if key in params:
            make_preprocessor(params[key])  # unknown names fail here, in one line


def _checks(*fns):
    def run(params, dataset):
        for fn in fns:
            fn(params, dataset)
    return run


def _progress(iterable, total, desc, progress):
    """The steps of a protocol with a bar (ETA) on a terminal; inside, methods may show a
    per-iteration bar (:mod:`plcore.progress`)."""
    bar = tqdm(iterable, total=total, desc=desc, disable=None if progress else True, leave=True)
    with iteration_progress(progress):
        yield from bar


#: the summary of a k-fold or holdout run on data without true labels: label-free estimates on the
#: test rows' candidate sets (:func:`plcore.metrics.covering_rate`, :func:`~plcore.metrics.approximated_accuracy`)
LABEL_FREE_KEYS = ("covering_rate_mean", "covering_rate_std", "approximated_accuracy_mean",
                   "approximated_accuracy_std")


def feeds_truth(learner, exact_labels: str, dataset: PLDataset | None = None) -> bool:
    """Whether the learner is trained on singleton sets of the true label (``exact_labels``:
    ``auto`` = when it is tagged ``exact_label_baseline``, ``always``, ``never``); refused for
    a data set without true labels."""
    if exact_labels not in ("auto", "always", "never"):
        raise ConfigError(f"exact_labels must be auto, always or never, got {exact_labels!r}")
    feeds = exact_labels == "always" or (exact_labels == "auto" and get_pll_tags(learner).exact_label_baseline)
    if feeds and dataset is not None and dataset.y_true is None:
        raise ConfigError(f"{type(learner).__name__} is trained on the true labels (exact-label baseline), and data "
                          f"set {dataset.name!r} has none")
    return feeds


def singleton_candidates(y, q):
    """The candidate sets of the true labels ``y``: one ``True`` a row, in ``q`` columns (what an
    exact-label baseline is trained on)."""
    S = np.zeros((y.shape[0], q), dtype=bool)
    S[np.arange(y.shape[0]), y] = True
    return S


_feeds_truth, _singletons = feeds_truth, singleton_candidates  # the names the protocols call


def _label_source(result, feed_truth, learner):
    result.tags["training_labels"] = "exact" if feed_truth else "candidates"
    if feed_truth:
        print(f"note: {type(learner).__name__} is trained on the true labels (exact-label baseline)", flush=True)


def _need_learner(setup, name):
    if setup.learner is None:
        raise ConfigError(f"protocol {name!r} needs a learner (e.g. +learner=plknn)")
