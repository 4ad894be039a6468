"""The CENDA paper's comparison tables ("A vs A-CENDA vs A-DELIN", Tables 6-7) from MLflow runs.

``python -m plcore experiment=cenda_table`` (preset ``plcore_baselines/experiments/cenda_table.yaml``)
runs, 10-fold on lost and msrc-v2, every learner in :data:`LEARNERS` alone and after every
reducer in :data:`REDUCERS` (one MLflow run each) and, at the end of the sweep, the report
writer ``cenda_table`` (:func:`cenda_table`, registered through the ``plcore_report_writers``
hook) writes ``cenda_table.md`` in the current folder (``hydra.callbacks.report.output=`` names the
docs' page ``docs/results/cenda_table.md``): mean ± std per cell and win/tie/loss of pairwise
t-tests at 0.05 on the shared folds, as in the paper. ``python -m plcore report --writer
cenda_table --out docs/results/cenda_table.md`` rebuilds it from the database.
``experiment=cenda_table_transductive`` fits every reducer on all rows' features and
candidate sets (``protocol.fit_reducer_on=all``: the test rows' candidate sets, which contain
their true labels, shape the projection) and ``experiment=cenda_table_unscaled`` drops the
rescaling of the reducer's output; the same writer says which setting its runs used.
"""

from __future__ import annotations

import time

from plcore.run.report import fmt_mean_std, paired_ttest

__all__ = ["LEARNERS", "REDUCERS", "DATASETS", "PAPER_LOST", "cenda_table", "learner_name", "run_key"]

# experiments/cenda_table.yaml sweeps exactly these learners, reducers and data sets (tested)
#: the learner options (the paper's A), in the table's order; printed by their display names
LEARNERS = ("plknn", "plsvm", "plecoc", "ipal")
#: reducer option -> column suffix ("none": the learner on the original features)
REDUCERS = {"none": "", "delin": "-DELIN", "cenda": "-CENDA", "saute": "-SAUTE"}
DATASETS = ("lost", "msrc-v2")

#: CENDA paper, Table 7 (Lost, thr 0.999, DELIN at the same 13 dimensions): (mean, std)
PAPER_LOST = {
    ("plknn", "none"): (0.354, 0.012), ("plknn", "delin"): (0.789, 0.006), ("plknn", "cenda"): (0.810, 0.012),
    ("plsvm", "none"): (0.736, 0.014), ("plsvm", "delin"): (0.793, 0.021), ("plsvm", "cenda"): (0.823, 0.013),
    ("plecoc", "none"): (0.647, 0.039), ("plecoc", "delin"): (0.816, 0.029), ("plecoc", "cenda"): (0.846, 0.016),
    ("ipal", "none"): (0.733, 0.031), ("ipal", "delin"): (0.818, 0.011), ("ipal", "cenda"): (0.850, 0.014),
}
#: CENDA paper, Table 6, row Lost (the same outcome for all four learners)
PAPER_TABLE6_LOST = {("cenda", "none"): "win", ("cenda", "delin"): "win"}
#: comparisons reported as win/tie/loss: (first, second) reducers, "first against second"
COMPARISONS = (("cenda", "none"), ("cenda", "delin"), ("saute", "none"), ("delin", "none"))


def run_key(run) -> tuple[str, str, str] | None:
    """``(dataset, learner, reducer)`` options of a run, from its command-line overrides."""
    opts = {}
    for tok in run.tags.get("overrides", "").split():
        key, _, value = tok.lstrip("+~").partition("=")
        opts[key] = value
    dataset = opts.get("dataset") or run.tags.get("dataset")
    learner = opts.get("learner")
    reducer = opts.get("reducer", "none")
    if dataset is None or learner not in LEARNERS or reducer not in REDUCERS:
        return None
    return dataset, learner, reducer


def learner_name(learner: str) -> str:
    """How the table prints a learner: its spec's display name (``PL-KNN``)."""
    from plcore.registry import get_registry

    return get_registry().display_name(name=learner, kinds=("learner",)) or learner


def _cell(run):
    return fmt_mean_std(mean=run.metrics.get("accuracy_mean"), std=run.metrics.get("accuracy_std"))


def _setting(runs) -> tuple[str, str]:
    """The preset a set of runs came from and a sentence on how the reducers and PL-SVM's C were set."""
    def values(key, default):
        return {str(r.params.get(key, default)) for r in runs}

    transductive = values("protocol.fit_reducer_on", "train") == {"all"}
    unscaled = values("protocol.reduced_preprocessing", "none") == {"none"}
    name = "cenda_table_transductive" if transductive else "cenda_table_unscaled" if unscaled else "cenda_table"
    parts = [("every reducer fitted transductively on all rows' features and candidate sets "
              "(protocol.fit_reducer_on=all): the test rows' candidate sets, which contain their true labels, "
              "shape the projection") if transductive else "every reducer fitted on the training folds only",
             "the reducer's output used as it is" if unscaled
             else "the reducer's output rescaled to unit RMS (protocol.reduced_preprocessing=isotropic)"]
    svm = [r for r in runs if run_key(r)[1] == "plsvm"]
    if svm:
        selected = {str(r.params.get("protocol.select.method", "none")) for r in svm} != {"none"}
        parts.append("PL-SVM's C chosen from {1e-3, ..., 1e3} on every training fold by 3-fold inner CV "
                     "scored by the covering rate (candidate sets only)" if selected
                     else "PL-SVM at its default C = 1")
    return name, "; ".join(parts)


def cenda_table(runs) -> str:
    """Markdown report of a ``cenda_table`` sweep (latest run per cell wins)."""
    cells = {}
    for run in runs:
        key = run_key(run)
        if key is not None and "accuracy_mean" in run.metrics:
            cells[key] = run  # runs come oldest first
    if not cells:
        return ""
    name, setting = _setting(cells.values())
    datasets = [d for d in DATASETS if any(k[0] == d for k in cells)] + sorted(
        {k[0] for k in cells} - set(DATASETS))
    out = ["# A vs A-DELIN vs A-CENDA vs A-SAUTE (the CENDA paper's Tables 6-7)", "",
           f"Generated {time.strftime('%Y-%m-%d %H:%M', time.localtime())} by `python -m plcore experiment={name} "
           f"hydra.callbacks.report.output=docs/results/{name}.md` "
           f"(10-fold CV, seed 0, z-scored on the training folds, {setting}; "
           "DELIN keeps min(q-1, d) dimensions, CENDA's thr 0.999 rule picks its own, SAUTE keeps 15 % of the "
           f"features). Rebuild from the database: `python -m plcore report --experiment {name} "
           f"--writer cenda_table --out docs/results/{name}.md`.", "",
           "## Accuracy (mean ± std over the 10 folds)", "",
           "| data set | learner A | A | A-DELIN | A-CENDA | A-SAUTE | paper: A / A-DELIN / A-CENDA |",
           "|---|---|---|---|---|---|---|"]
    for d in datasets:
        for lrn in LEARNERS:
            row = [d, learner_name(lrn)] + [_cell(cells[(d, lrn, r)]) if (d, lrn, r) in cells else "–" for r in REDUCERS]
            paper = [PAPER_LOST.get((lrn, r)) for r in ("none", "delin", "cenda")] if d == "lost" else [None] * 3
            row.append(" / ".join(fmt_mean_std(mean=p[0], std=p[1]) for p in paper) if all(paper) else "–")
            out.append("| " + " | ".join(row) + " |")
    out += ["", "## Win/tie/loss (pairwise t-test at 0.05 on the same 10 folds)", "",
            "Each row: the first method against the second for learner A, per data set (as the paper's "
            "Table 6; its Lost column is shown beside ours).", "",
            "| comparison | learner A | " + " | ".join(datasets) + " | in total (w/t/l) | paper, Lost (Table 6) |",
            "|---|---|" + "---|" * len(datasets) + "---|---|"]
    for a, b in COMPARISONS:
        for lrn in LEARNERS:
            row, total = [f"A{REDUCERS[a]} vs A{REDUCERS[b]}", learner_name(lrn)], [0, 0, 0]
            for d in datasets:
                ra, rb = cells.get((d, lrn, a)), cells.get((d, lrn, b))
                if ra is None or rb is None or len(ra.steps()) < 2 or len(ra.steps()) != len(rb.steps()):
                    row.append("–")
                    continue
                res = paired_ttest(ra.steps(), rb.steps())
                total[("win", "tie", "loss").index(res)] += 1
                row.append(res)
            row.append("/".join(map(str, total)))
            row.append(PAPER_TABLE6_LOST.get((a, b), "–"))
            out.append("| " + " | ".join(row) + " |")
    out.append("")
    return "\n".join(out)
