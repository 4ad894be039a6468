"""Evaluation protocols: k-fold, holdout, online (test-then-train), partial-label clustering,
PLENCH's tabular protocol (random draws, checkpoints selected by CR, AA and the oracle) and
``clean`` (each training row's label out, :mod:`plcore.run.label_cleaning`).

One module per protocol (``_kfold``, ``_holdout``, ``_online``, ``_clustering``, ``_plench``),
each with its function and its :class:`~plcore.registry.ProtocolSpec`; k-fold and holdout share one fold loop
(``_splits``); what every protocol shares -- :class:`Setup`, :class:`ProtocolResult`, candidate
sets from exact labels -- is in ``_shared``.

Preprocessing (``standardize`` | ``minmax`` | ``none``) is always fitted on the training
part only, as the first step of the evaluated pipeline; ``plench`` z-scores over all rows by
default, as PLENCH does (``zscore=train_rows``: on the rows the learner fits on).
"""

from __future__ import annotations

from plcore.run.protocols import _clean, _clustering, _holdout, _kfold, _online, _plench
from plcore.run.protocols._budget import (
    CRITERION_COLUMN,
    DIGITS,
    Budget,
    BudgetFold,
    budget_fold,
    draw_configurations,
    fold_seeds,
    validation_split,
)
from plcore.run.protocols._clustering import (
    cluster_partition,
    clustering,
    clustering_partitions,
    present_classes,
    stratified_mask,
)
from plcore.run.protocols._holdout import holdout
from plcore.run.protocols._kfold import kfold
from plcore.run.protocols._online import online, prequential
from plcore.run.protocols._plench import plench, plench_split, zscored
from plcore.run.protocols._shared import (
    ProtocolResult,
    Setup,
    apply_bags,
    bags_apply,
    feeds_truth,
    singleton_candidates,
)
from plcore.run.protocols._splits import evaluate_split

__all__ = ["Setup", "ProtocolResult",
           "bags_apply", "apply_bags", "prequential", "kfold", "holdout", "online", "clustering", "plench",
           "plench_split", "zscored", "PROTOCOLS",
           "default_config", "clustering_partitions", "stratified_mask",
           "evaluate_split", "cluster_partition", "Budget", "BudgetFold", "budget_fold", "fold_seeds",
           "validation_split", "draw_configurations", "CRITERION_COLUMN", "DIGITS", "feeds_truth", "singleton_candidates", "present_classes"]

#: the built-in protocols by name, as the registry knows them (``protocol=<name>``)
PROTOCOLS = {module.SPEC.name: module.SPEC for module in (_kfold, _holdout, _online, _clustering, _plench, _clean)}


def default_config(name: str) -> dict:
    """The Hydra config node of a built-in protocol: ``{"name": name, **defaults}``."""
    return PROTOCOLS[name].config()
