"""plcore.tracking: what it changes in MLflow is checked against MLflow's own behaviour, so an
upgrade that makes a change useless or wrong fails here; the models a run logs and
``python -m plcore predict`` reads (issue 42: models that load safely); the reaper."""

import json
import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from sklearn.dummy import DummyClassifier

HERE = Path(__file__).resolve().parent


def test_requirements_check_is_skipped_only_while_plcore_logs_a_model(tmp_path, monkeypatch):
    """MLflow calls ``environment.warn_dependency_requirement_mismatches`` when it saves a model
    with explicit requirements (0.7 s per default run, docs/runs.md); plcore skips that call,
    and only inside its own model logging."""
    import mlflow.sklearn
    from mlflow.utils import environment

    from plcore.tracking.models import _pinned_requirements_unchecked

    calls = []
    monkeypatch.setattr(environment, "warn_dependency_requirement_mismatches", lambda reqs: calls.append(reqs))
    model = DummyClassifier().fit(np.zeros((4, 2)), [0, 1, 0, 1])
    mlflow.sklearn.save_model(model, tmp_path / "upstream", pip_requirements=["numpy"])
    assert calls, "MLflow no longer checks requirements through this name: remove the skip"
    calls.clear()
    with _pinned_requirements_unchecked():
        mlflow.sklearn.save_model(model, tmp_path / "skipped", pip_requirements=["numpy"])
    assert calls == []
    mlflow.sklearn.save_model(model, tmp_path / "restored", pip_requirements=["numpy"])
    assert calls, "the check was not restored"


def test_skops_is_imported_without_pytorch_and_trusts_the_same_estimators():
    """skops lists scikit-learn's estimators on import, and scikit-learn's package walk imports
    PyTorch (installed for plcore-deep); plcore's import of skops avoids that and yields the same
    list. If the walk stops importing PyTorch, the stand-in is useless: remove it."""
    code = """
import sys
from plcore.tracking.models import skops_io
skops_io()
assert "torch" not in sys.modules, "PyTorch was imported"
from skops.io._trusted_types import SKLEARN_ESTIMATOR_TYPE_NAMES as got
from skops.io._utils import get_type_name
from sklearn.utils import all_estimators
want = [get_type_name(c) for _, c in all_estimators() if get_type_name(c).startswith("sklearn.")]
assert sorted(got) == sorted(want), set(got) ^ set(want)
assert "torch" in sys.modules, "scikit-learn's estimator walk no longer imports PyTorch: remove skops_io's stand-in"
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr


# ----------------------------------------------------------------------------- MLflow's noise
def test_mlflow_and_urllib3_noise_stays_off_the_terminal_while_plcore_tracks(capfd):
    """What MLflow logs when its store fails (a SQLAlchemy traceback at ERROR) and urllib3's retry
    warnings are not shown inside :func:`quiet_mlflow`; the levels are restored after it."""
    import mlflow  # noqa: F401 - configures MLflow's own stderr handler, as in a run

    from plcore.tracking import quiet_mlflow

    urllib3_log = logging.getLogger("urllib3.connectionpool")
    urllib3_log.addHandler(handler := logging.StreamHandler())
    try:
        before = logging.getLogger("mlflow").level, urllib3_log.level
        with quiet_mlflow():
            try:
                raise RuntimeError("database is locked")
            except RuntimeError:
                logging.getLogger("mlflow.store.db.utils").exception("SQLAlchemy database error.")
            urllib3_log.warning("Retrying (Retry(total=1)) after connection broken")
        assert capfd.readouterr().err == ""
        assert (logging.getLogger("mlflow").level, urllib3_log.level) == before
        logging.getLogger("mlflow.store.db.utils").error("shown again")
        assert "shown again" in capfd.readouterr().err
    finally:
        urllib3_log.removeHandler(handler)


def test_a_tracking_failure_is_described_in_one_line():
    from plcore.tracking import describe

    sql = RuntimeError("(sqlite3.OperationalError) database is locked\n[SQL: SELECT runs.run_uuid FROM runs]\n"
                       "(Background on this error at: https://sqlalche.me/e/21/e3q8)")
    assert describe(sql) == "RuntimeError: (sqlite3.OperationalError) database is locked"
    try:
        try:
            raise ConnectionRefusedError(111, "Connection refused")
        except OSError as err:
            raise RuntimeError("API request to http://x/api failed with exception HTTPConnectionPool(...)") from err
    except RuntimeError as err:
        assert describe(err) == "[Errno 111] Connection refused"
    assert len(describe(RuntimeError("x" * 1000))) == 300


# ----------------------------------------------------------------------------- the types plcore trusts
def test_plcore_trusts_classes_of_its_libraries_and_plugins_never_functions():
    from plcore.registry import model_packages
    from plcore.tracking.models import missing_types, trusted

    packages = model_packages()
    assert {"plcore", "plcore_deep", "plcore_online"} <= set(packages)
    for name in ("plcore.learners.plknn.PlKnnLearner", "plcore.neighbors.NeighborIndex",
                 "sklearn.neighbors._kd_tree.KDTree", "scipy.sparse._csr.csr_matrix",
                 "plcore_online._stream.StreamState"):
        assert trusted(name, packages), name
    for name in ("numpy.load", "builtins.eval", "os.system", "_operator.neg", "subprocess.Popen",
                 "plcore.run.predict.main", "sklearn.utils.all_estimators"):
        assert not trusted(name, packages), name
    assert missing_types(["plcore.learners.plknn.PlKnnLearnerV0", "os.system", "numpy.ndarray"], packages) == [
        "plcore.learners.plknn.PlKnnLearnerV0"]


# ----------------------------------------------------------------------------- the reaper
def test_the_reaper_covers_every_experiment_dates_the_end_and_tags_the_steps(tmp_path):
    """A run of another experiment whose process is gone (SIGKILL) is ended KILLED by the next run
    on the store, at the time of its last metric, with the folds it logged."""
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    from plcore.tracking import open_run, prepare_store

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    other = prepare_store(uri, "other")
    client = MlflowClient(tracking_uri=uri)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    t0 = int(time.time() * 1000) - 60_000
    orphan = client.create_run(other, start_time=t0, tags={"host": socket.gethostname(), "pid": str(gone.pid)})
    rid = orphan.info.run_id
    client.log_batch(rid, metrics=[Metric("fold/accuracy", 0.9, t0 + 1000 * (i + 1), i) for i in range(3)])
    handle = open_run({"tracking_uri": uri, "experiment_name": "plcore", "enabled": True}, params={}, tags={},
                      config_yaml="", step_name="fold")
    handle.end("FINISHED")
    run = client.get_run(rid)
    assert run.info.status == "KILLED" and run.data.tags["plcore.ended_by"].startswith("reaped")
    assert run.info.end_time == t0 + 3000  # its last sign of life, not the reaping time
    assert run.data.tags["plcore.folds_done"] == "3"
