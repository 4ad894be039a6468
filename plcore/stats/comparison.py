"""The result object of a comparison: :func:`compare` computes, once, per cell mean, std and
standard error, average ranks, Friedman (3 or more methods) or Wilcoxon (2), the critical
difference, win/tie/loss against a reference and the collapsed splits, into a
:class:`Comparison` that the writers (:mod:`plcore.stats.markdown`, :mod:`plcore.stats.latex`,
:mod:`plcore.stats.figure`) render without computing anything again.

``scores[(method, dataset)]`` holds one value per fold, partition or repeat, the same splits for
every method of a data set. ``greater_is_better=False`` (mistake rates) ranks and counts wins the
other way. A :class:`Comparison`'s ``labels`` name its methods in tables and diagrams (``PL-KNN``
for ``plknn``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from plcore.exceptions import ConfigError
from plcore.stats.pairwise import win_tie_loss, wilcoxon
from plcore.stats.ranking import _matrix, average_ranks, friedman, nemenyi_critical_difference

__all__ = ["COLLAPSE_MARGIN", "Comparison", "best_ranked", "check_same_splits", "collapsed_splits", "compare",
           "nemenyi_pvalues", "ranked_methods"]


def check_same_splits(split_keys: dict) -> None:
    """Refuse with one line when the methods of a data set were not scored on the same splits.

    ``split_keys[(method, dataset)]``: what identifies a run's splits (its seed, protocol settings
    and data fingerprint, as logged); paired tests need them equal within each data set."""
    by_dataset: dict = {}
    for (method, dataset), key in split_keys.items():
        by_dataset.setdefault(dataset, {}).setdefault(key, []).append(method)
    for dataset, keys in by_dataset.items():
        if len(keys) > 1:
            groups = "; ".join(f"{', '.join(sorted(map(str, m)))}: {k}" for k, m in keys.items())
            raise ConfigError(f"cannot compare on {dataset!r}: the methods were not run on the same splits ({groups})")


@dataclass
class Comparison:
    """What :func:`compare` computes: per-cell mean, std and standard error (population std over
    sqrt(n), as PLENCH), ranks, Friedman (3 or more methods) or Wilcoxon (2), the critical
    difference and win/tie/loss; ``labels`` (``{method: name}``) name the methods in print."""

    methods: list
    datasets: list
    mean: dict
    std: dict
    sem: dict
    ranks: np.ndarray | None
    friedman: tuple | None
    critical_difference: float | None
    wtl: dict | None
    reference: str | None
    greater_is_better: bool
    alpha: float = 0.05
    wilcoxon: tuple | None = None
    labels: dict = field(default_factory=dict)
    #: per cell, the splits whose score is more than ``COLLAPSE_MARGIN`` worse than the cell's
    #: median: collapsed runs (a seed where a method failed to learn), counted, not dropped
    collapsed: dict = field(default_factory=dict)

    def label(self, method) -> str:
        """How tables and diagrams name ``method`` (its label, else the method itself)."""
        return str(self.labels.get(method, method))


#: how much worse than its cell's median a split's score must be to count as collapsed: 0.10, ten
#: points of accuracy, the rule that finds the collapsed VALEN and CAVL runs among Fuchs & Kalinke's
#: stored results (docs/results/frontier.md)
COLLAPSE_MARGIN = 0.10


def collapsed_splits(values, *, greater_is_better: bool = True, margin: float = COLLAPSE_MARGIN) -> int:
    """How many of a cell's per-split ``values`` are more than ``margin`` worse than their median."""
    v = np.asarray(values, dtype=float)
    gap = np.median(v) - v if greater_is_better else v - np.median(v)
    return int(np.sum(gap > margin))


def compare(scores: dict, *, reference: str | None = None, alpha: float = 0.05,
            greater_is_better: bool = True) -> Comparison:
    """The whole comparison from ``scores[(method, dataset)]`` (per-split values). Ranks and the
    tests over data sets use the data sets every method has; Friedman and the critical
    difference need at least 3 methods and 2 data sets, and not all of them tied (else
    ``None``); two methods get the Wilcoxon signed-rank test over 2 or more data sets instead."""
    methods = sorted({m for m, _ in scores})
    datasets = sorted({d for _, d in scores})
    if reference is not None and reference not in methods:
        raise ConfigError(f"reference method {reference!r} is not among the compared: {', '.join(methods)}")
    mean = {k: float(np.mean(v)) for k, v in scores.items()}
    std = {k: float(np.std(v)) for k, v in scores.items()}
    sem = {k: float(np.std(v) / np.sqrt(len(v))) for k, v in scores.items()}
    complete = [d for d in datasets if all((m, d) in scores for m in methods)]
    ranks = average_ranks(mean, methods, complete, greater_is_better=greater_is_better) if complete else None
    test = friedman(mean, methods, complete) if len(methods) >= 3 and len(complete) >= 2 else None
    if test is not None and not np.isfinite(test[1]):  # every method ties on every data set: no test
        test = None
    pair = wilcoxon(mean, methods, complete) if len(methods) == 2 and len(complete) >= 2 else None
    collapsed = {k: collapsed_splits(v, greater_is_better=greater_is_better) for k, v in scores.items()}
    return Comparison(methods, datasets, mean, std, sem, ranks, test,
                      nemenyi_critical_difference(len(methods), len(complete), alpha) if test else None,
                      win_tie_loss(scores, reference, alpha=alpha, greater_is_better=greater_is_better)
                      if reference else None, reference, greater_is_better, alpha, pair,
                      collapsed={k: n for k, n in collapsed.items() if n})


def best_ranked(c: Comparison):
    """The method of the best average rank (the first in ``c.methods`` of those tied), or None
    without ranks: the default reference of a comparison's win/tie/loss."""
    return None if c.ranks is None else c.methods[int(np.argmin(c.ranks))]


def _best(c: Comparison, digits: int) -> dict:
    """The best mean of every data set (the highest, or the lowest where lower is better) as
    printed with ``digits`` decimals: every cell that prints it is bold."""
    best = {}
    for d in c.datasets:
        values = [c.mean[(m, d)] for m in c.methods if (m, d) in c.mean]
        best[d] = f"{max(values) if c.greater_is_better else min(values):.{digits}f}"
    return best


def _rows(c: Comparison, by_rank: bool) -> list:
    """``(index, method)`` in the order of the table's rows: as given, or best average rank first."""
    rows = list(enumerate(c.methods))
    return sorted(rows, key=lambda im: (c.ranks[im[0]], im[1])) if by_rank and c.ranks is not None else rows


def ranked_methods(c: Comparison) -> list:
    """The methods of ``c``, best average rank first (as the tables' rows ``by_rank``)."""
    return [m for _, m in _rows(c, True)]


def _complete(c: Comparison) -> list:
    """The data sets every method was scored on (those the ranks and tests use)."""
    return [d for d in c.datasets if all((m, d) in c.mean for m in c.methods)]


def nemenyi_pvalues(c: Comparison):
    """The Nemenyi post-hoc p-values of every pair of methods (scikit-posthocs'
    ``posthoc_nemenyi_friedman`` on the data sets x methods matrix of means), a DataFrame."""
    import scikit_posthocs as sp

    M = _matrix(c.mean, c.methods, _complete(c))
    p = sp.posthoc_nemenyi_friedman(-M if c.greater_is_better else M)
    p.index = p.columns = list(c.methods)
    return p


def _names(c: Comparison) -> list:
    """The methods' printed names in ``c.methods`` order (the methods themselves if two labels clash)."""
    names = [c.label(m) for m in c.methods]
    return names if len(set(names)) == len(names) else list(map(str, c.methods))
