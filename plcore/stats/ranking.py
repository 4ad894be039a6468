"""Ranks over data sets (Demsar, JMLR 2006): each method's average rank, the Friedman test, the
Nemenyi critical difference and bootstrap intervals of the average ranks.

Functions of the per-cell means ``means[(method, dataset)]``; the statistics are SciPy's
(``rankdata``, ``friedmanchisquare``, ``studentized_range``, ``bootstrap``), not written here.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

__all__ = ["average_ranks", "friedman", "nemenyi_critical_difference", "rank_intervals"]


def _matrix(means: dict, methods, datasets) -> np.ndarray:
    return np.array([[means[(m, d)] for m in methods] for d in datasets], dtype=float)


def average_ranks(means: dict, methods, datasets, *, greater_is_better: bool = True) -> np.ndarray:
    """Each method's rank averaged over the data sets (1 = best; ties share the mean rank,
    ``scipy.stats.rankdata``), in ``methods`` order."""
    M = _matrix(means, methods, datasets)
    return stats.rankdata(-M if greater_is_better else M, axis=1).mean(axis=0)


def friedman(means: dict, methods, datasets) -> tuple[float, float]:
    """The Friedman test's statistic and p-value over the data sets (``scipy.stats.friedmanchisquare``;
    needs at least 3 methods)."""
    M = _matrix(means, methods, datasets)
    with np.errstate(invalid="ignore", divide="ignore"):
        result = stats.friedmanchisquare(*M.T)
    return float(result.statistic), float(result.pvalue)


def rank_intervals(means: dict, methods, datasets, *, level: float = 0.95, n_resamples: int = 2000, seed: int = 0,
                   greater_is_better: bool = True) -> dict:
    """``{method: (low, high)}``: percentile bootstrap intervals of each method's average rank, the
    data sets resampled with replacement (``scipy.stats.bootstrap``, ``method="percentile"``): how
    much a row's place depends on which tasks the benchmark happens to hold."""
    M = _matrix(means, methods, datasets)
    R = stats.rankdata(-M if greater_is_better else M, axis=1)  # ranks within a data set do not change

    res = stats.bootstrap((np.arange(len(datasets)),), lambda rows: R[rows.astype(int)].mean(axis=0),
                          vectorized=False, n_resamples=n_resamples, confidence_level=level, method="percentile",
                          random_state=np.random.default_rng(seed))
    low, high = np.atleast_1d(res.confidence_interval.low), np.atleast_1d(res.confidence_interval.high)
    return {m: (float(low[i]), float(high[i])) for i, m in enumerate(methods)}


def nemenyi_critical_difference(n_methods: int, n_datasets: int, alpha: float = 0.05) -> float:
    """Demsar's (2006) critical difference of average ranks for the Nemenyi test,
    ``q_alpha sqrt(k (k + 1) / (6 N))`` with ``q_alpha`` the studentized range quantile over
    ``sqrt 2`` (k = 3: 2.343 at 0.05, his Table 5a)."""
    q = stats.studentized_range.ppf(1 - alpha, n_methods, np.inf) / np.sqrt(2)
    return float(q * np.sqrt(n_methods * (n_methods + 1) / (6.0 * n_datasets)))
