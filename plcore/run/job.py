"""The life of one Hydra job (as lightning-hydra-template's ``task_wrapper``): signals end the run
KILLED, warnings are shown once on one line, and every error becomes one line and an exit code."""

from __future__ import annotations

import os
import signal
import sys
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from plcore.exceptions import PlcoreError, RunInterrupted, one_line

__all__ = ["JobState", "in_multirun", "run_task"]


@contextmanager
def _signals_end_runs(job: "JobState"):
    """SIGTERM (``timeout``, Slurm, Kubernetes) and SIGINT (Ctrl-C) raise
    :class:`RunInterrupted`, so the run ends KILLED with what was done (main thread only).

    The signal is also remembered in ``job``: a raise that lands where it is swallowed (a
    finaliser, a library's ``except BaseException``) is raised again at the next step
    (:meth:`JobState.check`), so a signal is never lost.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def _raise(signum, frame):
        job.signum = signum
        raise RunInterrupted(signum)

    previous = {s: signal.signal(s, _raise) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def run_task(task, cfg) -> float | None:
    """One Hydra job: ``task(cfg, job)`` with signals ending the run KILLED and every error one line.

    A :class:`PlcoreError` prints one line and exits 2 (``PLCORE_FULL_ERROR=1``: traceback);
    SIGINT / SIGTERM print one line and exit with the signal's code (130 / 143); any other
    error (a component failing inside ``fit``) prints one line naming the FAILED run, whose
    traceback is its artifact, and exits 1 (``HYDRA_FULL_ERROR=1`` or ``PLCORE_FULL_ERROR=1``:
    the traceback here too).

    In a sweep every job leaves its outcome in its folder (:class:`~plcore.run.runs.JobRecord`),
    and a job that fails -- in ``fit`` or before its run exists -- prints its line and returns
    None, so that the other jobs run and the sweep ends with its table and reports, which name
    it (:class:`~plcore.run.callbacks.SweepSummaryCallback` sets the exit code). A signal still
    stops the whole sweep.
    """
    job = JobState()
    sweep = in_multirun()
    try:
        with _signals_end_runs(job), _warnings_once_in_one_line():
            value = task(cfg, job)
        _record(job, "REUSED" if job.reused else "FINISHED")
        return value
    except PlcoreError as err:
        if os.environ.get("PLCORE_FULL_ERROR"):
            raise
        print(f"error: {err}", file=sys.stderr, flush=True)
        if sweep:
            _record(job, "FAILED", str(err))
            return None
        sys.exit(2)
    except KeyboardInterrupt as err:
        signum = getattr(err, "signum", signal.SIGINT)
        name = signal.Signals(signum).name
        where = (f"; run {job.run_id} ended KILLED with {job.steps} step(s) logged" if job.run_id else "")
        print(f"interrupted by {name}{where}", file=sys.stderr, flush=True)
        _record(job, "KILLED", f"interrupted by {name}")
        sys.exit(128 + int(signum))
    except Exception as err:
        if os.environ.get("PLCORE_FULL_ERROR") or os.environ.get("HYDRA_FULL_ERROR") == "1":
            _record(job, "FAILED", one_line(err))
            raise
        where = (f"; run {job.run_id} ended FAILED with the traceback as its artifact error/traceback.txt"
                 if job.run_id else "")
        print(f"error: {one_line(err)}{where} (HYDRA_FULL_ERROR=1 prints the traceback)", file=sys.stderr,
              flush=True)
        if sweep:
            _record(job, "FAILED", one_line(err))
            return None
        sys.exit(1)


def _record(job: "JobState", status: str, error: str | None = None) -> None:
    """A sweep's job writes its outcome to its folder (nothing outside a sweep)."""
    if not in_multirun():
        return
    from hydra.core.hydra_config import HydraConfig

    from plcore.run.runs import JobRecord, write_job_record

    hc = HydraConfig.get()
    record = JobRecord(num=int(hc.job.num), overrides=list(hc.overrides.task), status=status,
                       run_id=job.reused or job.run_id, error=error)
    try:
        write_job_record(hc.runtime.output_dir, record)
    except OSError as err:  # the sweep's table then shows the job as MISSING
        print(f"warning: could not write the job's record in {hc.runtime.output_dir}: {err}", file=sys.stderr)


def in_multirun() -> bool:
    try:
        from hydra.core.hydra_config import HydraConfig

        mode = HydraConfig.get().mode
    except Exception:  # noqa: BLE001 - not inside a Hydra job
        return False
    return mode is not None and mode.name == "MULTIRUN"


@contextmanager
def _warnings_once_in_one_line():
    """During a job, each warning (category and text) is shown once, on one line
    (``warning: Category: text``): a method warning on every fold, or a library resetting
    Python's registry of shown warnings, does not repeat it."""
    import warnings

    seen = set()

    def show(message, category, filename, lineno, file=None, line=None):
        key = (category, str(message))
        if key not in seen:
            seen.add(key)
            text = one_line(str(message))
            print(f"warning: {category.__name__}: {text}", file=sys.stderr, flush=True)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


@dataclass
class JobState:
    """What one job has done so far, for the line printed when a signal stops it."""

    run: Any = None
    steps: int = 0
    signum: int | None = None  # a signal received (see _signals_end_runs)
    reused: str | None = None  # resume=true: the FINISHED run of the same settings and data, not run again
    reused_value: float | None = None  # its headline metric, the job's value

    @property
    def run_id(self) -> str | None:
        return getattr(self.run, "run_id", None)

    def check(self) -> None:
        """Raise :class:`RunInterrupted` again if a signal came and its first raise was lost."""
        if self.signum is not None:
            raise RunInterrupted(self.signum)

