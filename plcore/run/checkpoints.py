"""Model selection over checkpoints, as PLENCH selects (Wang et al., ICLR 2025).

A learner is fitted once per hyperparameter draw; after every epoch (or once, at the end, for a
learner without per-epoch checkpoints) a checkpoint records four numbers, the columns of
:data:`COLUMNS`: the validation rows' covering rate and approximated accuracy (their candidate
sets only), their accuracy (their true labels) and the test accuracy. Each criterion of
:data:`CRITERIA` picks one (draw, checkpoint); its test accuracy is the figure:

* ``cr``, ``aa``: the largest validation covering rate / approximated accuracy over every
  (draw, checkpoint) -- label-free;
* ``oracle``: the draw with the largest validation accuracy at its LAST checkpoint (PLENCH's
  "Oracle Accuracy": no early stopping);
* ``oracle_es``: the largest validation accuracy over every (draw, checkpoint) ("Oracle w/ ES").

Ties go to the earliest checkpoint within a draw and to the first draw across draws
(``ties="latest"``: the latest checkpoint within a draw). Used by ``protocol=plench``
(:mod:`plcore.run.protocols`) and ``benchmarks/deep_selection.py``; :func:`cell` writes a
table's cell as PLENCH's ``collect_results`` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

__all__ = ["COLUMNS", "CRITERIA", "CRITERION_NAMES", "Choice", "select_checkpoints", "standard_error", "cell"]

#: what one checkpoint records, in this order
COLUMNS = ("covering_rate", "approximated_accuracy", "val_accuracy", "test_accuracy")
#: the selection criteria, in the order of PLENCH's tables
CRITERIA = ("cr", "aa", "oracle", "oracle_es")
#: the criteria as PLENCH's tables name them
CRITERION_NAMES = {"cr": "CR", "aa": "AA", "oracle": "Oracle", "oracle_es": "Oracle w/ ES"}
#: the column each criterion maximises (the oracle at the last checkpoint only)
_CRITERION_COLUMN = {"cr": 0, "aa": 1, "oracle": 2, "oracle_es": 2}


@dataclass(frozen=True)
class Choice:
    """The checkpoint a criterion picked: draw and checkpoint indices (from 0), the validation
    value it maximised and the test accuracy there."""

    draw: int
    checkpoint: int
    value: float
    test_accuracy: float


def _curves(curves) -> list:
    out = [np.asarray(c, dtype=np.float64) for c in curves]
    if not out:
        raise ValueError("no draws to select from")
    for d, c in enumerate(out):
        if c.ndim != 2 or c.shape[0] < 1 or c.shape[1] != len(COLUMNS):
            raise ValueError(f"draw {d}: expected (n_checkpoints >= 1, {len(COLUMNS)}) records "
                             f"({', '.join(COLUMNS)}), got shape {c.shape}")
    return out


def _best_checkpoint(values: np.ndarray, ties: str) -> int:
    if ties == "earliest":
        return int(np.argmax(values))
    return len(values) - 1 - int(np.argmax(values[::-1]))


def select_checkpoints(curves: Sequence, *, ties: str = "earliest") -> dict:
    """``curves``: one ``(n_checkpoints, 4)`` array per draw (columns :data:`COLUMNS`; draws may
    have different numbers of checkpoints), or a ``(n_draws, n_checkpoints, 4)`` array.
    Returns ``{criterion: Choice}`` for every criterion of :data:`CRITERIA`."""
    if ties not in ("earliest", "latest"):
        raise ValueError(f"ties must be 'earliest' or 'latest', got {ties!r}")
    curves = _curves(curves)
    out = {}
    for name in CRITERIA:
        col = _CRITERION_COLUMN[name]
        if name == "oracle":
            picks = [len(c) - 1 for c in curves]
        else:
            picks = [_best_checkpoint(c[:, col], ties) for c in curves]
        values = np.array([c[e, col] for c, e in zip(curves, picks)])
        d = int(np.argmax(values))
        out[name] = Choice(d, picks[d], float(values[d]), float(curves[d][picks[d], 3]))
    return out


def standard_error(values) -> float:
    """PLENCH's standard error of a mean over trials: the population standard deviation over
    ``sqrt(n)`` (``np.std(values / sqrt(n))``)."""
    v = np.asarray(values, dtype=np.float64)
    return float(np.std(v / np.sqrt(len(v))))


def cell(values) -> str:
    """A table cell as PLENCH's ``collect_results`` prints it: ``"77.93 ± 0.52"``, the mean and
    :func:`standard_error` of ``values`` (fractions) in percent."""
    v = 100 * np.asarray(values, dtype=np.float64)
    return f"{v.mean():.2f} ± {standard_error(v):.2f}"
