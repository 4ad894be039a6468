"""PLENCH's results table from ``protocol=plench`` runs: the report writer ``plench_table``.

One markdown table per data set, one row per algorithm (its display name) and one column per
selection criterion (:data:`plcore.run.checkpoints.CRITERION_NAMES`: CR, AA, Oracle, Oracle w/
ES), each cell the chosen checkpoints' test accuracy in percent, mean ± standard error over the
trials as PLENCH's ``collect_results`` prints it (:func:`plcore.run.checkpoints.cell`), from the
runs' summary metrics ``<criterion>_accuracy_mean`` / ``_sem``. A sweep names it in
``hydra.callbacks.report`` (``experiment=plench_tabular``); ``python -m plcore report --writer
plench_table`` rebuilds it from a tracking store.
"""

from __future__ import annotations

import time
from typing import Sequence

from plcore.run.checkpoints import CRITERIA, CRITERION_NAMES
from plcore.run.runs import RunRecord

__all__ = ["plench_table"]


def _cell(run: RunRecord, criterion: str) -> str:
    mean, sem = run.metrics.get(f"{criterion}_accuracy_mean"), run.metrics.get(f"{criterion}_accuracy_sem")
    if mean is None or sem is None:
        return "–"
    return f"{100 * mean:.2f} ± {100 * sem:.2f}"


def _setting(runs: Sequence[RunRecord]) -> str:
    """What the runs share, in words: trials, draws, epochs and the z-score."""
    def values(key):
        found = sorted({str(r.params[key]) for r in runs if key in r.params})
        return "/".join(found) if found else "?"

    return (f"{values('protocol.n_trials')} trials, {values('protocol.n_draws')} hyperparameter draws per "
            f"algorithm and trial, {values('learner.n_epochs')} epochs (a checkpoint each; one for a learner "
            f"without per-epoch checkpoints), test_size {values('protocol.test_size')}, validation_size "
            f"{values('protocol.validation_size')}, z-score over {values('protocol.zscore').replace('_', ' ')}")


def plench_table(runs: Sequence[RunRecord]) -> str:
    """Markdown: PLENCH's table per data set from the ``protocol=plench`` runs among ``runs``
    (the latest run of each algorithm and data set); empty where there are none."""
    from plcore.run.comparison_report import method_and_dataset, method_names

    runs = [r for r in runs if r.tags.get("protocol") == "plench" and "cr_accuracy_mean" in r.metrics]
    if not runs:
        return ""
    runs = sorted(runs, key=lambda r: r.start_time)
    labels, names = method_and_dataset(runs), method_names(runs)
    cells: dict = {}
    for r in runs:  # oldest first: the latest run of a cell wins; rows and tables in first-run order
        method, dataset = labels[r.run_id]
        cells.setdefault(dataset, {})[method] = r
    columns = [CRITERION_NAMES[c] for c in CRITERIA]
    out = ["# PLENCH's table: test accuracy (%) of the checkpoint each criterion selects", "",
           f"Generated {time.strftime('%Y-%m-%d %H:%M', time.localtime())} from {len(runs)} run(s) of "
           f"`protocol=plench`: {_setting(runs)}. CR and AA choose the (draw, epoch) with the largest covering "
           "rate and approximated accuracy of the validation rows' candidate sets; Oracle the draw with the best "
           "validation accuracy (true labels) at the last epoch, Oracle w/ ES the best (draw, epoch) by it. Each "
           "cell: mean ± standard error over the trials (std / sqrt(trials), PLENCH's `format_mean`).", ""]
    for dataset, methods in cells.items():
        out += [f"## {dataset}", "", "| algorithm | " + " | ".join(columns) + " |",
                "|---|" + "---|" * len(columns)]
        for method, run in methods.items():
            out.append(f"| {names[method]} | " + " | ".join(_cell(run, c) for c in CRITERIA) + " |")
        out.append("")
    return "\n".join(out)
