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
import logging
import math
import traceback
from contextlib import contextmanager

import numpy as np

from plcore import __version__

log = logging.getLogger(__name__)

__all__ = ["flatten", "MlflowRun", "NullRun", "start_run", "PrepareTrackingCallback", "prepare_store"]

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

    def log_result(self, result):
        pass


def prepare_store(tracking_uri: str, experiment_name: str) -> str:
    """Create the tracking database and experiment once; return the experiment id.

    Called in the parent process before parallel workers log: workers racing to create a
    fresh SQLite database corrupt it.
    """
    import mlflow

    mlflow.set_tracking_uri(tracking_uri)
    exp = mlflow.get_experiment_by_name(experiment_name)
    if exp is not None:
        return exp.experiment_id
    try:
        return mlflow.create_experiment(experiment_name)
    except Exception:  # noqa: BLE001 - created concurrently
        return mlflow.get_experiment_by_name(experiment_name).experiment_id


class MlflowRun:
    """An open MLflow run; use :func:`start_run`."""

    def __init__(self, client, run_id, tcfg):
        self.client = client
        self.run_id = run_id
        self.tcfg = tcfg

    def log_step(self, step: dict):
        from mlflow.entities import Metric
        import time

        ts = int(time.time() * 1000)
        metrics = [Metric(k, v, ts, int(step.get("step", 0))) for k, v in _numeric(step).items()]
        if metrics:
            self.client.log_batch(self.run_id, metrics=metrics)

    def log_text(self, text: str, path: str):
        self.client.log_text(self.run_id, text, path)

    def log_result(self, result):
        from mlflow.entities import Metric
        import time

        ts = int(time.time() * 1000)
        for key, value in getattr(result, "tags", {}).items():
            self.client.set_tag(self.run_id, key, str(value))
        summary = _numeric(result.summary)
        if summary:
            self.client.log_batch(self.run_id, metrics=[Metric(k, v, ts, 0) for k, v in summary.items()])
        if self.tcfg.get("log_predictions", True) and result.predictions:
            buf = io.StringIO()
            writer = csv.DictWriter(buf, fieldnames=list(result.predictions[0]))
            writer.writeheader()
            writer.writerows(result.predictions)
            self.log_text(buf.getvalue(), "predictions.csv")
        for name, curve in result.curves.items():
            self.log_text("\n".join(f"{v:.6g}" for v in np.asarray(curve)), f"curves/{name}.txt")
        if self.tcfg.get("log_plots", True):
            from plcore import plots

            for path, fig in plots.figures_for(result).items():
                self.client.log_figure(self.run_id, fig, path)
                plots.close(fig)


@contextmanager
def start_run(tcfg: dict, *, params: dict, tags: dict, config_yaml: str, run_name: str | None = None):
    """Open an MLflow run (or a :class:`NullRun`); mark it FAILED with the traceback on error."""
    if not tcfg.get("enabled", False):
        yield NullRun()
        return
    from mlflow.tracking import MlflowClient

    uri = tcfg["tracking_uri"]
    exp_id = prepare_store(uri, tcfg.get("experiment_name") or "plcore")
    client = MlflowClient(tracking_uri=uri)
    run = client.create_run(exp_id, run_name=tcfg.get("run_name") or run_name, tags=tags)
    rid = run.info.run_id
    ok = False
    try:
        from mlflow.entities import Param

        items = [Param(k, str(v)[:_PARAM_MAX]) for k, v in params.items()]
        for i in range(0, len(items), 100):
            client.log_batch(rid, params=items[i:i + 100])
        client.log_text(rid, config_yaml, "config.yaml")
        handle = MlflowRun(client, rid, tcfg)
        yield handle
        ok = True
    except BaseException:
        try:
            client.log_text(rid, traceback.format_exc(), "error/traceback.txt")
            client.set_tag(rid, "error", traceback.format_exc(limit=1).strip().splitlines()[-1][:5000])
        finally:
            client.set_terminated(rid, status="FAILED")
        raise
    finally:
        if ok:
            client.set_terminated(rid, status="FINISHED")


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
