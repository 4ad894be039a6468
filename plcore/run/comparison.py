"""Comparing methods as papers do: per data set mean +- std, paired t-tests (win/tie/loss), average
ranks, the Friedman test and the Nemenyi critical difference (Demsar, JMLR 2006); for two methods
Demsar's test over data sets, the Wilcoxon signed-rank test.

Pure functions of the per-split scores ``scores[(method, dataset)]`` (one value per fold,
partition or repeat, the same splits for every method of a data set); the statistics are
SciPy's (``ttest_rel``, ``friedmanchisquare``, ``wilcoxon``, ``rankdata``, ``studentized_range``), not
written here. ``greater_is_better=False`` (mistake rates) ranks and counts wins the other way.
The critical-difference diagram is scikit-posthocs' ``critical_difference_diagram`` fed these
ranks, this critical difference and its Nemenyi p-values (``posthoc_nemenyi_friedman``), laid out
as Demsar's figure: the rank axis from 1 to k, the names beyond its ends, the CD above it.
A :class:`Comparison`'s ``labels`` name its methods in tables and diagrams (``PL-KNN`` for
``plknn``); a cell is bold where its mean, as printed, equals the best as printed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from plcore.exceptions import ConfigError

__all__ = ["Comparison", "against_best", "average_ranks", "rank_intervals", "best_ranked", "cd_diagram", "cd_figure", "check_same_splits", "compare",
           "friedman", "latex_table", "markdown_table", "nemenyi_critical_difference", "nemenyi_pvalues", "paired_ttest",
           "ranked_methods", "wilcoxon", "win_tie_loss"]


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


def markdown_table(c: Comparison, *, error: str = "std", digits: int = 3, by_rank: bool = False) -> str:
    """Methods x data sets, ``mean ± std`` (or ``± sem``), the best mean per data set in bold,
    then the average rank and, with a reference method, its win/tie/loss against each row
    (rows in ``c.methods`` order, or by average rank, best first, with ``by_rank``)."""
    spread = c.std if error == "std" else c.sem
    best = _best(c, digits)
    head = ["method", *c.datasets, "average rank"] + ([f"{c.label(c.reference)}: win/tie/loss"] if c.wtl else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for i, m in _rows(c, by_rank):
        cells = [c.label(m)]
        for d in c.datasets:
            if (m, d) not in c.mean:
                cells.append("–")
                continue
            mean = f"{c.mean[(m, d)]:.{digits}f}"
            text = f"{mean} ± {spread[(m, d)]:.{digits}f}"
            text = f"**{text}**" if mean == best[d] else text
            cells.append(text + (f" ({c.collapsed[(m, d)]} collapsed)" if (m, d) in c.collapsed else ""))
        cells.append("–" if c.ranks is None else f"{c.ranks[i]:.2f}")
        if c.wtl:
            cells.append("–" if m == c.reference else "/".join(map(str, c.wtl[m])))
        lines.append("| " + " | ".join(cells) + " |")
    if c.collapsed:
        lines.append("")
        lines.append(f"Collapsed: {sum(c.collapsed.values())} split(s) scored more than {COLLAPSE_MARGIN:g} worse "
                     "than the median of their method and data set (kept in the means).")
    if c.friedman is not None:
        lines.append("")
        lines.append(f"Friedman chi2 = {c.friedman[0]:.3f}, p = {c.friedman[1]:.3g} over {len(_complete(c))} data "
                     f"sets; Nemenyi critical difference ({c.alpha:g}) = {c.critical_difference:.3f} average ranks")
    elif c.wilcoxon is not None:
        lines.append("")
        lines.append(f"Wilcoxon signed-rank test of the two methods over {len(_complete(c))} data sets: "
                     f"W = {c.wilcoxon[0]:g}, p = {c.wilcoxon[1]:.3g}")
    return "\n".join(lines)


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                  "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}"}


def _latex_escape(text) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in str(text))


def latex_table(c: Comparison, *, error: str = "std", digits: int = 3, caption: str | None = None,
                by_rank: bool = False) -> str:
    """The same table as :func:`markdown_table` as a LaTeX ``table`` with booktabs rules
    (``\\usepackage{booktabs}``): best per data set in bold, average rank, win/tie/loss."""
    spread = c.std if error == "std" else c.sem
    best = _best(c, digits)
    head = ["Method", *map(_latex_escape, c.datasets), "Avg.\\ rank"]
    if c.wtl:
        head.append(f"{_latex_escape(c.label(c.reference))}: W/T/L")
    lines = [r"\begin{table}[t]", r"\centering"]
    if caption:
        lines.append(rf"\caption{{{_latex_escape(caption)}}}")
    lines += [r"\begin{tabular}{l" + "c" * (len(head) - 1) + "}", r"\toprule", " & ".join(head) + r" \\",
              r"\midrule"]
    for i, m in _rows(c, by_rank):
        cells = [_latex_escape(c.label(m))]
        for d in c.datasets:
            if (m, d) not in c.mean:
                cells.append("--")
                continue
            mean, sd = f"{c.mean[(m, d)]:.{digits}f}", f"{spread[(m, d)]:.{digits}f}"
            cells.append(rf"$\mathbf{{{mean}}} \pm {sd}$" if mean == best[d] else rf"${mean} \pm {sd}$")
        cells.append("--" if c.ranks is None else f"{c.ranks[i]:.2f}")
        if c.wtl:
            cells.append("--" if m == c.reference else "/".join(map(str, c.wtl[m])))
        lines.append(" & ".join(cells) + r" \\")
    lines.append(r"\bottomrule")
    lines.append(r"\end{tabular}")
    if c.friedman is not None:
        lines.append(rf"\\[2pt] {{\footnotesize Friedman $\chi^2_F = {c.friedman[0]:.3f}$, $p = {c.friedman[1]:.3g}$ "
                     rf"over {len(_complete(c))} data sets; Nemenyi CD$_{{{c.alpha:g}}} = {c.critical_difference:.3f}$}}")
    elif c.wilcoxon is not None:
        lines.append(rf"\\[2pt] {{\footnotesize Wilcoxon signed-rank test over {len(_complete(c))} data sets: "
                     rf"$W = {c.wilcoxon[0]:g}$, $p = {c.wilcoxon[1]:.3g}$}}")
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


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


def cd_figure(c: Comparison, *, title: str | None = None):
    """Demsar's critical-difference diagram of ``c`` as a matplotlib ``Figure``, or None without a
    Friedman test: scikit-posthocs draws the methods at their average ranks and the bars joining
    those the Nemenyi test cannot tell apart; here the rank axis runs from 1 to k with a tick per
    rank, each name stands beyond the axis's end (the better half left of 1, the rest right of
    k), and the critical difference is a bar from rank 1 above the tick labels."""
    if c.critical_difference is None:
        return None
    import pandas as pd
    import scikit_posthocs as sp
    from matplotlib.figure import Figure
    from matplotlib.transforms import offset_copy

    k, names = len(c.methods), _names(c)
    pvalues = nemenyi_pvalues(c)
    pvalues.index = pvalues.columns = names
    width = 7.0 + 0.25 * max(0, k - 10)  # room for a tick label per rank
    fig = Figure(figsize=(width, 3.0), layout="constrained")  # the layout makes room for every label
    ax = fig.add_subplot()
    drawn = sp.critical_difference_diagram(pd.Series(c.ranks, index=names), pvalues, alpha=c.alpha, ax=ax,
                                           label_fmt_left="{label} ({rank:.2f})",
                                           label_fmt_right="({rank:.2f}) {label}")
    ax.set_xlim(1, k)
    ax.set_xticks(range(1, k + 1))
    ax.tick_params(axis="x", labelsize=8)
    pad = 0.02 * (k - 1)  # the elbows end, and the names start, just beyond the axis
    for elbow, label in zip(drawn["elbows"], drawn["labels"]):
        end = 1 - pad if label.get_horizontalalignment() == "right" else k + pad
        elbow.set_xdata([end, *elbow.get_xdata()[1:]])
        label.set_x(end)
        elbow.set_clip_on(False)
    for marker in drawn["markers"]:
        marker.set_clip_on(False)
    low = min(y for elbow in drawn["elbows"] for y in elbow.get_ydata())
    ax.set_ylim(low - 0.5, 0)  # the axis is the top edge: the tick labels and the CD stand above it
    above = offset_copy(ax.transData, fig=fig, y=24, units="points")  # clear of the 8 pt tick labels
    cd = c.critical_difference
    ax.plot([1, 1 + cd], [0, 0], transform=above, color="k", linewidth=1.5, marker="|", markersize=7,
            clip_on=False)
    ax.text(1 + cd / 2, 0, f"CD = {cd:.2f}", transform=offset_copy(above, fig=fig, y=4, units="points"),
            ha="center", va="bottom", fontsize=9)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.set_size_inches(width, 1.3 + 0.3 * (0.5 - low))
    return fig


def cd_diagram(c: Comparison, stem, *, title: str | None = None) -> list:
    """Demsar's critical-difference diagram of ``c`` (:func:`cd_figure`) as ``<stem>.png`` and
    ``<stem>.svg``. Returns the two paths; nothing (``[]``) without a Friedman test."""
    fig = cd_figure(c, title=title)
    if fig is None:
        return []
    from pathlib import Path

    stem = Path(stem)
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = [stem.with_name(stem.name + ext) for ext in (".png", ".svg")]
    import matplotlib

    with matplotlib.rc_context({"svg.hashsalt": "plcore"}):  # the same SVG ids on every render
        for path in paths:
            fig.savefig(path, dpi=150 if path.suffix == ".png" else None, bbox_inches="tight",
                        metadata={"Date": None} if path.suffix == ".svg" else None)
    return paths
