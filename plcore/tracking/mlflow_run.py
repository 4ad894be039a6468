"""One MLflow run (one Hydra job): opened, written and ended from the job's own process.

``tracking=mlflow`` (default) logs to ``$MLFLOW_TRACKING_URI`` or a SQLite file
``mlflow.db`` in the launch directory, experiment ``plcore``:

* params: the flattened resolved config;
* tags: ``plcore.version``, ``plugin.<distribution>`` versions, ``dataset.fingerprint``,
  ``dataset.noisy`` (data accepted as noisy partial labels), ``seed``, ``overrides``, Hydra job
  number and sweep directory;
* metrics: per step (fold / run / partition, ``step=``), the summary metrics and the audit of
  the candidate sets (``candidates.*``);
* artifacts: ``config.yaml`` (resolved), ``predictions.csv``, PNG plots under ``plots/``, the
  refitted pipeline as the MLflow model ``model`` (:mod:`~plcore.tracking.models`);
* on an exception the run ends ``FAILED`` with ``error/traceback.txt``.

MLflow's and its libraries' own reports stay off the terminal (:mod:`~plcore.tracking.quiet`):
a failure of the store is one line.

``tracking=none`` logs nothing.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import math
import os
import shutil
import tempfile
import time
import traceback
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from plcore.exceptions import TrackingError
from plcore.tracking.models import log_saved_model, save_model
from plcore.tracking.quiet import describe, quiet_mlflow
from plcore.tracking.store import _sqlite_file, last_sign_of_life, prepare_store, reap_orphans

log = logging.getLogger(__name__)

__all__ = ["flatten", "MlflowRun", "NullRun", "start_run", "open_run", "dataset_info", "import_fallback"]

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


def predictions_csv(rows: list) -> str:
    """A run's per-row predictions (dicts with the same keys) as the text of its ``predictions.csv``
    artifact, the header from the first row."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def _numeric(metrics: dict) -> dict:
    return {k: float(v) for k, v in metrics.items()
            if k != "step" and isinstance(v, (int, float, np.floating, np.integer))
            and not isinstance(v, bool) and math.isfinite(float(v))}


class NullRun:
    """Does nothing (``tracking=none``)."""

    run_id = None
    model_id = None

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
    (the model included) to a local fallback file at the end and reports where, in one line.
    """

    def __init__(self, client, run_id, tcfg, *, step_name: str = "step"):
        self.client = client
        self.run_id = run_id
        self.tcfg = tcfg
        self.step_name = step_name
        self.fault: BaseException | None = None
        self.steps: list = []
        self.step_times: list = []  # ms since the epoch, one per step (a fallback file keeps them)
        self.dataset: dict | None = None
        self.audit: dict = {}  # candidates.* metrics (kept for a fallback file)
        self.noisy = False
        self.start_time: int | None = None
        self.result = None
        self.model_id: str | None = None  # the logged model's id (``models:/<id>``), once logged

    def _call(self, fn, *args, **kwargs):
        """``fn(*args, **kwargs)``, or nothing after a fault; ``fn`` may name a method of the
        MLflow client (resolved only while there is one)."""
        if self.fault is not None:
            return None
        try:
            return (getattr(self.client, fn) if isinstance(fn, str) else fn)(*args, **kwargs)
        except Exception as err:  # noqa: BLE001 - kept; reported once the work is done, in one line
            self.fault = err
            log.debug("tracking failed (%s); the run continues and is saved locally at the end", err)
            return None

    def log_step(self, step: dict, ts: int | None = None):
        """Per-step metrics, named ``<step name>/<metric>`` (``fold/accuracy``) so that no one
        reads one fold's value as the run's figure; nested selection's choices keep their
        name ``selected.<component>.<parameter>`` (step = the fold). ``ts``: when the step was
        done (ms since the epoch; default now)."""
        from mlflow.entities import Metric

        self.steps.append(dict(step))
        ts = _now_ms() if ts is None else ts
        self.step_times.append(ts)
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
        self.dataset = info = dataset if isinstance(dataset, dict) else dataset_info(dataset)
        if audit is not None:
            from mlflow.entities import Metric

            self.audit = {k: float(v) for k, v in audit.metrics().items()}
            ts = _now_ms()
            self._call("log_batch", self.run_id, metrics=[Metric(k, v, ts, 0) for k, v in self.audit.items()])
        if not isinstance(dataset, dict) and dataset.meta.get("noisy"):
            self.noisy = True
            self.set_tag("dataset.noisy", "true")
        if self.fault is not None:
            return
        log_dataset_input(self.client, self.run_id, info)

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
            self.log_text(predictions_csv(result.predictions), "predictions.csv")
        for name, curve in result.curves.items():
            self.log_text("\n".join(f"{v:.6g}" for v in np.asarray(curve)), f"curves/{name}.txt")
        if self.tcfg.get("log_plots", True) and self.fault is None:
            from plcore.tracking import plots

            for path, fig in plots.figures_for(result).items():
                self._call("log_figure", self.run_id, fig, path)
        model = getattr(result, "model", None)
        if model is not None and self.tcfg.get("log_model", True) and self.fault is None:
            self._log_model(model)

    def _log_model(self, model: dict):
        """The refitted pipeline as the run's MLflow model (:mod:`~plcore.tracking.models`), with
        a one-line warning where it had to be a pickle or could not be saved at all (a failure
        of the store is a tracking fault, as for any other write)."""
        with tempfile.TemporaryDirectory(prefix="plcore-model-") as tmp:
            folder = Path(tmp) / "model"
            try:
                fmt, why = save_model(model, folder)
            except Exception as err:  # noqa: BLE001 - the run's results are logged all the same
                warnings.warn(f"the model of run {self.run_id} could not be saved ({describe(err)}); it is not "
                              "logged", UserWarning, stacklevel=2)
                return
            self.model_id = self._call(log_saved_model, self.client, self.run_id, folder)
        if why:
            warnings.warn(f"the model of run {self.run_id} is logged as a pickle ({fmt}) because {why}; python -m "
                          "plcore predict loads it only with trust=true", UserWarning, stacklevel=2)


def _now_ms() -> int:
    return int(time.time() * 1000)


def log_dataset_input(client, run_id: str, info: dict) -> None:
    """The data set (:func:`dataset_info`) as an MLflow input of the run; a failure after three
    tries is a one-line warning, not a tracking fault."""
    from mlflow.entities import Dataset, DatasetInput, InputTag

    inputs = [DatasetInput(Dataset(schema=None, **info), tags=[InputTag("mlflow.data.context", "training")])]
    for attempt in range(3):  # concurrent runs registering the same data set race on MLflow's unique key
        try:
            client.log_inputs(run_id, datasets=inputs)
            return
        except Exception as err:  # noqa: BLE001 - the data set row now exists; the next try links it
            if attempt == 2:
                log.warning("could not log the data set as an MLflow input: %s", describe(err))
            time.sleep(0.2 * (attempt + 1))


def dataset_info(dataset) -> dict:
    """The fields of MLflow's ``Dataset`` entity for a data set (no MLflow import)."""
    source = dataset.meta.get("source") or dataset.name
    kind = "code" if str(source).startswith("sklearn.") else "local"
    return {"name": dataset.name, "digest": dataset.fingerprint(), "source_type": kind,
            "source": json.dumps({"uri": str(source)} if kind == "local" else {"tags": {"loader": source}}),
            "profile": json.dumps({"num_rows": dataset.n_samples, "num_features": dataset.n_features,
                                   "num_classes": dataset.n_classes})}


def _fallback_file(handle: MlflowRun, params: dict, tags: dict, directory: Path, config_yaml: str,
                   error: str | None = None, run_name: str | None = None) -> Path:
    """Everything the run produced, as JSON, when the tracking store failed mid-run; its model
    (the MLflow model folder :func:`~plcore.tracking.models.save_model` writes) beside it."""
    result = handle.result
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"plcore-unlogged-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.json"
    record = {
        "error": error or describe(handle.fault),
        "run_id": handle.run_id, "tracking_uri": handle.tcfg.get("tracking_uri"),
        "experiment_name": handle.tcfg.get("experiment_name") or "plcore", "step_name": handle.step_name,
        "run_name": handle.tcfg.get("run_name") or run_name,
        "start_time": handle.start_time, "end_time": _now_ms(),
        "params": {k: str(v) for k, v in {**params, **(getattr(result, "params", None) or {})}.items()},
        "tags": {**tags, **({"dataset.noisy": "true"} if handle.noisy else {})},
        "config_yaml": config_yaml, "dataset": handle.dataset, "audit": handle.audit,
        "steps": handle.steps, "step_times": handle.step_times,
        "summary": {} if result is None else _numeric(result.summary),
        "result_tags": {} if result is None else dict(result.tags),
        "predictions": [] if result is None else result.predictions,
        "curves": {} if result is None else {k: [float(v) for v in np.asarray(c)] for k, c in result.curves.items()},
        "model": None,
    }
    model = getattr(result, "model", None)
    if model is not None and handle.tcfg.get("log_model", True):
        folder = path.with_suffix(".model")
        try:
            save_model(model, folder)
            record["model"] = folder.name
        except Exception as err:  # noqa: BLE001 - the results are kept all the same
            shutil.rmtree(folder, ignore_errors=True)
            record["model_error"] = describe(err)
    path.write_text(json.dumps(record, indent=1, default=float))
    return path


def open_run(tcfg: dict, *, params: dict, tags: dict, config_yaml: str, run_name: str | None = None,
             step_name: str = "step", start_time: int | None = None) -> MlflowRun:
    """Create the MLflow run in this process (store prepared, orphans of every experiment reaped,
    params and ``config.yaml`` logged) and return its handle. ``start_time``: ms since the epoch
    (default now)."""
    from mlflow.entities import Param
    from mlflow.tracking import MlflowClient

    uri = tcfg["tracking_uri"]
    exp_id = prepare_store(uri, tcfg.get("experiment_name") or "plcore")
    client = MlflowClient(tracking_uri=uri)
    try:
        reap_orphans(client)
    except Exception as err:  # noqa: BLE001 - housekeeping must not stop a run
        log.warning("could not check for orphaned runs: %s", describe(err))
    run = client.create_run(exp_id, start_time=start_time, run_name=tcfg.get("run_name") or run_name,
                            tags={**tags, "plcore.step_name": step_name})
    handle = MlflowRun(client, run.info.run_id, tcfg, step_name=step_name)
    handle.start_time = run.info.start_time
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
    ``KILLED`` (:func:`reap_orphans`). If the store fails mid-run, the results and the model go
    to a fallback file in ``fallback_dir`` and a one-line
    :class:`~plcore.exceptions.TrackingError` names it (``python -m plcore import`` logs it).
    """
    if not tcfg.get("enabled", False):
        yield NullRun()
        return
    with quiet_mlflow():
        yield from _tracked_run(tcfg, params=params, tags=tags, config_yaml=config_yaml, run_name=run_name,
                                step_name=step_name, fallback_dir=Path(fallback_dir or Path.cwd()))


def _tracked_run(tcfg, *, params, tags, config_yaml, run_name, step_name, fallback_dir):
    try:
        handle = open_run(tcfg, params=params, tags=tags, config_yaml=config_yaml, run_name=run_name,
                          step_name=step_name)
    except Exception as err:  # noqa: BLE001 - nothing computed yet: one line, and no work lost
        raise TrackingError(f"tracking store {tcfg['tracking_uri']} could not be opened ({describe(err)}); "
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
            path = _fallback_file(handle, params, tags, fallback_dir, config_yaml,
                                  error="interrupted while the run was being ended", run_name=run_name)
            log.warning("the run's results were also written to %s", path)
            raise
        if handle.fault is not None:
            path = _fallback_file(handle, params, tags, fallback_dir, config_yaml, run_name=run_name)
            kept = "results and model" if _has_model(path) else "results"
            raise TrackingError(f"tracking store {tcfg['tracking_uri']} failed during run {handle.run_id} "
                                f"({describe(handle.fault)}); its {kept} were written to {path} (python -m plcore "
                                "import FILE logs them into a store)")


def _has_model(path: Path) -> bool:
    try:
        return bool(json.loads(path.read_text()).get("model"))
    except (OSError, ValueError):
        return False


def _read_fallback(path: Path) -> dict:
    try:
        record = json.loads(path.read_text())
        record["steps"], record["params"], record["tags"] = record["steps"], record["params"], dict(record["tags"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as err:
        raise TrackingError(f"{path} is not a plcore fallback file ({type(err).__name__}: {err})") from None
    return record


def _already_imported(client, record: dict, name: str) -> str | None:
    """The id of a run this store already holds from the same fallback file, or None."""
    if not record.get("run_id"):
        return None
    ids = [e.experiment_id for e in client.search_experiments(max_results=1000)]
    found = client.search_runs(ids, filter_string=f"tags.`plcore.original_run_id` = '{record['run_id']}'",
                               max_results=50) if ids else []
    return next((r.info.run_id for r in found if r.data.tags.get("plcore.imported_from") == name), None)


def import_fallback(path: str | Path, tracking_uri: str, experiment_name: str | None = None) -> tuple[str, str | None]:
    """Log a fallback file (``plcore-unlogged-*.json``, written when the store failed during a
    run) into a store as a new run: its params, tags, ``config.yaml``, data set, per-step and
    summary metrics (at the times they were computed), predictions, curves and model, tagged
    ``plcore.imported_from`` (and ``plcore.original_run_id``); ``FINISHED`` when the file holds
    the summary, else ``KILLED``. The original run, where this store or the one it was meant
    for still holds it ``RUNNING``, is ended (:func:`end_original`). A file already imported
    into this store is refused. Returns the new run's id and the original run's status afterwards
    (None where no store holds it)."""
    from mlflow.entities import Metric, Param
    from mlflow.tracking import MlflowClient

    path = Path(path)
    record = _read_fallback(path)
    model = path.parent / record["model"] if record.get("model") else None
    if model is not None and not (model / "MLmodel").is_file():
        raise TrackingError(f"{path} names its model folder {model.name}, which is missing beside it; move the "
                            "folder back, or remove the file's \"model\" entry to import the results alone")
    with quiet_mlflow():
        exp_id = prepare_store(tracking_uri, experiment_name or record.get("experiment_name") or "plcore")
        client = MlflowClient(tracking_uri=tracking_uri)
        done = _already_imported(client, record, path.name)
        if done:
            raise TrackingError(f"{path} was already imported into {tracking_uri} as run {done}; nothing was logged")
        tags = dict(record["tags"])
        tags.update({k: str(v) for k, v in record.get("result_tags", {}).items()})
        tags["plcore.imported_from"] = path.name
        if record.get("run_id"):
            tags["plcore.original_run_id"] = record["run_id"]
        if record.get("step_name"):
            tags["plcore.step_name"] = record["step_name"]
        run_id = client.create_run(exp_id, tags=tags, run_name=record.get("run_name"),
                                   start_time=record.get("start_time")).info.run_id
        items = [Param(k, str(v)[:_PARAM_MAX]) for k, v in record["params"].items()]
        for i in range(0, len(items), 100):
            client.log_batch(run_id, params=items[i:i + 100])
        if record.get("config_yaml"):
            client.log_text(run_id, record["config_yaml"], "config.yaml")
        if record.get("dataset"):
            log_dataset_input(client, run_id, record["dataset"])
        now, prefix = _now_ms(), record.get("step_name") or "step"
        times = record.get("step_times") or []
        metrics = [Metric(k if k.startswith("selected.") else f"{prefix}/{k}", v,
                          int(times[j]) if j < len(times) else now, int(step.get("step", 0)))
                   for j, step in enumerate(record["steps"]) for k, v in _numeric(step).items()]
        end = int(record.get("end_time") or now)
        metrics += [Metric(k, v, end, 0) for k, v in _numeric(record.get("summary", {})).items()]
        metrics += [Metric(k, float(v), int(record.get("start_time") or now), 0)
                    for k, v in (record.get("audit") or {}).items()]
        for i in range(0, len(metrics), 500):
            client.log_batch(run_id, metrics=metrics[i:i + 500])
        if record.get("predictions"):
            client.log_text(run_id, predictions_csv(record["predictions"]), "predictions.csv")
        for name, curve in (record.get("curves") or {}).items():
            client.log_text(run_id, "\n".join(f"{v:.6g}" for v in curve), f"curves/{name}.txt")
        if model is not None:
            log_saved_model(client, run_id, model)
        client.set_terminated(run_id, status="FINISHED" if record.get("summary") else "KILLED", end_time=end)
        original = end_original(record, run_id, path.name, tracking_uri) if record.get("run_id") else None
    return run_id, original


def end_original(record: dict, new_run_id: str, file_name: str, tracking_uri: str) -> str | None:
    """End the run a fallback file was written for, where it is still ``RUNNING`` (its process
    gave up on the store): ``FAILED`` (``KILLED`` if it was interrupted) at its last sign of life,
    tagged ``plcore.imported_as`` (the new run) and ``plcore.ended_by``. Looked for in
    ``tracking_uri``, then in the store it was meant for. Returns its status afterwards, or None
    where no store holds it (a one-line warning names the store that could not be reached)."""
    from mlflow.tracking import MlflowClient

    original = record["run_id"]
    for uri in dict.fromkeys([tracking_uri, record.get("tracking_uri") or tracking_uri]):
        file = _sqlite_file(uri)
        if uri != tracking_uri and file is not None and not file.is_file():
            continue  # never create a store where the original one was
        client = MlflowClient(tracking_uri=uri)
        try:
            run = client.get_run(original)
        except Exception as err:  # noqa: BLE001 - not in this store (or the store is away)
            if uri != tracking_uri:
                log.warning("the original run %s in %s could not be ended (%s)", original, uri, describe(err))
            continue
        client.set_tag(original, "plcore.imported_as", new_run_id)
        if run.info.status != "RUNNING":
            return run.info.status
        status = "KILLED" if str(record.get("error", "")).startswith("interrupted") else "FAILED"
        last, step_name, done = last_sign_of_life(client, run)
        client.set_tag(original, "plcore.ended_by", f"imported: the results of {file_name} were logged as run "
                                                    f"{new_run_id}")
        if step_name:
            client.set_tag(original, f"plcore.{step_name}s_done", str(done))
        client.set_terminated(original, status=status, end_time=last)
        return status
    return None
