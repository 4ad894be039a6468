"""Start-up and tracking-overhead benchmark (issue 19, first two rows of its table; issue 44, item 4).

Run from the repository root (``OMP_NUM_THREADS=1`` recommended on a shared machine)::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/startup.py [--quick]

It is also one of the modules of ``benchmarks/run_all.py`` (through :func:`table_rows`).

What is measured
----------------
* **Start-up**: the wall time of ``python -m plcore list``, ``python -m plcore --help`` and
  ``python -m plcore --cfg job``, each against ``python -c "import sklearn"``. Every timing
  is a fresh subprocess of this interpreter (``sys.executable``), output captured. The four
  commands run interleaved, round-robin (7 rounds, 3 with ``--quick``, after one untimed
  warm-up round that fills the file cache), so that load changes on a shared machine hit
  them alike. Ratio = best plcore time / best ``import sklearn`` time of the same run;
  goal <= 1.5x.
* **Tracking overhead**: the default experiment ``python -m plcore`` (digits, 10-fold PL-KNN)
  with the default tracking (MLflow on ``sqlite:///<cwd>/mlflow.db``, written by the run's
  own process) on an *existing* database, minus the same run with ``tracking=none``. The
  database is created by one untimed run first (the one-time creation is excluded); then
  the two variants run interleaved (4 rounds, 2 with ``--quick``). Ratio = best tracked time
  - best untracked time, in seconds (the seconds tracking adds to one run). No goal: the
  former goal (<= 1.5 s) was withdrawn with the resident writer it asked for (docs/runs.md).
* **Tracking per job of a sweep**: a sweep runs its jobs in one process (Hydra's basic
  launcher; joblib's workers likewise run many jobs each), so MLflow's imports and the store's
  set-up are paid once per process, not per job. ``python -m plcore -m seed=0`` (1 job) and
  ``seed=0,...,N`` (N + 1 jobs) of the default experiment, each tracked and with
  ``tracking=none``, interleaved (3 rounds, 2 with ``--quick``; N = 5): the seconds one more job
  costs, ``(T(N+1 jobs) - T(1 job)) / N`` from the best times, tracked minus untracked. What a
  sweep pays once (the store's check, the comparison report at its end) cancels out. Goal <=
  1.0 s (issue 44: tracking's cost per run).

Every command runs in a fresh temporary directory (``hydra.run.dir`` inside it, the MLflow
database and ``mlruns/`` there too) with ``MLFLOW_TRACKING_URI`` removed from the
environment, so nothing is written to the repository and no shared tracking server is hit.
Best (minimum) times are the ratios' basis: on a loaded machine noise only adds time; the
medians are printed next to them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: the plcore commands of the start-up row, by label
STARTUP_COMMANDS = {
    "python -m plcore list": ["-m", "plcore", "list"],
    "python -m plcore --help": ["-m", "plcore", "--help"],
    "python -m plcore --cfg job": ["-m", "plcore", "--cfg", "job"],
}
BASELINE_LABEL = 'python -c "import sklearn"'
BASELINE = ["-c", "import sklearn"]

STARTUP_GOAL = 1.5  # x import sklearn


def _env() -> dict:
    env = dict(os.environ)
    env.pop("MLFLOW_TRACKING_URI", None)  # the default sqlite file in the temporary cwd
    env.pop("HYDRA_FULL_ERROR", None)
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("PLCORE_DATA_HOME", str(REPO.parent / "shared" / "datasets"))
    return env


def time_command(args: list[str], cwd: Path, timeout: float = 600, env_extra: dict | None = None) -> float:
    """Wall seconds of ``python ARGS`` in a fresh subprocess; raises with the error's last line."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, *args], cwd=cwd, env={**_env(), **(env_extra or {})},
                          capture_output=True, text=True, timeout=timeout)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        lines = [line for line in (proc.stderr + "\n" + proc.stdout).splitlines()
                 if line.strip() and "HYDRA_FULL_ERROR" not in line]  # not Hydra's hint
        tail = lines[-1] if lines else "(no output)"
        raise RuntimeError(f"`python {' '.join(args)}` exited {proc.returncode}: {tail}")
    return elapsed


def _round_robin(commands: dict[str, list[str]], repeats: int, cwd: Path, warmup: bool = True,
                 log=None) -> dict[str, list[float]]:
    times = {label: [] for label in commands}
    for r in range(repeats + int(warmup)):
        for label, args in commands.items():
            t = time_command(args, cwd)
            if warmup and r == 0:
                continue
            times[label].append(t)
            if log:
                log(f"  round {r + int(not warmup)}/{repeats}: {label}: {t:.2f} s")
    return times


def measure_startup(repeats: int = 5, log=None) -> dict[str, list[float]]:
    """``{label: [seconds, ...]}`` for the baseline and the three plcore commands, interleaved."""
    commands = {BASELINE_LABEL: BASELINE, **STARTUP_COMMANDS}
    with tempfile.TemporaryDirectory(prefix="plcore-startup-") as tmp:
        return _round_robin(commands, repeats, Path(tmp), warmup=True, log=log)


def measure_tracking(repeats: int = 3, log=None) -> dict[str, list[float]]:
    """``{"tracking": [...], "none": [...], "create": [...]}``: the default run on an existing
    database and with ``tracking=none`` (after one untimed run that creates the database)."""
    with tempfile.TemporaryDirectory(prefix="plcore-tracking-") as tmp:
        return _measure_tracking(Path(tmp), repeats, log)


def _measure_tracking(tmp: Path, repeats: int, log) -> dict[str, list[float]]:
    def run_args(i: int, *extra: str) -> list[str]:
        return ["-m", "plcore", f"hydra.run.dir={tmp / 'outputs' / str(i)}", *extra]

    t_create = time_command(run_args(0), tmp)
    if log:
        log(f"  creating the database (excluded): {t_create:.2f} s")
    if not (tmp / "mlflow.db").exists():
        raise RuntimeError("the tracked run wrote no mlflow.db in its working directory")
    variants = (("tracking", ()), ("none", ("tracking=none",)))
    times = {label: [] for label, _ in variants}
    for r in range(repeats):
        for j, (label, extra) in enumerate(variants):
            t = time_command(run_args(1 + len(variants) * r + j, *extra), tmp)
            times[label].append(t)
            if log:
                log(f"  round {r + 1}/{repeats}: tracking={label}: {t:.2f} s")
    times["create"] = [t_create]
    return times


#: jobs of the long sweep beyond the first (the per-job row)
SWEEP_EXTRA_JOBS = 5
SWEEP_GOAL = 1.0  # s tracking adds to each job of a sweep
SWEEP_MEASURE = "seconds tracking adds to each further job of a sweep (`python -m plcore -m seed=...`)"


def measure_sweep_tracking(repeats: int = 3, extra_jobs: int = SWEEP_EXTRA_JOBS, log=None) -> dict[str, list[float]]:
    """``{"tracking 1", "tracking N+1", "none 1", "none N+1": [seconds, ...]}``: sweeps of the
    default run over 1 and ``extra_jobs + 1`` seeds, tracked (on a database created first,
    untimed) and with ``tracking=none``, interleaved."""
    with tempfile.TemporaryDirectory(prefix="plcore-sweep-tracking-") as tmp:
        tmp = Path(tmp)
        time_command(["-m", "plcore", f"hydra.run.dir={tmp / 'create'}"], tmp)
        seeds = {"1": "0", "N+1": ",".join(str(i) for i in range(extra_jobs + 1))}
        variants = [(f"{label} {size}", ["-m", "plcore", "-m", f"seed={seeds[size]}", *extra])
                    for label, extra in (("tracking", []), ("none", ["tracking=none"])) for size in seeds]
        times = {label: [] for label, _ in variants}
        for r in range(repeats):
            for j, (label, args) in enumerate(variants):
                t = time_command([*args, f"hydra.sweep.dir={tmp / 'sweeps' / f'{r}-{j}'}"], tmp)
                times[label].append(t)
                if log:
                    log(f"  round {r + 1}/{repeats}: {label} jobs: {t:.2f} s")
        times["extra_jobs"] = [float(extra_jobs)]
        return times


def sweep_tracking_row(times: dict[str, list[float]]) -> dict:
    n = times["extra_jobs"][0]
    per_job = {v: (min(times[f"{v} N+1"]) - min(times[f"{v} 1"])) / n for v in ("tracking", "none")}
    added = per_job["tracking"] - per_job["none"]
    return {
        "method": "tracking (MLflow, sqlite)",
        "measure": SWEEP_MEASURE,
        "ratio": added,
        "goal": f"<= {SWEEP_GOAL} s",
        "met": bool(added <= SWEEP_GOAL),
        "note": f"one more job: tracked {per_job['tracking']:.2f} s, tracking=none {per_job['none']:.2f} s; "
                f"sweeps of 1 / {int(n) + 1} jobs tracked best {min(times['tracking 1']):.2f} / "
                f"{min(times['tracking N+1']):.2f} s, untracked {min(times['none 1']):.2f} / "
                f"{min(times['none N+1']):.2f} s, {len(times['none 1'])} interleaved rounds",
    }


def _fmt(ts: list[float]) -> str:
    return f"best {min(ts):.2f} s, median {statistics.median(ts):.2f} s"


def startup_rows(times: dict[str, list[float]]) -> list[dict]:
    base = min(times[BASELINE_LABEL])
    rows = []
    for label in STARTUP_COMMANDS:
        ratio = min(times[label]) / base
        rows.append({
            "method": "start-up",
            "measure": f"`{label}` wall time / `{BASELINE_LABEL}`",
            "ratio": ratio,
            "goal": f"<= {STARTUP_GOAL}x",
            "met": bool(ratio <= STARTUP_GOAL),
            "note": f"plcore {_fmt(times[label])}; sklearn {_fmt(times[BASELINE_LABEL])}; "
                    f"{len(times[label])} interleaved rounds",
        })
    return rows


def tracking_row(times: dict[str, list[float]]) -> dict:
    added = min(times["tracking"]) - min(times["none"])
    return {
        "method": "tracking (MLflow, sqlite)",
        "measure": "seconds tracking adds to the default `python -m plcore` run, existing database",
        "ratio": added,
        "goal": "reported (goal withdrawn)",
        "met": True,
        "note": f"tracked {_fmt(times['tracking'])}; tracking=none {_fmt(times['none'])}; "
                f"database creation (excluded) {times['create'][0]:.2f} s",
    }


def _failed_row(method: str, measure: str, goal: str, exc: BaseException) -> dict:
    return {"method": method, "measure": measure, "ratio": float("nan"), "goal": goal, "met": False,
            "note": f"failed: {exc}"}


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def table_rows(quick: bool = True) -> list[dict]:
    """The rows of ``benchmarks/run_all.py``: three start-up rows and two tracking rows.

    A part that fails gives rows with a NaN ratio and the error in the note (run_all counts
    them as failures) instead of hiding the other part's rows.
    """
    repeats_startup, repeats_tracking, repeats_sweep = (3, 2, 2) if quick else (7, 4, 3)
    rows = []
    try:
        _log(f"startup: {repeats_startup} interleaved rounds")
        rows += startup_rows(measure_startup(repeats_startup, log=_log))
    except Exception as exc:  # noqa: BLE001 -- reported as rows
        rows += [_failed_row("start-up", f"`{label}` wall time / `{BASELINE_LABEL}`", f"<= {STARTUP_GOAL}x", exc)
                 for label in STARTUP_COMMANDS]
    try:
        _log(f"tracking overhead: {repeats_tracking} interleaved rounds")
        rows.append(tracking_row(measure_tracking(repeats_tracking, log=_log)))
    except Exception as exc:  # noqa: BLE001
        rows.append(_failed_row("tracking (MLflow, sqlite)",
                                "seconds tracking adds to the default `python -m plcore` run, existing database",
                                "reported (goal withdrawn)", exc))
    try:
        _log(f"tracking per job of a sweep: {repeats_sweep} interleaved rounds")
        rows.append(sweep_tracking_row(measure_sweep_tracking(repeats_sweep, log=_log)))
    except Exception as exc:  # noqa: BLE001
        rows.append(_failed_row("tracking (MLflow, sqlite)", SWEEP_MEASURE, f"<= {SWEEP_GOAL} s", exc))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="3 start-up rounds and 2 tracking rounds (default 7 and 4)")
    args = ap.parse_args(argv)
    rows = table_rows(quick=args.quick)
    print("| method | measure | ratio | goal | met | note |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['method']} | {r['measure']} | {r['ratio']:.2f} | {r['goal']} | {'yes' if r['met'] else 'no'} "
              f"| {r['note']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
