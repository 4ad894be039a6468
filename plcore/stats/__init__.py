"""Comparing methods as papers do (Demsar, JMLR 2006): the statistics that sweeps' comparison
reports (:mod:`plcore.run`) and leaderboard pages (:mod:`plcore.leaderboard`) share, below both.

- :mod:`plcore.stats.ranking`: average ranks, the Friedman test, the Nemenyi critical difference,
  bootstrap intervals of the average ranks;
- :mod:`plcore.stats.pairwise`: paired t-tests (win/tie/loss), the Wilcoxon signed-rank test, the
  best row against every other with Holm's correction;
- :mod:`plcore.stats.bayesian`: the Bayesian signed-rank test with a region of practical
  equivalence (baycomp), its verdicts and the tiers built from them;
- :mod:`plcore.stats.comparison`: :func:`compare` computes them once into a :class:`Comparison`;
- the writers render a :class:`Comparison` and compute nothing: :mod:`plcore.stats.markdown`,
  :mod:`plcore.stats.latex`, :mod:`plcore.stats.figure` (the critical-difference diagram).

A new statistic is a function of the per-cell means or per-split scores in ``ranking`` or
``pairwise`` (or a module of its own beside them), a field of :class:`Comparison` filled by
:func:`compare` where every report wants it, and a column or line in the writers that print it.
The statistics are SciPy's, statsmodels', scikit-posthocs' and baycomp's, not written here.
"""

from plcore.stats.bayesian import Verdict, signed_rank, tiers
from plcore.stats.comparison import (COLLAPSE_MARGIN, Comparison, best_ranked, check_same_splits, collapsed_splits,
                                     compare, nemenyi_pvalues, ranked_methods)
from plcore.stats.figure import cd_diagram, cd_figure
from plcore.stats.latex import latex_table
from plcore.stats.markdown import markdown_table
from plcore.stats.pairwise import against_best, paired_ttest, wilcoxon, win_tie_loss
from plcore.stats.ranking import average_ranks, friedman, nemenyi_critical_difference, rank_intervals

__all__ = ["COLLAPSE_MARGIN", "Comparison", "against_best", "average_ranks", "best_ranked", "cd_diagram", "cd_figure",
           "check_same_splits", "collapsed_splits", "compare", "friedman", "latex_table", "markdown_table",
           "nemenyi_critical_difference", "nemenyi_pvalues", "paired_ttest", "rank_intervals", "ranked_methods",
           "signed_rank", "tiers", "Verdict", "wilcoxon", "win_tie_loss"]
