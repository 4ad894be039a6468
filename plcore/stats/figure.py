"""Demsar's critical-difference diagram of a :class:`~plcore.stats.comparison.Comparison`:
scikit-posthocs' ``critical_difference_diagram`` fed its ranks, its critical difference and its
Nemenyi p-values (``posthoc_nemenyi_friedman``), laid out as Demsar's figure: the rank axis from 1
to k, the names beyond its ends, the CD above it."""

from __future__ import annotations

from plcore.stats.comparison import Comparison, _names, nemenyi_pvalues
from plcore.stats.escape import mathtext

__all__ = ["cd_diagram", "cd_figure"]


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

    k, names = len(c.methods), [mathtext(n) for n in _names(c)]
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
        fig.suptitle(mathtext(title), fontsize=10)
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
