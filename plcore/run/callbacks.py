"""The Hydra callbacks of a sweep (the primary config's ``hydra.callbacks``): the MLflow store
prepared once before the jobs, a summary table at the end, and the opt-in reports
(``report=reproduction`` or a preset's writer; ``report=comparison``)."""

from __future__ import annotations

import logging

from hydra.experimental.callback import Callback

from plcore.run.report import sweep_table, write_report
from plcore.run.runs import load_runs, read_job_records
from plcore.tracking import prepare_store

log = logging.getLogger(__name__)

__all__ = ["ComparisonCallback", "PrepareTrackingCallback", "SweepSummaryCallback", "ReportCallback",
           "failed_jobs_of_last_sweep"]

#: jobs that failed in the last sweep this process ran (``python -m plcore`` exits 1 when any did)
_FAILED_JOBS: list = []


def failed_jobs_of_last_sweep() -> list:
    """The :class:`~plcore.run.runs.JobRecord` of every job that failed in the sweep that this
    process last summarised (:class:`SweepSummaryCallback`); empty when all finished."""
    return list(_FAILED_JOBS)


class PrepareTrackingCallback(Callback):
    """Hydra callback: create the MLflow database/experiment once before a multirun starts."""

    def on_multirun_start(self, config, **kwargs):
        try:
            from hydra.core.hydra_config import HydraConfig

            HydraConfig.instance().set_config(config)  # lets ${hydra:runtime.cwd} resolve
            tcfg = config.tracking
            if tcfg.get("enabled", False):
                prepare_store(tcfg.tracking_uri, tcfg.get("experiment_name") or "plcore")
        except Exception as err:  # noqa: BLE001 - the jobs will report it properly
            log.warning("could not prepare the MLflow store: %s", err)


def _sweep_runs(config, statuses=("FINISHED",)):
    """The runs of the sweep that just ended (``hydra.sweep.dir`` tag, and the runs its jobs reused
    with ``resume=true``), or None without tracking."""
    from hydra.core.hydra_config import HydraConfig

    tcfg = config.get("tracking", {})
    if not tcfg or not tcfg.get("enabled", False):
        return None, None, None
    HydraConfig.instance().set_config(config)  # lets ${hydra:runtime.cwd} resolve
    sweep_dir = str(config.hydra.sweep.dir)
    reused = [j.run_id for j in read_job_records(sweep_dir) if j.status == "REUSED" and j.run_id]
    runs = load_runs(tcfg.tracking_uri, experiment_name=tcfg.get("experiment_name") or "plcore",
                     sweep_dir=sweep_dir, statuses=statuses, run_ids=reused)
    return runs, sweep_dir, tcfg.tracking_uri


class ComparisonCallback(Callback):
    """Hydra callback: at the end of a multirun, compare THIS sweep's methods over its data sets
    (``report=comparison``; :mod:`plcore.run.comparison_report`): a markdown and a LaTeX table,
    the tests and the critical-difference diagram, written to ``output`` (default
    ``<sweep dir>/comparison.md``) and logged as artifacts of the sweep's parent run.

    ``reference``: the method whose win/tie/loss against every other is counted; ``error``:
    ``std`` or ``sem`` (standard error); ``alpha``: the level of every test.
    """

    def __init__(self, output: str | None = None, reference: str | None = None, error: str = "std",
                 alpha: float = 0.05, title: str | None = None):
        self.output, self.reference, self.error, self.alpha, self.title = output, reference, error, alpha, title

    def on_multirun_end(self, config, **kwargs):
        from pathlib import Path

        from plcore.run.comparison_report import command_line, comparison_report, log_parent_run, not_compared

        try:
            runs, sweep_dir, uri = _sweep_runs(config)
            if runs is None:
                print("no comparison: tracking is off (tracking=none)")
                return
            failed, _, _ = _sweep_runs(config, statuses=("FAILED", "KILLED"))
            missing = not_compared(failed, read_job_records(sweep_dir), runs)
            output = Path(self.output or Path(sweep_dir) / "comparison.md")
            experiment = config.tracking.get("experiment_name") or "plcore"
            report = comparison_report(runs, output, reference=self.reference, error=self.error, alpha=self.alpha,
                                       title=self.title, command=command_line(), sweep_dir=sweep_dir,
                                       experiment=experiment, missing=missing)
        except Exception as err:  # noqa: BLE001 - a report must not turn a finished sweep into a failure
            log.warning("could not write the comparison: %s", err)
            print(f"warning: could not write the comparison: {err}")
            return
        if report is None:
            print(f"no comparison: none of the sweep's {len(runs)} finished run(s) has a per-split metric")
            return
        try:
            parent = log_parent_run(uri, experiment, report, sweep_dir)
        except Exception as err:  # noqa: BLE001 - the files are written; only MLflow missed them
            log.warning("could not log the comparison to MLflow: %s", err)
            parent = None
            print(f"warning: the comparison is written but could not be logged to MLflow: {err}")
        print("\n" + report.console_text())
        if parent:
            print(f"logged to the MLflow parent run {parent} of the sweep's runs ({uri})")


class ReportCallback(Callback):
    """Hydra callback: at the end of a multirun, write a report of THIS sweep's runs.

    Opt-in: ``report=reproduction`` (the reproduction table, written when the sweep ran
    presets with a ``paper`` block) or a preset that sets it (``experiment=cenda_table``).
    ``writer`` is a registered writer name or a dotted path; ``output`` is relative to the
    launch directory (default: ``reproduction.md`` there; a page under ``docs/`` only where a
    command names it). The page ends with the sweep and the commit its runs came from.
    """

    def __init__(self, output: str = "reproduction.md", writer: str = "reproduction"):
        self.output = output
        self.writer = writer

    def on_multirun_end(self, config, **kwargs):
        try:
            runs, sweep_dir, _ = _sweep_runs(config)
            if runs is None:
                return
            path = write_report(runs, self.output, self.writer, sweep_dir=sweep_dir)
        except Exception as err:  # noqa: BLE001 - a report must not turn a finished sweep into a failure
            log.warning("could not write the report %s: %s", self.output, err)
            print(f"warning: could not write the report {self.output}: {err}")
            return
        if path is not None:
            print(f"report written to {path}")


class SweepSummaryCallback(Callback):
    """Hydra callback: a sweep ends with a table of its jobs -- every run, reused run and job that
    failed before its run existed -- a line naming each failed job, and the command to browse the
    runs. ``python -m plcore`` then exits 1 if a job failed (:func:`failed_jobs_of_last_sweep`)."""

    def on_multirun_end(self, config, **kwargs):
        from hydra.core.hydra_config import HydraConfig

        _FAILED_JOBS.clear()
        try:
            HydraConfig.instance().set_config(config)
            sweep_dir = str(config.hydra.sweep.dir)
            jobs = read_job_records(sweep_dir)
            _FAILED_JOBS.extend(j for j in jobs if j.failed)
            runs, _, uri = _sweep_runs(config, statuses=())
        except Exception as err:  # noqa: BLE001 - a summary must not fail a finished sweep
            log.warning("could not summarise the sweep: %s", err)
            print(f"warning: could not summarise the sweep: {err}")
            return
        if not runs and not jobs:
            return
        print(f"\nsweep {sweep_dir}: {_counts(jobs, runs)}\n{sweep_table(runs or [], jobs)}", flush=True)
        for j in _FAILED_JOBS:
            where = f" (run {j.run_id})" if j.run_id else " (before its run existed)"
            print(f"job {j.num} {j.status}{where}: {' '.join(j.overrides) or '(no overrides)'}: {j.error}", flush=True)
        if uri:
            print(f"browse them: mlflow ui --backend-store-uri {uri}", flush=True)


def _counts(jobs, runs) -> str:
    """``6 job(s): 4 run, 1 reused, 1 failed`` (or the number of runs where the jobs left no records)."""
    if not jobs:
        return f"{len(runs or [])} run(s)"
    count = {s: sum(j.status == s for j in jobs) for s in ("FINISHED", "REUSED")}
    failed = sum(j.failed for j in jobs)
    parts = [f"{count['FINISHED']} ran"] + ([f"{count['REUSED']} reused (resume=true)"] if count["REUSED"] else [])
    parts += [f"{failed} failed"] if failed else []
    return f"{len(jobs)} job(s): {', '.join(parts)}"
