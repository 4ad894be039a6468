"""The one table of the built-in protocols' parameters and defaults (their Hydra config nodes)
and of nested selection's defaults, in a module that imports nothing: the built-ins declare the
protocols from here without importing :mod:`plcore.run.protocols` (scikit-learn), which builds
its :class:`~plcore.registry.ProtocolSpec` objects from the same table."""

from __future__ import annotations

import copy

__all__ = ["SELECT_DEFAULTS", "PROTOCOL_DEFAULTS", "PROTOCOL_DESCRIPTIONS", "protocol_defaults"]

#: ``protocol.select``: nested, label-free hyperparameter selection (:mod:`plcore.run.selection`)
SELECT_DEFAULTS = {"method": "none", "space": None, "scoring": "covering_rate", "cv": 3, "n_iter": 10,
                   "missing": "error", "shared": True}

PROTOCOL_DEFAULTS = {
    "kfold": {"n_splits": 10, "shuffle": True, "preprocessing": "standardize", "fit_reducer_on": "train",
              "reduced_preprocessing": "none", "exact_labels": "auto", "refit": True,
              "select": dict(SELECT_DEFAULTS), "n_jobs": 1},
    "holdout": {"test_size": 0.2, "n_repeats": 1, "stratify": False, "official_split": False,
                "preprocessing": "standardize",
                "reduced_preprocessing": "none", "exact_labels": "auto", "refit": True,
                "select": dict(SELECT_DEFAULTS), "n_jobs": 1},
    "online": {"n_runs": 100, "exact_labels": "auto", "preprocessing": "none", "select": dict(SELECT_DEFAULTS)},
    "clustering": {"rho": 0.1, "n_partitions": 10, "splits": "auto", "draw": "stratified", "classes": "present",
                   "preprocessing": "standardize",
                   "preprocessing_by_part": False, "select": dict(SELECT_DEFAULTS)},
    "plench": {"n_trials": 3, "n_draws": 20, "test_size": 0.1, "validation_size": 0.1, "zscore": "all_rows"},
    "clean": {"n_splits": 5, "preprocessing": "standardize", "out": None, "overwrite": False, "engine": "learner",
              "probabilities": False},
}

#: one line per protocol for listings (the first line of the protocol function's docstring)
PROTOCOL_DESCRIPTIONS = {
    "kfold": "k-fold cross-validation: fit ``scaler -> [reducer ->] learner`` on each training fold.",
    "holdout": "Repeated random train/test splits (``n_repeats`` seeds from ``random_state``).",
    "online": "Online protocol: predict each example before learning from it (test-then-train).",
    "clustering": "Partial-label clustering: a fraction ``rho`` keeps its candidate sets, the rest get all labels.",
    "plench": "PLENCH's tabular protocol: random hyperparameter draws, checkpoints chosen by CR, AA and the oracle.",
    "clean": "Clean labels out: each row's label in its candidate set, its confidence, and whether the set misses "
             "the truth (out of fold).",
}


def protocol_defaults(name: str) -> dict:
    """A fresh copy of protocol ``name``'s parameters and defaults."""
    return copy.deepcopy(PROTOCOL_DEFAULTS[name])
