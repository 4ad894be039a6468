"""Reports built from MLflow runs: the reproduction table and paired t-test comparisons.

A preset that reproduces a published figure carries a ``paper`` block::

    paper:
      source: "CENDA (Bao et al., KDD 2021), Table 7"
      setting: "Lost, PL-KNN after CENDA, 10-fold CV"
      metric: accuracy_mean        # the summary metric to compare
      value: 0.810
      std: 0.012

which every run logs as ``paper.*`` params. :func:`reproduction_table` turns such runs
into a markdown table, ours beside the paper's. ``python -m plcore -m 'experiment=glob(paper_*)' report=reproduction``
writes it to ``reproduction.md`` in the current folder through :class:`plcore.run.callbacks.ReportCallback`
(the primary config's ``hydra.callbacks.report``; its ``output`` names another file, such as the docs'
page); ``python -m plcore report --kind reproduction`` rebuilds it from a tracking database at any time.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import time
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from plcore.exceptions import ConfigError
from plcore.stats import paired_ttest  # re-exported: the reproduction and CENDA tables use it
from plcore.run.runs import PARENT_TAG, SWEEP_TAG, RunRecord, load_runs, provenance_line  # noqa: F401 - re-exported

log = logging.getLogger(__name__)

__all__ = ["RunRecord", "load_runs", "paired_ttest", "fmt_mean_std", "reproduction_table", "summary_page", "sweep_table",
           "write_report", "main"]

def fmt_mean_std(values=None, *, mean=None, std=None, digits: int = 3) -> str:
    """``"0.756 ± 0.035"`` from values (population std over folds, as plcore logs) or a given mean/std."""
    if values is not None:
        values = np.asarray(values, dtype=float)
        mean, std = values.mean(), values.std()
    if mean is None:
        return "–"
    if std is None:
        return f"{float(mean):.{digits}f}"
    return f"{float(mean):.{digits}f} ± {float(std):.{digits}f}"


def _float(x):
    try:
        return float(x)
    except (TypeError, ValueError):
        return None


def reproduction_table(runs: Sequence[RunRecord]) -> str:
    """Markdown: one row per preset with a ``paper`` block (its latest run), ours beside the paper's figure."""
    latest = {}
    for r in sorted(runs, key=lambda r: r.start_time):
        latest[r.preset or r.tags.get("overrides", r.run_id)] = r
    rows = []
    for r in latest.values():
        p = {k[len("paper."):]: v for k, v in r.params.items() if k.startswith("paper.")}
        if not p:
            continue
        metric = p.get("metric", "accuracy_mean")
        std_key = metric[:-len("_mean")] + "_std" if metric.endswith("_mean") else None
        ours_mean, ours_std = r.metrics.get(metric), r.metrics.get(std_key) if std_key else None
        paper_value, paper_std = _float(p.get("value")), _float(p.get("std"))
        diff = "–" if ours_mean is None or paper_value is None else f"{ours_mean - paper_value:+.3f}"
        setting = p.get("setting", r.name)
        if r.tags.get("selection") == "oracle":
            setting += " -- ORACLE: tuned on the test labels, not ours"
        rows.append((p.get("source", "?"), setting, metric,
                     fmt_mean_std(mean=paper_value, std=paper_std) if paper_value is not None else "figure only",
                     fmt_mean_std(mean=ours_mean, std=ours_std), diff,
                     f"`python -m plcore experiment={r.preset}`" if r.preset else r.tags.get("overrides", "")))
    if not rows:
        return ""
    rows.sort(key=lambda t: (t[0], t[1]))
    lines = ["| paper | setting | metric | paper | ours | ours - paper | command |",
             "|---|---|---|---|---|---|---|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


#: the docs' page of the reproduction table (written there only where a command names it)
_PAGE = "docs/results/reproduction.md"


def reproduction_page(runs: Sequence[RunRecord]) -> str:
    table = reproduction_table(runs)
    if not table:
        return ""
    stamp = time.strftime("%Y-%m-%d %H:%M", time.localtime())
    return ("# Reproduction report\n\n"
            f"Generated {stamp} by `python -m plcore -m 'experiment=glob(paper_*)' report=reproduction "
            f"hydra.callbacks.report.output={_PAGE}` (or rebuilt from its MLflow database with `python -m plcore "
            f"report --kind reproduction --sweep-dir <sweep dir> --out {_PAGE} --overwrite`). One row per preset; "
            "the paper's figure is as printed "
            "(mean ± std), ours is mean ± std over the same protocol's folds / partitions.\n\n"
            + table
            + "\nThe method pages under `docs/results/` (plknn, cenda, saute, online, plc, aknn) discuss every "
              "difference; figures that the papers give only as curves (online learning, SAUTE's feature-count "
              "curve, PL A-kNN) are regenerated by the benchmark scripts named there. The CENDA paper's comparison "
              "table (IPAL, PL-SVM, PL-ECOC, DELIN) is `python -m plcore experiment=cenda_table` (reducers fitted on "
              "the training folds) and `experiment=cenda_table_transductive` (fitted on all rows), written to "
              "`docs/results/cenda_table.md` and `docs/results/cenda_table_transductive.md` with "
              "`hydra.callbacks.report.output=` naming the page.\n")


def _resolve(writer: str | Callable) -> Callable:
    """A writer: a callable, a name registered through ``plcore_report_writers``, or a dotted path."""
    if callable(writer):
        return writer
    from plcore.registry import get_registry

    writers = get_registry().report_writers
    if writer in writers:
        return get_registry().report_writer(writer)
    if "." not in writer:
        raise ConfigError(f"unknown report writer {writer!r}; available: {', '.join(sorted(writers))} "
                          "(or a dotted path to f(runs) -> markdown)")
    module, _, name = writer.rpartition(".")
    return getattr(importlib.import_module(module), name)


def write_report(runs: Sequence[RunRecord], output: str | Path, writer: str | Callable = "reproduction",
                 sweep_dir: str | None = None) -> Path | None:
    """Render ``runs`` with ``writer`` (``"reproduction"`` or a dotted path to ``f(runs) -> str``) into ``output``.

    Writes nothing (and returns None) when the writer has nothing to report.
    """
    text = _resolve(writer)(runs)
    if not text:
        return None
    text = text.rstrip("\n") + "\n\n" + provenance_line(runs, sweep_dir)
    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text)
    return output


#: the headline summary metric of each protocol, with its spread
_HEADLINES = (("accuracy_mean", "accuracy_std"), ("mistake_rate_final_mean", "mistake_rate_final_std"),
              ("acc_mean", "acc_std"), ("covering_rate_mean", "covering_rate_std"))


def summary_page(runs: Sequence[RunRecord]) -> str:
    """Any sweep's runs as a markdown table (the default writer of ``python -m plcore report``):
    run name, the overrides that made it, its status, and its headline metric (mean +- std
    over the protocol's steps)."""
    if not runs:
        return ""
    lines = ["| run | overrides | status | metric | mean +- std |", "| --- | --- | --- | --- | --- |"]
    for r in sorted(runs, key=lambda r: (r.name, r.tags.get("overrides", ""))):
        key, spread = next(((k, s) for k, s in _HEADLINES if k in r.metrics), (None, None))
        value = fmt_mean_std(mean=r.metrics[key], std=r.metrics.get(spread, float("nan")), digits=4) if key else "-"
        lines.append(f"| {r.name} | `{r.tags.get('overrides', '') or '(none)'}` | {r.status} | "
                     f"{key.rsplit('_', 1)[0] if key else '-'} | {value} |")
    return "# Sweep summary\n\n" + "\n".join(lines) + "\n"


def sweep_table(runs: Sequence[RunRecord], jobs: Sequence = (),
                metric_keys=("accuracy_mean", "mistake_rate_final_mean", "acc_mean", "cr_accuracy_mean",
                             "covering_rate_mean")) -> str:
    """A plain-text table of a sweep, in job order: one row per job (:class:`~plcore.run.runs.JobRecord`)
    with its run's name, overrides, status and headline metric -- REUSED for a run that
    ``resume=true`` reused, ``(no run)`` for a job that failed before its run existed -- then any
    run of the sweep that no job record names (a sweep from before job records)."""
    by_id = {r.run_id: r for r in runs}

    def row(run, overrides, status):
        key = next((k for k in metric_keys if k in run.metrics), None) if run is not None else None
        return (run.name if run is not None else "(no run)", overrides, status,
                f"{key}={run.metrics[key]:.4f}" if key else "-")

    rows = [("run", "overrides", "status", "metric")]
    for j in jobs:
        run = by_id.pop(j.run_id, None)
        status = j.status if j.status in ("REUSED", "MISSING") or run is None else run.status
        rows.append(row(run, " ".join(j.overrides), status))
    for r in runs:
        if r.run_id in by_id:
            rows.append(row(r, r.tags.get("overrides", ""), r.status))
    widths = [max(len(str(row[i])) for row in rows) for i in range(4)]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows)


def main(argv=None) -> int:
    """``python -m plcore report``: rebuild a report from a tracking database."""
    ap = argparse.ArgumentParser(prog="python -m plcore report", description=main.__doc__)
    ap.add_argument("--tracking-uri", default=None,
                    help="default: $MLFLOW_TRACKING_URI or sqlite:///mlflow.db in the current directory")
    ap.add_argument("--experiment", default="plcore", help="MLflow experiment name (default: plcore)")
    ap.add_argument("--sweep-dir", default=None, help="only runs of this Hydra sweep directory")
    ap.add_argument("--kind", "--writer", dest="kind", default="summary",
                    help="comparison (methods x data sets: tables, tests, critical-difference diagram), summary "
                         "(any sweep's runs), reproduction, plench_table (protocol=plench runs), cenda_table, ... "
                         "(a registered writer) or a dotted path "
                         "to f(runs) -> markdown")
    ap.add_argument("--out", default=None,
                    help="output markdown file (default: plcore-report.md here; comparison.md for --kind comparison)")
    ap.add_argument("--overwrite", action="store_true", help="replace the output even if git tracks it")
    cmp = ap.add_argument_group("--kind comparison")
    cmp.add_argument("--reference", default=None,
                     help="the method whose win/tie/loss against each other is counted, by option or printed name "
                          "(default: the best-ranked)")
    cmp.add_argument("--error", choices=("std", "sem"), default="std",
                     help="spread shown beside each mean: std over the splits or its standard error (sem)")
    cmp.add_argument("--alpha", type=float, default=0.05, help="level of the t-tests and the Nemenyi test")
    cmp.add_argument("--title", default=None, help="the page's title")
    cmp.add_argument("--no-log", action="store_true", help="do not log the files to a parent run in MLflow")
    args = ap.parse_args(argv)
    import os

    out = Path(args.out or ("comparison.md" if args.kind == "comparison" else "plcore-report.md"))
    if out.exists() and not args.overwrite and _tracked_by_git(out):
        raise ConfigError(f"{out} is tracked by git: pass --overwrite to replace it, or --out another file")
    uri = args.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{Path.cwd() / 'mlflow.db'}"
    runs = load_runs(uri, experiment_name=args.experiment, sweep_dir=args.sweep_dir,
                     statuses=("FINISHED", "FAILED", "KILLED") if args.kind == "summary" else ("FINISHED",))
    if args.kind == "comparison":
        return _comparison(args, runs, out, uri)
    path = write_report(runs, out, args.kind, sweep_dir=args.sweep_dir)
    if path is None:
        what = "no matching runs" if not runs else f"{len(runs)} run(s), none the {args.kind!r} writer reports"
        print(f"nothing to report: {what} in {uri} (experiment {args.experiment!r})")
        return 1
    print(f"report written to {path} ({len(runs)} runs)")
    return 0


def _comparison(args, runs, out: Path, uri: str) -> int:
    from plcore.run.comparison_report import command_line, comparison_report, log_parent_run, not_compared
    from plcore.run.runs import read_job_records

    failed = load_runs(uri, experiment_name=args.experiment, sweep_dir=args.sweep_dir, statuses=("FAILED", "KILLED"))
    jobs = read_job_records(args.sweep_dir) if args.sweep_dir and Path(args.sweep_dir).is_dir() else []
    report = comparison_report(runs, out, reference=args.reference, error=args.error, alpha=args.alpha,
                               title=args.title, command=command_line(), sweep_dir=args.sweep_dir,
                               experiment=args.experiment, missing=not_compared(failed, jobs, runs))
    if report is None:
        what = "no finished runs" if not runs else f"none of {len(runs)} finished run(s) has a per-split metric"
        print(f"nothing to compare: {what} in {uri} (experiment {args.experiment!r})")
        return 1
    print(report.console_text())
    if not args.no_log:
        of = args.sweep_dir or f"experiment {args.experiment}"
        parent = log_parent_run(uri, args.experiment, report, of)
        if parent:
            print(f"logged to the MLflow parent run {parent} of the compared runs")
    return 0


def _tracked_by_git(path: Path) -> bool:
    """Whether ``path`` is a file git tracks (False where git or a checkout is missing)."""
    import subprocess

    try:
        proc = subprocess.run(["git", "ls-files", "--error-unmatch", path.name], cwd=path.resolve().parent,
                              capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0
