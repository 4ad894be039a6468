"""One MLflow run (one Hydra job): opened, written and ended from the job's own process.

``tracking=mlflow`` (default) logs to ``$MLFLOW_TRACKING_URI`` or a SQLite file
``mlflow.db`` in the launch directory, experiment ``plcore``:

* params: the flattened resolved config;
* tags: ``plcore.version``, ``plugin.<distribution>`` versions, ``dataset.fingerprint``,
  ``dataset.noisy`` (data accepted as noisy partial labels), ``seed``, ``overrides``, Hydra job
  number and sweep directory;
* metrics: per step (fold / run / partition, ``step=``), the summary metrics and the audit of
  the candidate sets (``candidates.*``);
* artifacts: ``config.yaml`` (resolved), ``predictions.csv``, PNG plots under ``plots/``;
* on an exception the run ends ``FAILED`` with ``error/traceback.txt``.

``tracking=none`` logs nothing.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import math
import os
import time
import traceback
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from plcore.exceptions import TrackingError
from plcore.tracking.store import prepare_store, reap_orphans

log = logging.getLogger(__name__)

__all__ = ["flatten", "MlflowRun", "NullRun", "start_run", "open_run", "dataset_info", "log_model",
           "import_fallback"]

_PARAM_MAX = 6000


def flatten(node, prefix="") -> dict:
    """Flatten nested dicts/lists into ``{"a.b.0": value}``."""
    out = {}
    if isinstance(node, dict):
        items = node.items()
    elif isinstance(node, (list, tuple)):
        items = ((str(i), v) for i, v in enumerate(node))
    else:
        return {prefix: node}
    for k, v in items:
        key = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, (dict, list, tuple)) and len(v):
            out.update(flatten(v, key))
        else:
            out[key] = v
    return out


def _numeric(metrics: dict) -> dict:
    return {k: float(v) for k, v in metrics.items()
            if k != "step" and isinstance(v, (int, float, np.floating, np.integer))
            and not isinstance(v, bool) and math.isfinite(float(v))}


class NullRun:
    """Does nothing (``tracking=none``)."""

    run_id = None

    def log_step(self, step: dict):
        pass

    def log_dataset(self, dataset, audit=None):
        pass

    def set_tag(self, key, value):
        pass

    def log_result(self, result):
        pass


class MlflowRun:
    """An open MLflow run; use :func:`start_run`.

    A tracking call that fails (the server went away) does not stop the computation: the
    failure is remembered, later calls are skipped, and :func:`start_run` writes everything
    to a local fallback file at the end and reports where.
    """

    def __init__(self, client, run_id, tcfg, *, step_name: str = "step"):
        self.client = client
        self.run_id = run_id
        self.tcfg = tcfg
        self.step_name = step_name
        self.fault: BaseException | None = None
        self.steps: list = []
        self.result = None

    def _call(self, fn, *args, **kwargs):
        """``fn(*args, **kwargs)``, or nothing after a fault; ``fn`` may name a method of the
        MLflow client (resolved only while there is one)."""
        if self.fault is not None:
            return None
        try:
            return (getattr(self.client, fn) if isinstance(fn, str) else fn)(*args, **kwargs)
        except Exception as err:  # noqa: BLE001 - kept; reported once the work is done
            self.fault = err
            log.warning("tracking failed (%s); the run continues and is saved locally at the end", err)
            return None

    def log_step(self, step: dict, ts: int | None = None):
        """Per-step metrics, named ``<step name>/<metric>`` (``fold/accuracy``) so that no one
        reads one fold's value as the run's figure; nested selection's choices keep their
        name ``selected.<component>.<parameter>`` (step = the fold). ``ts``: when the step was
        done (ms since the epoch; default now)."""
        from mlflow.entities import Metric

        self.steps.append(dict(step))
        ts = _now_ms() if ts is None else ts
        metrics = [Metric(k if k.startswith("selected.") else f"{self.step_name}/{k}", v, ts, int(step.get("step", 0)))
                   for k, v in _numeric(step).items()]
        if metrics:
            self._call("log_batch", self.run_id, metrics=metrics)

    def log_text(self, text: str, path: str):
        self._call("log_text", self.run_id, text, path)

    def set_tag(self, key: str, value: str):
        self._call("set_tag", self.run_id, key, str(value))

    def log_dataset(self, dataset, audit=None):
        """The data set as an MLflow input (name, digest = our fingerprint, source); ``dataset``
        is a :class:`~plcore.data.PLDataset` or its :func:`dataset_info`. ``audit``: the run's
        candidate sets (:class:`~plcore.data.CandidateAudit`), logged as metrics
        ``candidates.*``; a data set accepted as noisy (``meta["noisy"]``) is tagged
        ``dataset.noisy``.

        Not essential to the run: a failure after retries is a warning, not a tracking fault.
        """
        if audit is not None:
            from mlflow.entities import Metric

            ts = _now_ms()
            self._call("log_batch", self.run_id, metrics=[Metric(k, float(v), ts, 0)
                                                          for k, v in audit.metrics().items()])
        if not isinstance(dataset, dict) and dataset.meta.get("noisy"):
            self.set_tag("dataset.noisy", "true")
        if self.fault is not None:
            return
        from mlflow.entities import Dataset, DatasetInput, InputTag

        info = dataset if isinstance(dataset, dict) else dataset_info(dataset)
        inputs = [DatasetInput(Dataset(schema=None, **info), tags=[InputTag("mlflow.data.context", "training")])]
        for attempt in range(3):  # concurrent runs registering the same data set race on MLflow's unique key
            try:
                self.client.log_inputs(self.run_id, datasets=inputs)
                return
            except Exception as err:  # noqa: BLE001 - the data set row now exists; the next try links it
                if attempt == 2:
                    log.warning("could not log the data set as an MLflow input: %s", err)
                time.sleep(0.2 * (attempt + 1))

    def mark_killed(self, reason: str):
        """SIGINT / SIGTERM: say so, and how many steps were done."""
        self.set_tag("plcore.ended_by", reason)
        self.set_tag(f"plcore.{self.step_name}s_done", str(len(self.steps)))

    def mark_failed(self, traceback_text: str):
        """An exception in the run: the traceback as an artifact, its last line as a tag."""
        self.log_text(traceback_text, "error/traceback.txt")
        self.set_tag("error", traceback_text.strip().splitlines()[-1][:5000])

    def end(self, status: str, end_time: int | None = None):
        """End the run with ``status`` (at ``end_time``, ms; default now); tried even after a
        fault (the store may be back)."""
        if self.run_id is None:  # never opened
            return
        try:
            self.client.set_terminated(self.run_id, status=status, end_time=end_time)
        except Exception as err:  # noqa: BLE001 - kept; the fallback file holds the results
            self.fault = self.fault or err

    def log_result(self, result, ts: int | None = None):
        from mlflow.entities import Metric

        self.result = result
        ts = _now_ms() if ts is None else ts
        for key, value in getattr(result, "tags", {}).items():
            self.set_tag(key, value)
        derived = getattr(result, "params", None) or {}
        if derived:
            from mlflow.entities import Param

            self._call("log_batch", self.run_id, params=[Param(k, str(v)[:_PARAM_MAX]) for k, v in derived.items()])
        summary = _numeric(result.summary)
        if summary:
            self._call("log_batch", self.run_id, metrics=[Metric(k, v, ts, 0) for k, v in summary.items()])
        if self.tcfg.get("log_predictions", True) and result.predictions:
            buf = io.StringIO()
            writer = csv.DictWriter(buf, fieldnames=list(result.predictions[0]))
            writer.writeheader()
            writer.writerows(result.predictions)
            self.log_text(buf.getvalue(), "predictions.csv")
        for name, curve in result.curves.items():
            self.log_text("\n".join(f"{v:.6g}" for v in np.asarray(curve)), f"curves/{name}.txt")
        if self.tcfg.get("log_plots", True) and self.fault is None:
            from plcore.tracking import plots

            for path, fig in plots.figures_for(result).items():
                self._call("log_figure", self.run_id, fig, path)
        model = getattr(result, "model", None)
        if model is not None and self.tcfg.get("log_model", True) and self.fault is None:
            self._call(log_model, self.tcfg["tracking_uri"], self.run_id, model)


def _now_ms() -> int:
    return int(time.time() * 1000)


def dataset_info(dataset) -> dict:
    """The fields of MLflow's ``Dataset`` entity for a data set (no MLflow import)."""
    source = dataset.meta.get("source") or dataset.name
    kind = "code" if str(source).startswith("sklearn.") else "local"
    return {"name": dataset.name, "digest": dataset.fingerprint(), "source_type": kind,
            "source": json.dumps({"uri": str(source)} if kind == "local" else {"tags": {"loader": source}}),
            "profile": json.dumps({"num_rows": dataset.n_samples, "num_features": dataset.n_features,
                                   "num_classes": dataset.n_classes})}


def log_model(tracking_uri: str, run_id: str, model) -> None:
    """The refitted pipeline as an MLflow model of the run (``model``), with a signature and
    explicit ``pip_requirements`` (no slow inference), plus ``classes.json`` (class names)."""
    import mlflow
    import mlflow.sklearn
    from mlflow.models import infer_signature

    pipe, X_example, classes = model["pipeline"], model["X_example"], model["classes"]
    requirements = model["requirements"]  # pinned where the model was fitted
    mlflow.set_tracking_uri(tracking_uri)
    noisy = logging.getLogger("mlflow.sklearn")  # its pickle warning: our docs say it (docs/runs.md)
    level = noisy.level
    noisy.setLevel(logging.ERROR)
    try:
        _log_model(mlflow, infer_signature, run_id, pipe, X_example, classes, requirements)
    finally:
        noisy.setLevel(level)


@contextmanager
def _pinned_requirements_unchecked():
    """Skip MLflow's check that the installed packages satisfy the model's requirements while
    logging a model: ours are pinned from the installed versions (:func:`pip_requirements`), so
    it cannot warn, and it costs 1.5-2 s per run (it maps every installed file to its package,
    13 times). Nothing is changed if MLflow's internals differ."""
    try:
        from mlflow.utils import environment
    except ImportError:  # pragma: no cover - mlflow is a dependency
        yield
        return
    original = getattr(environment, "warn_dependency_requirement_mismatches", None)
    if original is None:
        yield
        return
    environment.warn_dependency_requirement_mismatches = lambda requirements: None
    try:
        yield
    finally:
        environment.warn_dependency_requirement_mismatches = original


def _log_model(mlflow, infer_signature, run_id, pipe, X_example, classes, requirements):
    with warnings.catch_warnings(), _pinned_requirements_unchecked():
        warnings.simplefilter("ignore")  # MLflow's notes on integer columns and pickles
        signature = infer_signature(X_example, pipe.predict(X_example))
        with mlflow.start_run(run_id=run_id, log_system_metrics=False):
            mlflow.sklearn.log_model(pipe, name="model", signature=signature,
                                     pip_requirements=requirements, serialization_format="cloudpickle")
            mlflow.log_text(json.dumps([str(c) for c in classes]), "classes.json")


def _fallback_file(handle: MlflowRun, params: dict, tags: dict, directory: Path, error: str | None = None,
                   run_name: str | None = None) -> Path:
    """Everything the run produced, as JSON, when the tracking store failed mid-run."""
    result = handle.result
    record = {
        "error": error or _describe(handle.fault),
        "run_id": handle.run_id, "tracking_uri": handle.tcfg.get("tracking_uri"),
        "experiment_name": handle.tcfg.get("experiment_name") or "plcore", "step_name": handle.step_name,
        "run_name": handle.tcfg.get("run_name") or run_name,
        "params": {k: str(v) for k, v in {**params, **(getattr(result, "params", None) or {})}.items()},
        "tags": tags, "steps": handle.steps,
        "summary": {} if result is None else _numeric(result.summary),
        "result_tags": {} if result is None else dict(result.tags),
        "predictions": [] if result is None else result.predictions,
    }
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"plcore-unlogged-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.json"
    path.write_text(json.dumps(record, indent=1, default=float))
    return path


def open_run(tcfg: dict, *, params: dict, tags: dict, config_yaml: str, run_name: str | None = None,
             step_name: str = "step", start_time: int | None = None) -> MlflowRun:
    """Create the MLflow run in this process (store prepared, orphans reaped, params and
    ``config.yaml`` logged) and return its handle. ``start_time``: ms since the epoch
    (default now)."""
    from mlflow.entities import Param
    from mlflow.tracking import MlflowClient

    uri = tcfg["tracking_uri"]
    exp_id = prepare_store(uri, tcfg.get("experiment_name") or "plcore")
    client = MlflowClient(tracking_uri=uri)
    try:
        reap_orphans(client, exp_id)
    except Exception as err:  # noqa: BLE001 - housekeeping must not stop a run
        log.warning("could not check for orphaned runs: %s", err)
    run = client.create_run(exp_id, start_time=start_time, run_name=tcfg.get("run_name") or run_name, tags=tags)
    handle = MlflowRun(client, run.info.run_id, tcfg, step_name=step_name)
    items = [Param(k, str(v)[:_PARAM_MAX]) for k, v in params.items()]
    for i in range(0, len(items), 100):
        handle._call("log_batch", handle.run_id, params=items[i:i + 100])
    handle.log_text(config_yaml, "config.yaml")
    return handle


@contextmanager
def start_run(tcfg: dict, *, params: dict, tags: dict, config_yaml: str, run_name: str | None = None,
              step_name: str = "step", fallback_dir: str | Path | None = None):
    """Open an MLflow run (or a :class:`NullRun`) and end it in every case.

    The writes are made from this process (MLflow's client), so nothing outlives the command.
    The run ends ``FINISHED``; ``FAILED`` with ``error/traceback.txt`` on an exception;
    ``KILLED`` on SIGINT / SIGTERM (``KeyboardInterrupt`` /
    :class:`~plcore.exceptions.RunInterrupted`) with the steps done so far. A process killed
    outright (SIGKILL) leaves its run ``RUNNING`` until the next run on the store ends it
    ``KILLED`` (:func:`reap_orphans`). If the store fails mid-run, the results go to a JSON file
    in ``fallback_dir`` and :class:`~plcore.exceptions.TrackingError` names it.
    """
    if not tcfg.get("enabled", False):
        yield NullRun()
        return
    try:
        handle = open_run(tcfg, params=params, tags=tags, config_yaml=config_yaml, run_name=run_name,
                          step_name=step_name)
    except Exception as err:  # noqa: BLE001 - nothing computed yet: one line, and no work lost
        raise TrackingError(f"tracking store {tcfg['tracking_uri']} could not be opened ({_describe(err)}); "
                            "run with tracking=none or another MLFLOW_TRACKING_URI") from err
    status = "FAILED"
    try:
        yield handle
        status = "FINISHED"
    except KeyboardInterrupt as err:  # SIGINT, or SIGTERM through plcore's handler (RunInterrupted)
        status = "KILLED"
        handle.mark_killed(str(err) or "SIGINT")
        raise
    except BaseException:
        handle.mark_failed(traceback.format_exc())
        raise
    finally:
        try:
            handle.end(status)
        except KeyboardInterrupt:  # a second Ctrl-C while the run is being ended: keep a copy
            path = _fallback_file(handle, params, tags, Path(fallback_dir or Path.cwd()),
                                  error="interrupted while the run was being ended", run_name=run_name)
            log.warning("the run's results were also written to %s", path)
            raise
        if handle.fault is not None:
            path = _fallback_file(handle, params, tags, Path(fallback_dir or Path.cwd()), run_name=run_name)
            what = "could not be opened" if handle.run_id is None else f"failed during run {handle.run_id}"
            raise TrackingError(f"tracking store {tcfg['tracking_uri']} {what} ({_describe(handle.fault)}); "
                                f"its results were written to {path} (python -m plcore import FILE logs them into a "
                                "store)")


def _describe(fault) -> str:
    return fault if isinstance(fault, str) else f"{type(fault).__name__}: {fault}"


def import_fallback(path: str | Path, tracking_uri: str, experiment_name: str | None = None) -> str:
    """Log a fallback file (``plcore-unlogged-*.json``, written when the store failed during a
    run) into a store as a new run: its params, tags, per-step and summary metrics and
    predictions, tagged ``plcore.imported_from`` (and ``plcore.original_run_id``); ``FINISHED``
    when the file holds the summary, else ``KILLED``. Returns the new run's id."""
    from mlflow.entities import Metric, Param
    from mlflow.tracking import MlflowClient

    path = Path(path)
    try:
        record = json.loads(path.read_text())
        steps, params, tags = record["steps"], record["params"], dict(record["tags"])
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise TrackingError(f"{path} is not a plcore fallback file ({type(err).__name__}: {err})") from None
    exp_id = prepare_store(tracking_uri, experiment_name or record.get("experiment_name") or "plcore")
    client = MlflowClient(tracking_uri=tracking_uri)
    tags.update({k: str(v) for k, v in record.get("result_tags", {}).items()})
    tags["plcore.imported_from"] = path.name
    if record.get("run_id"):
        tags["plcore.original_run_id"] = record["run_id"]
    run_id = client.create_run(exp_id, tags=tags, run_name=record.get("run_name")).info.run_id
    items = [Param(k, str(v)[:_PARAM_MAX]) for k, v in params.items()]
    for i in range(0, len(items), 100):
        client.log_batch(run_id, params=items[i:i + 100])
    ts, prefix = _now_ms(), record.get("step_name") or "step"
    metrics = [Metric(k if k.startswith("selected.") else f"{prefix}/{k}", v, ts, int(step.get("step", 0)))
               for step in steps for k, v in _numeric(step).items()]
    metrics += [Metric(k, v, ts, 0) for k, v in _numeric(record.get("summary", {})).items()]
    for i in range(0, len(metrics), 500):
        client.log_batch(run_id, metrics=metrics[i:i + 500])
    if record.get("predictions"):
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(record["predictions"][0]))
        writer.writeheader()
        writer.writerows(record["predictions"])
        client.log_text(run_id, buf.getvalue(), "predictions.csv")
    client.set_terminated(run_id, status="FINISHED" if record.get("summary") else "KILLED")
    return run_id
