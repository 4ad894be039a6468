"""Pairs of methods: the paired t-test of two methods on one data set's splits (win/tie/loss, as
the CENDA paper's tables), and tests over data sets, the Wilcoxon signed-rank test of two methods
and the best row against every other with Holm's correction (Demsar, JMLR 2006; Benavoli et al.,
JMLR 2016)."""

from __future__ import annotations

import numpy as np
from scipy import stats

from plcore.exceptions import ConfigError
from plcore.stats.ranking import _matrix, average_ranks

__all__ = ["against_best", "paired_ttest", "wilcoxon", "win_tie_loss"]


def paired_ttest(a, b, alpha: float = 0.05, *, greater_is_better: bool = True) -> str:
    """``"win"`` / ``"tie"`` / ``"loss"`` of ``a`` against ``b`` by a paired two-sided t-test
    (``scipy.stats.ttest_rel``), as in the CENDA paper's Tables 4 and 6: the same folds,
    significance level ``alpha``; identical results (zero variance of the differences) are a
    tie, a constant non-zero difference (p = 0) a win or a loss."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or a.size < 2:
        raise ValueError(f"paired t-test needs two equally long 1-D samples (>= 2), got {a.shape} and {b.shape}")
    d = (a - b) if greater_is_better else (b - a)
    if np.allclose(d, d[0]):
        if np.isclose(d[0], 0.0):
            return "tie"
        return "win" if d[0] > 0 else "loss"
    if stats.ttest_rel(a, b).pvalue >= alpha:
        return "tie"
    return "win" if d.mean() > 0 else "loss"


def win_tie_loss(scores: dict, reference: str, *, alpha: float = 0.05, greater_is_better: bool = True) -> dict:
    """``{method: (wins, ties, losses)}`` of ``reference`` against every other method: one
    :func:`paired_ttest` per data set over the shared splits (data sets of a single split, a
    holdout with ``n_repeats=1``, are not counted)."""
    methods = sorted({m for m, _ in scores} - {reference})
    datasets = sorted({d for m, d in scores if m == reference})
    out = {}
    for other in methods:
        counts = {"win": 0, "tie": 0, "loss": 0}
        for d in datasets:
            if (other, d) not in scores or len(scores[(reference, d)]) < 2:  # one split: nothing to test
                continue
            try:
                counts[paired_ttest(scores[(reference, d)], scores[(other, d)], alpha,
                                    greater_is_better=greater_is_better)] += 1
            except ValueError as err:
                raise ConfigError(f"cannot pair {reference!r} and {other!r} on {d!r}: {err}") from None
        out[other] = (counts["win"], counts["tie"], counts["loss"])
    return out


def wilcoxon(means: dict, methods, datasets) -> tuple[float, float] | None:
    """The Wilcoxon signed-rank test of two methods' means over the data sets
    (``scipy.stats.wilcoxon``, two-sided; Demsar's test for two methods): its statistic and
    p-value, or None where every difference is zero."""
    a, b = _matrix(means, methods, datasets).T
    if np.allclose(a, b):
        return None
    result = stats.wilcoxon(a, b)
    return float(result.statistic), float(result.pvalue)


def against_best(means: dict, methods, datasets, *, alpha: float = 0.05, greater_is_better: bool = True) -> dict:
    """The best row by average rank against every other, as Demsar (2006, section 3.2.3) and
    Benavoli et al. (JMLR 2016) recommend over the Nemenyi test: the Wilcoxon signed-rank test of
    the two rows' per-data-set means (``scipy.stats.wilcoxon``, two-sided), the p-values adjusted by
    Holm's step-down procedure over the k - 1 comparisons (``statsmodels``' ``multipletests``).

    Returns ``{"best": method, "tests": {method: (p, p_holm, significant, wins, losses)}}``,
    ``wins``/``losses`` counting the data sets where the best row's mean is higher/lower; a row
    equal to the best on every data set gets p = 1."""
    from statsmodels.stats.multitest import multipletests

    ranks = average_ranks(means, methods, datasets, greater_is_better=greater_is_better)
    best = methods[int(np.argmin(ranks))]
    others = [m for m in methods if m != best]
    M = _matrix(means, methods, datasets)
    b = M[:, methods.index(best)]
    raw, counts = [], []
    for m in others:
        o = M[:, methods.index(m)]
        diff = (b - o) if greater_is_better else (o - b)
        raw.append(1.0 if np.allclose(diff, 0.0) else float(stats.wilcoxon(b, o).pvalue))
        counts.append((int(np.sum(diff > 0)), int(np.sum(diff < 0))))
    if not others:
        return {"best": best, "tests": {}}
    reject, adjusted, _, _ = multipletests(raw, alpha=alpha, method="holm")
    return {"best": best, "tests": {m: (raw[i], float(adjusted[i]), bool(reject[i]), *counts[i])
                                    for i, m in enumerate(others)}}
