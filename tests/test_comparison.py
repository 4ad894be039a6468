"""The comparison of methods over data sets: every statistic against SciPy or its textbook formula."""

import math

import numpy as np
import pytest
from scipy import stats

from plcore.exceptions import ConfigError
from plcore.stats import (average_ranks, check_same_splits, collapsed_splits, compare, friedman,
                                   markdown_table, nemenyi_critical_difference, win_tie_loss)

# three methods, three data sets, five paired splits each
RNG = np.random.RandomState(0)
BASE = {"d1": 0.70, "d2": 0.50, "d3": 0.90}
SHIFT = {"a": 0.05, "b": 0.0, "c": -0.002}
NOISE = {d: RNG.normal(0, 0.01, 5) for d in BASE}
SCORES = {(m, d): BASE[d] + SHIFT[m] + NOISE[d] + RNG.normal(0, 0.003, 5) for m in SHIFT for d in BASE}


def test_win_tie_loss_is_the_paired_t_test_of_scipy():
    wtl = win_tie_loss(SCORES, "a")
    for other in ("b", "c"):
        expected = [0, 0, 0]
        for d in BASE:
            a, b = SCORES[("a", d)], SCORES[(other, d)]
            diff = a - b
            t = diff.mean() / (diff.std(ddof=1) / math.sqrt(len(diff)))     # the paired t statistic
            p = 2 * stats.t.sf(abs(t), len(diff) - 1)
            assert p == pytest.approx(stats.ttest_rel(a, b).pvalue, rel=1e-9)
            expected[1 if p >= 0.05 else (0 if t > 0 else 2)] += 1
        assert wtl[other] == tuple(expected)
    assert wtl["b"] == (3, 0, 0)                    # a is 0.05 better everywhere, well above the noise
    assert win_tie_loss(SCORES, "b")["c"][1] >= 1   # b vs c: 0.002 apart, within the noise somewhere


def test_lower_is_better_swaps_wins_and_losses_and_ranks():
    errors = {k: 1 - np.asarray(v) for k, v in SCORES.items()}
    assert win_tie_loss(errors, "a", greater_is_better=False) == win_tie_loss(SCORES, "a")
    means = {k: float(np.mean(v)) for k, v in errors.items()}
    ranks = average_ranks(means, ["a", "b", "c"], list(BASE), greater_is_better=False)
    assert ranks[0] == 1.0                          # a has the lowest error on every data set
    np.testing.assert_allclose(ranks, average_ranks({k: float(np.mean(v)) for k, v in SCORES.items()},
                                                    ["a", "b", "c"], list(BASE)))


def test_identical_scores_are_a_tie_not_a_nan():
    scores = {("a", "d"): np.array([0.5, 0.6, 0.7]), ("b", "d"): np.array([0.5, 0.6, 0.7]),
              ("c", "d"): np.array([0.4, 0.5, 0.6])}
    wtl = win_tie_loss(scores, "a")
    assert wtl["b"] == (0, 1, 0)
    assert wtl["c"] == (1, 0, 0)                    # a constant difference of 0.1: significant


def test_friedman_is_scipys_and_the_textbook_statistic():
    # 4 methods on 6 data sets, no ties: chi2_F = 12 N / (k (k + 1)) [sum_j R_j^2 - k (k + 1)^2 / 4]
    rng = np.random.RandomState(1)
    methods, datasets = list("wxyz"), [f"d{i}" for i in range(6)]
    means = {(m, d): float(rng.rand() + 0.1 * i) for i, m in enumerate(methods) for d in datasets}
    chi2, p = friedman(means, methods, datasets)
    M = np.array([[means[(m, d)] for m in methods] for d in datasets])
    assert (chi2, p) == pytest.approx(tuple(stats.friedmanchisquare(*M.T)), rel=1e-12)
    R = average_ranks(means, methods, datasets)
    k, n = 4, 6
    assert chi2 == pytest.approx(12 * n / (k * (k + 1)) * (np.sum(R ** 2) - k * (k + 1) ** 2 / 4), rel=1e-12)
    assert R.sum() == pytest.approx(k * (k + 1) / 2)


@pytest.mark.parametrize("k, q", [(2, 1.960), (3, 2.343), (4, 2.569), (5, 2.728), (6, 2.850), (10, 3.164)])
def test_nemenyi_critical_difference_uses_demsars_q_values(k, q):
    """Demsar (2006), Table 5(a): q_0.05 for the Nemenyi test."""
    n = 14
    cd = nemenyi_critical_difference(k, n)
    assert cd / math.sqrt(k * (k + 1) / (6 * n)) == pytest.approx(q, abs=1e-3)   # his table has 3 places


def test_mismatched_splits_are_refused_in_one_line():
    check_same_splits({("a", "lost"): ("kfold", 0, "f1"), ("b", "lost"): ("kfold", 0, "f1")})
    with pytest.raises(ConfigError, match="not run on the same splits") as err:
        check_same_splits({("a", "lost"): ("kfold", 0, "f1"), ("b", "lost"): ("kfold", 1, "f1")})
    assert "\n" not in str(err.value) and "lost" in str(err.value)


def test_compare_and_its_markdown_table():
    c = compare(SCORES, reference="a")
    assert c.methods == ["a", "b", "c"] and c.ranks[0] == 1.0 and c.friedman is not None
    table = markdown_table(c)
    row_a = next(line for line in table.splitlines() if line.startswith("| a |"))
    assert row_a.count("**") == 6                   # a is best on all three data sets
    assert "| b |" in table and "3/0/0" in table and "Friedman chi2" in table
    with pytest.raises(ConfigError, match="reference method 'z'"):
        compare(SCORES, reference="z")
    two = compare({k: v for k, v in SCORES.items() if k[0] != "c"})
    assert two.friedman is None and two.critical_difference is None     # needs 3 methods


def test_the_diagrams_nemenyi_pvalues_agree_with_the_critical_difference():
    """scikit-posthocs draws the bars from its Nemenyi p-values; they must join exactly the pairs
    whose average ranks differ by less than our critical difference."""
    from plcore.stats import nemenyi_pvalues

    rng = np.random.RandomState(3)
    methods, datasets = list("abcdef"), [f"d{i}" for i in range(12)]
    scores = {(m, d): rng.rand(4) + 0.08 * i for i, m in enumerate(methods) for d in datasets}
    for greater in (True, False):
        c = compare(scores, greater_is_better=greater)
        p = nemenyi_pvalues(c)
        pairs = [(i, j) for i in range(6) for j in range(i + 1, 6)]
        assert any(p.iloc[i, j] < 0.05 for i, j in pairs) and any(p.iloc[i, j] >= 0.05 for i, j in pairs)
        for i, j in pairs:
            assert (p.iloc[i, j] < c.alpha) == (abs(c.ranks[i] - c.ranks[j]) > c.critical_difference)


def test_tables_can_list_the_best_ranked_method_first():
    c = compare({(m, d): v for (m, d), v in SCORES.items()})
    rows = lambda text: [l.split("|")[1].strip() for l in text.splitlines()[2:] if l.startswith("| ")]  # noqa: E731
    by_name, by_rank = markdown_table(c), markdown_table(c, by_rank=True)
    assert rows(by_name) == ["a", "b", "c"]
    order = [m for _, m in sorted(zip(c.ranks, c.methods))]
    assert rows(by_rank) == order and order[0] == "a"
    from plcore.stats import latex_table
    body = [l.split(" & ")[0] for l in latex_table(c, by_rank=True).splitlines() if l.endswith(r"\\") and " & " in l][1:]
    assert body == order


def test_cells_equal_to_the_best_as_printed_are_bold_alike():
    """``0.967 ± 0.044`` and ``0.967 ± 0.021`` are the best alike: both bold, in markdown and LaTeX
    (the ranks still use the unrounded means); 0.966 is not."""
    from plcore.stats import latex_table

    base = np.array([-0.02, 0.02, -0.01, 0.01, 0.0])
    scores = {("a", "d1"): 0.96704 + 2.2 * base, ("b", "d1"): 0.96696 + 1.05 * base, ("c", "d1"): 0.9664 + base,
              ("a", "d2"): 0.80 + base, ("b", "d2"): 0.70 + base, ("c", "d2"): 0.60 + base}
    c = compare(scores)
    assert [f"{c.mean[(m, 'd1')]:.3f}" for m in "abc"] == ["0.967", "0.967", "0.966"]
    assert c.mean[("a", "d1")] != c.mean[("b", "d1")]
    rows = {line.split("|")[1].strip(): line for line in markdown_table(c).splitlines()[2:] if line.startswith("| ")}
    assert "**0.967 ± 0.031**" in rows["a"] and "**0.967 ± 0.015**" in rows["b"]
    assert "**" not in rows["c"].split("|")[2]
    tex = {line.split(" & ")[0]: line for line in latex_table(c).splitlines() if " & " in line}
    assert r"$\mathbf{0.967} \pm 0.031$" in tex["a"] and r"$\mathbf{0.967} \pm 0.015$" in tex["b"]
    assert r"\mathbf{0.966}" not in tex["c"]
    lower = compare({k: 1 - v for k, v in scores.items()}, greater_is_better=False)  # mistake rates: lowest bold
    rows = {line.split("|")[1].strip(): line for line in markdown_table(lower).splitlines()[2:]
            if line.startswith("| ")}
    assert "**0.033 ± 0.031**" in rows["a"] and "**0.033 ± 0.015**" in rows["b"] and "**" not in rows["c"].split("|")[2]


def test_two_methods_get_the_wilcoxon_signed_rank_test_over_the_data_sets():
    """Demsar's test for two methods: the Wilcoxon signed-rank test of their means over the data
    sets (SciPy's), printed under the table; Friedman and the diagram stay for three or more."""
    from plcore.stats import latex_table

    rng = np.random.RandomState(5)
    scores = {(m, f"d{i}"): rng.rand(4) + (0.3 if m == "a" else 0) * rng.rand() for m in "ab" for i in range(7)}
    c = compare(scores)
    means = np.array([[c.mean[(m, f"d{i}")] for m in "ab"] for i in range(7)])
    expected = stats.wilcoxon(means[:, 0], means[:, 1])
    assert c.friedman is None and c.critical_difference is None
    assert c.wilcoxon == pytest.approx((expected.statistic, expected.pvalue))
    assert f"Wilcoxon signed-rank test of the two methods over 7 data sets: W = {expected.statistic:g}, " \
           f"p = {expected.pvalue:.3g}" in markdown_table(c)
    assert "Wilcoxon signed-rank test over 7 data sets" in latex_table(c)
    assert compare(SCORES).wilcoxon is None                                          # three methods: Friedman
    assert compare({k: v for k, v in scores.items() if k[1] == "d0"}).wilcoxon is None  # one data set: no test
    same = compare({(m, d): v for (_, d), v in scores.items() for m in "ab"})
    assert same.wilcoxon is None                                                     # identical: nothing to test


def _drawn(c, title="accuracy (kfold, 10 folds; higher is better)"):
    """The diagram's figure drawn (Agg), with its renderer."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from plcore.stats import cd_figure

    fig = cd_figure(c, title=title)
    FigureCanvasAgg(fig).draw()
    return fig, fig.canvas.get_renderer()


@pytest.mark.parametrize("k", [3, 5, 20])
def test_the_cd_diagram_has_a_1_to_k_rank_axis_and_names_clear_of_it(k):
    """Demsar's layout: the rank axis from 1 to k with a tick per rank (not the ranks' span,
    1.67 to 3.6 for three methods before), each method's display name beyond the axis's end,
    the critical difference above the tick labels; no two texts overlap."""
    rng = np.random.RandomState(k)
    methods = [f"method_{i}" for i in range(k)]
    scores = {(m, f"d{j}"): rng.rand(5) * 0.1 + 0.02 * i + rng.rand() * 0.05
              for i, m in enumerate(methods) for j in range(6)}
    c = compare(scores)
    c.labels = {m: f"Method {i} long name" for i, m in enumerate(methods)}
    assert c.critical_difference is not None and (c.ranks.min() > 1 or c.ranks.max() < k)  # not the span 1..k
    fig, renderer = _drawn(c)
    ax = fig.axes[0]
    assert ax.get_xlim() == (1, k)
    ticks = [t for t in ax.get_xticklabels() if t.get_visible() and t.get_text()]
    assert [t.get_text() for t in ticks] == [str(r) for r in range(1, k + 1)]
    x_first, y_axis = ax.transData.transform((1, 0))
    x_last, _ = ax.transData.transform((k, 0))
    names = [t for t in ax.texts if "long name" in t.get_text()]
    assert sorted(t.get_text().split(" (")[0].split(") ")[-1] for t in names) == sorted(c.labels.values())
    boxes = {t.get_text(): t.get_window_extent(renderer) for t in names}
    for t in names:
        box = boxes[t.get_text()]
        assert box.y1 < y_axis - 5                                   # below the axis
        if t.get_horizontalalignment() == "right":
            assert box.x1 < x_first                                  # left of rank 1
        else:
            assert box.x0 > x_last                                   # right of rank k
    (cd,) = [t for t in ax.texts if t.get_text().startswith("CD = ")]
    others = [*boxes.values(), *(t.get_window_extent(renderer) for t in ticks), fig._suptitle.get_window_extent(renderer)]
    cd_box = cd.get_window_extent(renderer)
    assert cd_box.y0 > max(t.get_window_extent(renderer).y1 for t in ticks)  # above the tick labels
    everything = [cd_box, *others]
    for i, a in enumerate(everything):
        for b in everything[i + 1:]:
            assert not a.overlaps(b), "two texts of the diagram overlap"
    for a, b in zip(ticks, ticks[1:]):
        assert a.get_window_extent(renderer).x1 < b.get_window_extent(renderer).x0


def test_collapsed_splits_are_those_more_than_ten_points_below_their_cells_median():
    """Fuchs & Kalinke's stored runs hold collapsed VALEN and CAVL seeds: a split more than 0.10 worse
    than its cell's median counts (one at a time, as a literal loop), and the table says how many."""
    values = [0.80, 0.82, 0.79, 0.60, 0.68]
    median = sorted(values)[2]
    assert collapsed_splits(values) == sum(1 for v in values if median - v > 0.10) == 2
    assert collapsed_splits([0.1, 0.3, 0.31], greater_is_better=False) == 0
    assert collapsed_splits([0.1, 0.3, 0.45], greater_is_better=False) == 1
    scores = {("a", "d1"): values, ("b", "d1"): [0.7, 0.71, 0.69, 0.7, 0.72], ("c", "d1"): [0.5] * 5}
    c = compare(scores)
    assert c.collapsed == {("a", "d1"): 2}
    table = markdown_table(c)
    assert "(2 collapsed)" in table and "Collapsed: 2 split(s)" in table
    assert "collapsed" not in markdown_table(compare({k: v for k, v in scores.items() if k[0] != "a"}))


def test_the_old_module_path_still_serves_the_statistics_and_says_where_they_moved():
    """``plcore.run.comparison`` (before plcore.stats) re-exports every name for one release, warning."""
    import importlib
    import sys

    import plcore.stats

    sys.modules.pop("plcore.run.comparison", None)
    with pytest.warns(DeprecationWarning, match="plcore.stats"):
        old = importlib.import_module("plcore.run.comparison")
    assert all(getattr(old, name) is getattr(plcore.stats, name) for name in plcore.stats.__all__)
