"""Where the seconds of MLflow tracking go in one run, phase by phase (issue 44, item 4).

Run from the repository root (nothing else running)::

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/tracking_cost.py [--rounds 5] [--writes]

Each round is a fresh interpreter (a run's own process pays every phase once) that does what a
tracked ``python -m plcore`` run does beyond an untracked one, timing each phase in order, on an
existing SQLite store in a temporary folder (created by one untimed round first):

1. ``import mlflow`` (the package: its ``__init__`` imports much of MLflow);
2. the SQLAlchemy store's module (``mlflow.store.tracking.sqlalchemy_store``: SQLAlchemy, the ORM
   models, alembic);
3. the store opened and checked (``MlflowClient(...).get_experiment_by_name``: engine, schema check);
4. a run created, its ~60 parameters, tags and metrics logged in batches, and ended;
5. the fitted pipeline (PL-KNN on digits) saved as an MLflow model (skops, signature, pinned
   requirements: ``plcore.tracking.models.save_model``) and uploaded (``log_saved_model``).

Prints the median and best of each phase over the rounds and their total.

``--writes`` times instead what a run's ten per-fold writes cost its process (one batch of 5
metrics per fold, 20 ms of work between them, then the run ended), with MLflow's synchronous
``log_batch`` (plcore's way) and with its asynchronous logging (``synchronous=False``; the end of
the run waits for the queue), interleaved over the rounds in one process: the seconds the writes
block the run, the seconds its end waits, and the total.

``--single`` times what tracking costs one command (issue 55, item 5; goal 1.0 s): the default
experiment with ``protocol.n_splits=3`` (``python -m plcore protocol.n_splits=3 progress=false``),
tracked (an existing SQLite store) and with ``tracking=none``, each a fresh process, interleaved
over the rounds (after one untimed round that creates the store), best and median. With
``--before PATH`` (a checkout of an earlier commit, e.g. ``git worktree add ../before <ref>``) the
same two commands of that checkout (``PYTHONPATH=PATH``; the installed plugins serve both) run in
the same rounds, so that the table shows the cost before and after on the same machine in one run.
A last row runs the untracked command and, at the same time, a second process that does the
phases above (every import and write of the tracked run): the wall time of both, minus the
untracked command alone, is what tracking would cost one command if a helper process did it
alongside the run's work (a floor that plcore does not build: docs/performance.md).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_CHILD = r"""
import json, sys, time
t = {}
t0 = time.perf_counter()
if len(sys.argv) > 2:  # a helper process: the fitted pipeline is handed to it (a pickle file)
    import pickle
    with open(sys.argv[2], "rb") as fh:
        pipe, X = pickle.load(fh)
else:
    from sklearn.datasets import load_digits
    from plcore import PlKnnLearner
    from plcore.datasets.bags import UniformBags
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    X, y = load_digits(return_X_y=True)
    S = UniformBags(r=3).generate(y, random_state=0)
    pipe = make_pipeline(StandardScaler(), PlKnnLearner()).fit(X, S)
uri = sys.argv[1]
t1 = time.perf_counter()
import mlflow
t["import mlflow"] = time.perf_counter() - t1
t1 = time.perf_counter()
import mlflow.store.tracking.sqlalchemy_store  # noqa: F401
t["import the SQLAlchemy store"] = time.perf_counter() - t1
t1 = time.perf_counter()
from mlflow.tracking import MlflowClient
client = MlflowClient(tracking_uri=uri)
exp = client.get_experiment_by_name("cost") or client.get_experiment(client.create_experiment("cost"))
t["open and check the store"] = time.perf_counter() - t1
t1 = time.perf_counter()
from mlflow.entities import Metric, Param, RunTag
run = client.create_run(exp.experiment_id, tags={"mlflow.runName": "cost"})
now = int(time.time() * 1000)
params = [Param(f"group.param_{i}", str(i)) for i in range(60)]
client.log_batch(run.info.run_id, params=params, tags=[RunTag(f"tag_{i}", "x") for i in range(10)])
client.log_batch(run.info.run_id, metrics=[Metric(f"fold/m_{i}", 0.5, now, s) for i in range(4) for s in range(10)])
client.set_terminated(run.info.run_id, "FINISHED")
t["create, log and end the run"] = time.perf_counter() - t1
t1 = time.perf_counter()
from plcore.run.protocols._shared import ProtocolResult
from plcore.tracking import plots
result = ProtocolResult("kfold", steps=[{"step": i, "accuracy": 0.9 + 0.01 * i} for i in range(3)])
for path, fig in plots.figures_for(result).items():
    client.log_figure(run.info.run_id, fig, path)
t["import matplotlib, draw and log the per-fold plot"] = time.perf_counter() - t1
t1 = time.perf_counter()
import tempfile, pathlib
from plcore.registry import model_packages, pip_requirements
from plcore.tracking.models import log_saved_model, save_model
with tempfile.TemporaryDirectory() as d:
    model = {"pipeline": pipe, "X_example": X[:5], "classes": list(range(10)), "requirements": pip_requirements(),
             "packages": model_packages()}
    save_model(model, pathlib.Path(d) / "model")
    t["save the model (skops, signature)"] = time.perf_counter() - t1
    t1 = time.perf_counter()
    log_saved_model(client, run.info.run_id, pathlib.Path(d) / "model")
    t["upload the model"] = time.perf_counter() - t1
print(json.dumps(t))
"""


def rounds(n: int) -> dict[str, list[float]]:
    """Phase -> seconds of each timed round (after one untimed round that creates the store)."""
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    out: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="plcore-tracking-cost-") as tmp:
        uri = f"sqlite:///{Path(tmp) / 'mlflow.db'}"
        for i in range(n + 1):
            proc = subprocess.run([sys.executable, "-c", _CHILD, uri], capture_output=True, text=True, env=env,
                                  cwd=tmp, check=True)
            if i:
                for phase, seconds in json.loads(proc.stdout.strip().splitlines()[-1]).items():
                    out.setdefault(phase, []).append(seconds)
    return out


def fold_writes(n: int) -> dict[str, list[tuple[float, float, float]]]:
    """``{"synchronous" | "asynchronous": [(blocked, end, total) seconds, ...]}`` of ``n`` rounds
    (after one untimed round of each), each a run with ten per-fold writes."""
    import logging

    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    logging.getLogger("mlflow").setLevel(logging.ERROR)
    out: dict[str, list[tuple[float, float, float]]] = {"synchronous": [], "asynchronous": []}
    with tempfile.TemporaryDirectory(prefix="plcore-tracking-writes-") as tmp:
        client = MlflowClient(f"sqlite:///{Path(tmp) / 'mlflow.db'}")
        experiment = client.create_experiment("writes")

        def one(synchronous: bool) -> tuple[float, float, float]:
            run_id = client.create_run(experiment).info.run_id
            start, blocked = time.perf_counter(), 0.0
            for fold in range(10):
                time.sleep(0.02)  # the fold's work
                t = time.perf_counter()
                now = int(time.time() * 1000)
                client.log_batch(run_id, metrics=[Metric(f"fold/m_{j}", 0.5, now, fold) for j in range(5)],
                                 synchronous=synchronous)
                blocked += time.perf_counter() - t
            t = time.perf_counter()
            client.set_terminated(run_id)  # waits for the asynchronous queue
            end = time.perf_counter() - t
            if len(client.get_metric_history(run_id, "fold/m_0")) != 10:
                raise RuntimeError("a fold's metrics were not written")
            return blocked, end, time.perf_counter() - start

        for i in range(n + 1):
            for label, synchronous in (("synchronous", True), ("asynchronous", False)):
                timing = one(synchronous)
                if i:
                    out[label].append(timing)
    return out


#: the single command of ``--single``: the default experiment, 3 folds
SINGLE = ["-m", "plcore", "protocol.n_splits=3", "progress=false"]


def _timed(cmd, cwd, env) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def _fitted_pipeline(folder) -> str:
    """A pickle of the default run's refitted pipeline (PL-KNN on digits) and its rows: what a
    helper process would be handed."""
    import pickle

    from sklearn.datasets import load_digits
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from plcore import PlKnnLearner
    from plcore.datasets.bags import UniformBags

    X, y = load_digits(return_X_y=True)
    pipe = make_pipeline(StandardScaler(), PlKnnLearner()).fit(X, UniformBags(r=3).generate(y, random_state=0))
    path = Path(folder) / "pipeline.pkl"
    path.write_bytes(pickle.dumps((pipe, X)))
    return str(path)


def _alongside(cwd, env, uri, pipeline) -> float:
    """Wall seconds of the untracked command while a second process, started with it and handed
    the fitted pipeline, does every phase of a tracked run (imports, writes, plot, model)."""
    t = time.perf_counter()
    helper = subprocess.Popen([sys.executable, "-c", _CHILD, uri, pipeline], cwd=cwd, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.run([sys.executable, *SINGLE, "tracking=none"], cwd=cwd, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if helper.wait() != 0:
        raise RuntimeError("the helper process failed")
    return time.perf_counter() - t


def single(n: int, before: str | None) -> dict[str, list[float]]:
    """Variant -> wall seconds of each timed round (after one untimed round of each)."""
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    checkouts = {"this checkout": env}
    if before:
        checkouts = {"before": dict(env, PYTHONPATH=str(Path(before).resolve())), "after": env}
    out: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="plcore-single-") as tmp:
        uri, pipeline = f"sqlite:///{Path(tmp) / 'helper.db'}", _fitted_pipeline(tmp)
        for i in range(n + 1):
            for label, cenv in checkouts.items():
                folder = Path(tmp) / label.replace(" ", "_")
                folder.mkdir(exist_ok=True)
                for variant, extra in (("tracked", []), ("tracking=none", ["tracking=none"])):
                    seconds = _timed([sys.executable, *SINGLE, *extra], folder, cenv)
                    if i:
                        out.setdefault(f"{label}: {variant}", []).append(seconds)
            seconds = _alongside(tmp, env, uri, pipeline)
            if i:
                out.setdefault("tracking=none with a helper process alongside", []).append(seconds)
    return out


def print_single(times: dict, n: int) -> None:
    print(f"`python {' '.join(SINGLE)}` (digits, PL-KNN, 3 folds), fresh processes, {n} interleaved rounds after one "
          f"untimed round, existing SQLite store, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}\n")
    print("| command | best (s) | median (s) | tracking adds (best, s) |")
    print("|---|---|---|---|")
    labels = sorted({k.split(": ")[0] for k in times if ": " in k}, key=lambda k: k != "before")
    for label in labels:
        none = min(times[f"{label}: tracking=none"])
        for variant in ("tracking=none", "tracked"):
            ts = times[f"{label}: {variant}"]
            adds = f"**{min(ts) - none:.2f}**" if variant == "tracked" else "-"
            print(f"| {label}, {variant} | {min(ts):.2f} | {statistics.median(ts):.2f} | {adds} |")
    ts = times["tracking=none with a helper process alongside"]
    none = min(times[f"{labels[-1]}: tracking=none"])
    print(f"| tracking=none while a helper process, handed the fitted pipeline, does every phase of a tracked run "
          f"| {min(ts):.2f} | {statistics.median(ts):.2f} | {min(ts) - none:.2f} |")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--writes", action="store_true", help="time ten per-fold writes, synchronous and asynchronous")
    ap.add_argument("--single", action="store_true", help="what tracking costs one command, tracked vs tracking=none")
    ap.add_argument("--before", default=None, help="with --single: a checkout of an earlier commit, timed alongside")
    args = ap.parse_args(argv)
    if args.single:
        print_single(single(args.rounds, args.before), args.rounds)
        return 0
    if args.writes:
        print(f"MLflow {__import__('mlflow').__version__}, ten per-fold writes of one run, existing SQLite store, "
              f"{args.rounds} interleaved rounds (medians; 0.20 s of each total is the folds' work)\n")
        print("| log_batch | writes block the run (s) | the run's end waits (s) | total (s) |")
        print("|---|---|---|---|")
        for label, ts in fold_writes(args.rounds).items():
            print(f"| {label} | " + " | ".join(f"{statistics.median(t[k] for t in ts):.3f}" for k in range(3)) + " |")
        return 0
    times = rounds(args.rounds)
    print(f"MLflow {__import__('mlflow').__version__}, {args.rounds} fresh interpreters, existing SQLite store, "
          f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}\n")
    print("| phase | median (s) | best (s) |")
    print("|---|---|---|")
    for phase, ts in times.items():
        print(f"| {phase} | {statistics.median(ts):.2f} | {min(ts):.2f} |")
    totals = [sum(ts[i] for ts in times.values()) for i in range(args.rounds)]
    print(f"| **total** | {statistics.median(totals):.2f} | {min(totals):.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
