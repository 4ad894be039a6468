"""A :class:`~plcore.stats.comparison.Comparison` as a Markdown table: methods x data sets,
``mean ± std``, the best mean per data set in bold (where its mean, as printed, equals the best as
printed), the average rank, win/tie/loss, and the test over data sets below; every name escaped
(:func:`plcore.stats.escape.md`)."""

from __future__ import annotations

from plcore.stats.comparison import COLLAPSE_MARGIN, Comparison, _best, _complete, _rows
from plcore.stats.escape import md

__all__ = ["markdown_table"]


def markdown_table(c: Comparison, *, error: str = "std", digits: int = 3, by_rank: bool = False) -> str:
    """Methods x data sets, ``mean ± std`` (or ``± sem``), the best mean per data set in bold,
    then the average rank and, with a reference method, its win/tie/loss against each row
    (rows in ``c.methods`` order, or by average rank, best first, with ``by_rank``)."""
    spread = c.std if error == "std" else c.sem
    best = _best(c, digits)
    head = ["method", *map(md, c.datasets), "average rank"] + ([f"{md(c.label(c.reference))}: win/tie/loss"] if c.wtl
                                                                 else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for i, m in _rows(c, by_rank):
        cells = [md(c.label(m))]
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
