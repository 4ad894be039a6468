"""The clean protocol (``python -m plcore clean``, ``protocol=clean``): every training row's label
within its candidate set, its confidence, the out-of-fold model label and a suspect score for a set
that misses the truth (:mod:`plcore.run.label_cleaning`), written to ``out`` (CSV or Parquet) and logged
as the run's ``predictions.csv``."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import numpy as np

from plcore.data import PLDataset
from plcore.exceptions import ConfigError
from plcore.registry import ProtocolSpec
from plcore.run.defaults import protocol_defaults
from plcore.run.protocols._shared import (
    apply_bags,
    _check_preprocessing,
    _checks,
    _need_learner,
    _PREPROCESSING,
    ProtocolResult,
    Setup,
)
from plcore.utils import dense_candidates
from plcore.utils.files import atomic_write, checked_output
from plcore.validation import Integral, Interval, StrOptions

#: the columns of the file, in order (``id`` is the data set's id column where it has one)
COLUMNS = ("candidates", "label", "confidence", "model_label", "suspect", "flag")
_SUFFIXES = (".csv", ".parquet")


#: the engines of ``engine=auto``, those installed: (name, registered learner, its parameters)
POOL = (("plknn", "plknn", {}), ("plknn_cenda", "plknn_cenda", {}), ("ipal", "ipal", {}),
        ("linear", "proden", {"hidden_layer_sizes": []}), ("mlp", "proden", {}))


def engine_pool(random_state=0) -> dict:
    """``{name: learner}`` of :data:`POOL` whose component is installed (the linear model, PRODEN's
    loss on no hidden layer, and the network, PRODEN on its default MLP, where PyTorch is)."""
    from plcore.registry import get_registry

    registry, out = get_registry(), {}
    for name, component, params in POOL:
        try:
            cls = registry.get("learner", component).spec.cls
        except Exception:  # noqa: BLE001 - a plugin not installed: the pool is what is
            continue
        learner = cls(**params)
        if "random_state" in learner.get_params(deep=False):
            learner.set_params(random_state=random_state)
        out[name] = learner
    return out


def clean(setup: Setup, dataset: PLDataset, *, n_splits: int = 5, preprocessing: str = "standardize",
          out: str | None = None, overwrite: bool = False, engine: str = "learner", probabilities: bool = False,
          random_state=0, progress: bool = True, callback: Callable | None = None) -> ProtocolResult:
    """Clean labels out: each row's ``label``, ``confidence``, ``model_label`` (its set hidden:
    out of fold, ``n_splits`` folds), ``suspect`` and ``flag`` (:func:`plcore.run.label_cleaning.clean_labels`),
    from the pipeline ``preprocessing -> [reducer ->] learner``. ``out`` (``.csv`` or
    ``.parquet``) receives one row per data row; an existing file only with ``overwrite``, never
    the data file (checked before the data are loaded: :func:`_check_outputs`). Where
    the data have true labels the summary scores the output: disambiguation accuracy, the
    flags' precision and recall, the suspect score's AUROC and the confidence's ECE.

    ``engine="auto"`` (``python -m plcore clean`` without ``+learner=``): each installed engine of
    :data:`POOL` in the learner's place, their out-of-fold probabilities averaged with the weights
    under which their mean explains the candidate sets best (ensemble selection on the log-likelihood
    of the sets under the fitted noise model, :func:`plcore.run.label_cleaning.choose_engine`).
    Then a second round with the flagged rows left out of the fits, kept where it explains the sets
    better (:func:`plcore.run.label_cleaning.second_round`). ``probabilities``: one column per
    class, each row's posterior ``p:<class>``. A bar on a terminal counts the folds."""
    from tqdm.auto import tqdm

    from plcore.run.label_cleaning import choose_engine, clean_labels, second_round
    from plcore.run.pipeline import build_pipeline

    if not isinstance(setup, Setup):
        setup = Setup(learner=setup)
    _need_learner(setup, "clean")
    target = None if out in (None, "") else Path(str(out))
    id_name = None if dataset.ids is None else dataset.ids.column
    if id_name is not None and id_name in (*COLUMNS, "index"):
        raise ConfigError(f"id_column={id_name}: the file has a column {id_name!r} of its own; rename the id column")
    ds = apply_bags(dataset, setup.bags, random_state)
    S = dense_candidates(ds.S)
    echo = (lambda line: tqdm.write(f"[clean {ds.name}] {line}")) if progress else None
    if engine == "auto":
        engines = {name: build_pipeline([setup.reducer, learner], preprocessing)
                   for name, learner in engine_pool(random_state).items()}
    else:
        engines = {None: build_pipeline([setup.reducer, setup.learner], preprocessing)}
    bar = tqdm(total=(len(engines) + 1) * n_splits, desc=f"clean {ds.name}", unit="fold", leave=False,
               disable=None if progress else True)  # every engine's folds, then the second round's
    rounds = {1: [], 2: []}

    def fold_of(round_):
        def on_fold(k, test, proba):
            rounds[round_].append((k, test, proba))
            bar.update()
        return on_fold

    scores = {}
    with bar:
        if engine == "auto":
            chosen, found, scores = choose_engine(
                engines, ds.X, S, n_splits=n_splits, random_state=random_state, echo=echo,
                on_fold=lambda k, test, proba: rounds[1].append((k, test, proba)),
                tick=lambda name: (bar.set_postfix_str(name), bar.update()))
            each = ", ".join(f"{n} {v:.1f}" for n, v in scores.items())
            what = (f"engine {chosen.name} chosen" if len(chosen.weights) == 1 else
                    f"engines {chosen.name} chosen, their probabilities averaged ({chosen.describe()}; together "
                    f"{found.noise['log_likelihood']:.1f})")
            tqdm.write(f"[clean {ds.name}] {what} (the candidate sets' log-likelihood under each engine: {each})")
        else:
            chosen = engines[None]
            found = clean_labels(engines[None], ds.X, S, n_splits=n_splits, random_state=random_state,
                                 on_fold=fold_of(1), echo=echo)
        bar.set_postfix_str("second round")
        found, kept = second_round(chosen, ds.X, S, found, n_splits=n_splits, random_state=random_state,
                                   on_fold=fold_of(2), echo=echo)
    steps = []
    for k, test, proba in rounds[2 if kept else 1]:  # the fold's covering rate: its rows' model labels in their sets
        steps.append({"step": k, "rows": int(test.size),
                      "covering_rate": float(np.mean(S[test, proba.argmax(axis=1)]))})
        if callback is not None:
            callback(steps[-1])
    table = _table(ds, S, found, probabilities=probabilities)
    summary = _summary(ds, S, found)
    if target is not None:
        _write(table, target)
        print(f"{target}: {ds.n_samples} rows (label, confidence, model_label, suspect, flag"
              f"{', one probability per class' if probabilities else ''}); flagged where suspect >= {found.threshold}: "
              f"{int(found.flag.sum())} row(s); fitted share of sets missing their truth "
              f"{found.noise['missing']:.3f}", flush=True)
    noise = found.noise
    return ProtocolResult(
        "clean", steps=steps, summary=summary, predictions=table,
        params={"flag_threshold": found.threshold, "noise.temperature": round(noise["temperature"], 6),
                "noise.q": round(noise["q"], 6), "noise.eta": round(noise["eta"], 6),
                "noise.missing": round(noise["missing"], 6),
                "noise.log_likelihood": round(noise["log_likelihood"], 3), "second_round": kept,
                "rows": ds.n_samples, **({"out": str(target)} if target is not None else {}),
                **({"engine": chosen.name, **{f"engine.{n}.weight": round(w, 3) for n, w in chosen.weights.items()},
                    **{f"engine.{n}.log_likelihood": round(v, 3) for n, v in scores.items()}} if scores else {})},
        tags={"training_labels": "candidate sets (out of fold)"})


def _check_outputs(params, inputs) -> None:
    """``out`` checked before the data are loaded or a model fitted (the spec's ``check_outputs``):
    a CSV or Parquet file, not the data file (even with ``overwrite``), not a folder, in a writable
    folder, and not an existing file unless ``overwrite``
    (:func:`plcore.utils.files.checked_output`)."""
    out = params.get("out")
    if out in (None, ""):
        return
    checked_output(str(out), flag="out=", inputs=inputs, overwrite=bool(params.get("overwrite")))
    if Path(str(out)).suffix.lower() not in _SUFFIXES:
        raise ConfigError(f"out={out}: the file is written as CSV or Parquet by its suffix (.csv, .parquet)")


def _names(classes, index) -> list:
    return [str(classes[j]) for j in index]


def _table(ds: PLDataset, S, found, probabilities: bool = False) -> list:
    """One dict per data row, in the data's order (the id column first where the data have one);
    with ``probabilities``, the posterior of every class after the columns (``p:<class>``)."""
    ids = None if ds.ids is None else ds.ids.values
    id_name = ds.ids.column if ds.ids is not None else "index"
    sep = ";"
    rows = []
    label, model_label = _names(ds.classes, found.label), _names(ds.classes, found.model_label)
    for i in range(ds.n_samples):
        rows.append({id_name: ids[i] if ids is not None else i,
                     "candidates": sep.join(_names(ds.classes, np.flatnonzero(S[i]))),
                     "label": label[i], "confidence": round(float(found.confidence[i]), 6),
                     "model_label": model_label[i], "suspect": round(float(found.suspect[i]), 6),
                     "flag": bool(found.flag[i])})
    if probabilities:
        names = [f"p:{c}" for c in ds.classes]
        for row, p in zip(rows, np.round(found.posterior, 6).tolist()):
            row.update(zip(names, p))
    return rows


def _summary(ds: PLDataset, S, found) -> dict:
    """Rows, mean confidence, flagged fraction and the fitted noise rate (the share of sets that
    miss their truth under the fitted model); with true labels, how right all that is."""
    out = {"rows": float(ds.n_samples), "mean_confidence": float(found.confidence.mean()),
           "flagged_fraction": float(found.flag.mean()), "noise_rate": float(found.noise["missing"])}
    if ds.y_true is None:
        return out
    from sklearn.metrics import roc_auc_score

    from plcore.metrics import expected_calibration_error

    y = ds.y_true
    inside = S[np.arange(ds.n_samples), y]
    right = found.label == y
    out.update(truth_outside_fraction=float(1.0 - inside.mean()),
               label_accuracy=float(right.mean()),
               confidence_ece=expected_calibration_error(found.confidence, right),
               model_label_accuracy=float(np.mean(found.model_label == y)))
    if inside.any():
        out["disambiguation_accuracy"] = float(right[inside].mean())
    if 0 < inside.sum() < ds.n_samples:
        outside = ~inside
        out["suspect_auroc"] = float(roc_auc_score(outside, found.suspect))
        out["flag_recall"] = float(found.flag[outside].mean())
        if found.flag.any():
            out["flag_precision"] = float(outside[found.flag].mean())
    return out


def _write(rows: list, path: Path) -> None:
    """The table to ``path`` (CSV or Parquet by its suffix), written whole then renamed."""
    import pandas as pd

    frame = pd.DataFrame(rows)
    with atomic_write(path) as tmp:
        if path.suffix.lower() == ".parquet":
            frame.to_parquet(tmp, index=False)
        else:
            frame.to_csv(tmp, index=False)


def _check_clean_data(params, dataset):
    if not 2 <= params["n_splits"] <= dataset.n_samples:
        raise ConfigError(f"protocol.n_splits={params['n_splits']} needs between 2 and the {dataset.n_samples} rows "
                          f"of {dataset.name}")


#: the clean protocol as the registry knows it (``protocol=clean``)
SPEC = ProtocolSpec(
    "clean", clean, protocol_defaults("clean"),
    summary_keys=("disambiguation_accuracy", "suspect_auroc", "confidence_ece", "mean_confidence", "flagged_fraction",
                  "noise_rate"),
    label_free_keys=("mean_confidence", "flagged_fraction", "noise_rate"), step_name="fold",
    count_param="n_splits",
    constraints={"n_splits": [Interval(Integral, 2, None, closed="left")], "preprocessing": _PREPROCESSING,
                 "out": [str, None], "overwrite": ["boolean"], "engine": [StrOptions({"learner", "auto"})],
                 "probabilities": ["boolean"]},
    check_data=_checks(_check_clean_data, _check_preprocessing), check_outputs=_check_outputs)
