"""MLflow tracking of one run (one Hydra job).

``tracking=mlflow`` (default) logs to ``$MLFLOW_TRACKING_URI`` or a SQLite file
``mlflow.db`` in the launch directory, experiment ``plcore``:

* params: the flattened resolved config;
* tags: ``plcore.version``, ``plugin.<distribution>`` versions, ``dataset.fingerprint``,
  ``seed``, ``overrides``, Hydra job number and sweep directory;
* metrics: per step (fold / run / partition, ``step=``) and the summary metrics;
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
import socket
import time
import traceback
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from plcore import __version__
from plcore.exceptions import TrackingError

log = logging.getLogger(__name__)

__all__ = ["flatten", "MlflowRun", "NullRun", "start_run", "open_run", "dataset_info",
           "PrepareTrackingCallback", "prepare_store", "check_reachable", "git_provenance", "reap_orphans", "log_model", "pip_requirements"]

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

    def log_dataset(self, dataset):
        pass

    def set_tag(self, key, value):
        pass

    def log_result(self, result):
        pass


_EXPERIMENT_KIND = {"mlflow.experimentKind": "custom_model_development"}  # MLflow 3: model training, not GenAI
_HEALTH_TIMEOUT_S = 5.0


def _sqlite_file(tracking_uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI (None for any other store)."""
    if not tracking_uri.startswith("sqlite:///"):
        return None
    path = tracking_uri[len("sqlite:///"):]
    return None if path in ("", ":memory:") else Path(path)


@contextmanager
def _file_lock(path: Path):
    """An exclusive advisory lock on ``path`` (created if needed), held for the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+b") as fh:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: the atomic rename still protects readers
            yield
            return
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _create_sqlite_store(path: Path) -> None:
    """Create and migrate a fresh SQLite store ONCE, whoever else starts on the same file.

    Under a lock file beside it, the database is built in a temporary file and renamed into
    place (atomic on one file system): every process -- plcore's or any other MLflow
    client -- sees either no file or a complete, migrated one, so alembic never runs twice.
    """
    if path.is_file() and path.stat().st_size > 0:
        return
    with _file_lock(path.with_name(path.name + ".lock")):
        if path.is_file() and path.stat().st_size > 0:
            return  # another process created it while we waited
        from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.unlink(missing_ok=True)
        quiet = [logging.getLogger(name) for name in ("mlflow.store.db.utils", "alembic")]
        levels = [lg.level for lg in quiet]
        for lg in quiet:  # "Creating initial MLflow database tables..." on every fresh store
            lg.setLevel(logging.WARNING)
        try:
            store = SqlAlchemyStore(f"sqlite:///{tmp}", str(Path.cwd() / "mlruns"))
            store.engine.dispose()
        finally:
            for lg, level in zip(quiet, levels):
                lg.setLevel(level)
        os.replace(tmp, path)


def check_reachable(tracking_uri: str, timeout: float = _HEALTH_TIMEOUT_S) -> None:
    """Fail fast, in one line, when an HTTP tracking server does not answer.

    Any HTTP answer (also 401 from an authenticating server) counts as reachable; a refused or
    timed-out connection raises :class:`~plcore.exceptions.TrackingError` within ``timeout``.
    """
    if not tracking_uri.startswith(("http://", "https://")):
        return
    import urllib.error
    import urllib.request

    try:
        urllib.request.urlopen(tracking_uri.rstrip("/") + "/health", timeout=timeout).close()
    except urllib.error.HTTPError:
        return
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        raise TrackingError(f"tracking server {tracking_uri} is unreachable ({reason}); start it, or run "
                            "with tracking=none or another MLFLOW_TRACKING_URI") from None


def _limit_http_retries() -> None:
    """MLflow retries a dead server for minutes by default; a run should fail within seconds."""
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "1")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")


def prepare_store(tracking_uri: str, experiment_name: str) -> str:
    """Make the store and the experiment exist; return the experiment id.

    Safe for any number of independent processes starting at once on a fresh SQLite file
    (:func:`_create_sqlite_store`). The experiment is marked as model training for MLflow 3's
    UI (tag ``mlflow.experimentKind``).
    """
    from mlflow.tracking import MlflowClient

    check_reachable(tracking_uri)
    _limit_http_retries()
    path = _sqlite_file(tracking_uri)
    if path is not None:
        _create_sqlite_store(path)
    client = MlflowClient(tracking_uri=tracking_uri)
    exp = client.get_experiment_by_name(experiment_name)
    if exp is None:
        try:
            return client.create_experiment(experiment_name, tags=_EXPERIMENT_KIND)
        except Exception:  # noqa: BLE001 - created concurrently by another process
            exp = client.get_experiment_by_name(experiment_name)
            if exp is None:
                raise
    if exp.tags.get("mlflow.experimentKind") is None:
        client.set_experiment_tag(exp.experiment_id, *next(iter(_EXPERIMENT_KIND.items())))
    return exp.experiment_id


def git_provenance() -> dict:
    """MLflow's source tags for the checkout plcore runs from: commit and a dirty flag.

    Empty when plcore is not in a git checkout (an installed wheel) or git is missing.
    """
    import subprocess

    root = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                                timeout=10)
        if commit.returncode != 0:
            return {}
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                                capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return {}
    return {"mlflow.source.git.commit": commit.stdout.strip(),
            "plcore.git.dirty": "true" if status.stdout.strip() else "false"}


def _pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, exited but not yet waited for, does not). Off POSIX
    every process counts as alive (``os.kill(pid, 0)`` would end it on Windows): nothing is reaped."""
    if os.name != "posix":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def reap_orphans(client, experiment_id: str) -> int:
    """End as KILLED the RUNNING runs of this host whose process is gone (SIGKILL, out of memory,
    power loss): a process that cannot end its own run has it ended by the next run on the store.

    Returns how many were ended. Runs of other hosts are left alone (their process cannot be seen).
    """
    host = socket.gethostname()
    n = 0
    for run in client.search_runs([experiment_id], filter_string="attributes.status = 'RUNNING'",
                                  max_results=200):
        tags = run.data.tags
        pid = tags.get("pid", "")
        if tags.get("host") != host or not pid.isdigit() or _pid_alive(int(pid)):
            continue
        client.set_tag(run.info.run_id, "plcore.ended_by", "reaped: its process was gone")
        client.set_terminated(run.info.run_id, status="KILLED")
        n += 1
    return n


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

    def log_dataset(self, dataset):
        """The data set as an MLflow input (name, digest = our fingerprint, source); ``dataset``
        is a :class:`~plcore.data.PLDataset` or its :func:`dataset_info`.

        Not essential to the run: a failure after retries is a warning, not a tracking fault.
        """
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
            from plcore import plots

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
    requirements = model.get("requirements") or pip_requirements()  # pinned where the model was fitted
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


def pip_requirements() -> list[str]:
    """``name==version`` of plcore, its installed plugins and the numeric stack (for a logged model)."""
    from importlib import metadata

    from plcore.registry import get_registry

    names = ["plcore", "numpy", "scipy", "scikit-learn", "cloudpickle"]
    names += sorted(d for d in get_registry().distributions() if d.lower().startswith("plcore-"))
    out = []
    for name in names:
        try:
            out.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return out


def _fallback_file(handle: MlflowRun, params: dict, tags: dict, directory: Path, error: str | None = None) -> Path:
    """Everything the run produced, as JSON, when the tracking store failed mid-run."""
    result = handle.result
    record = {
        "error": error or _describe(handle.fault),
        "run_id": handle.run_id, "tracking_uri": handle.tcfg.get("tracking_uri"),
        "params": {k: str(v) for k, v in params.items()}, "tags": tags, "steps": handle.steps,
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
    except Exception as err:  # noqa: BLE001 - the run computes all the same; its results go to the fallback
        log.warning("tracking failed (%s); the run continues and is saved locally at the end", _describe(err))
        handle = MlflowRun(None, None, tcfg, step_name=step_name)
        handle.fault = err
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
                                  error="interrupted while the run was being ended")
            log.warning("the run's results were also written to %s", path)
            raise
        if handle.fault is not None:
            path = _fallback_file(handle, params, tags, Path(fallback_dir or Path.cwd()))
            what = "could not be opened" if handle.run_id is None else f"failed during run {handle.run_id}"
            raise TrackingError(f"tracking store {tcfg['tracking_uri']} {what} ({_describe(handle.fault)}); "
                                f"its results were written to {path}")


def _describe(fault) -> str:
    return fault if isinstance(fault, str) else f"{type(fault).__name__}: {fault}"


try:
    from hydra.experimental.callback import Callback
except ImportError:  # pragma: no cover - hydra is a dependency
    Callback = object


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


def version_tags(registry) -> dict:
    tags = {"plcore.version": __version__}
    for dist, ver in sorted(registry.distributions().items()):
        tags[f"plugin.{dist}"] = ver
    return tags
