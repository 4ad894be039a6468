"""A :class:`~plcore.stats.comparison.Comparison` as a LaTeX ``table`` with booktabs rules, the
same cells as :func:`plcore.stats.markdown.markdown_table`; every name escaped
(:func:`plcore.stats.escape.tex`)."""

from __future__ import annotations

from plcore.stats.comparison import Comparison, _best, _complete, _rows
from plcore.stats.escape import tex as _latex_escape

__all__ = ["latex_table"]


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
