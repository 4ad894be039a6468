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


# ----------------------------------------------------------------------------- predict on models of a store
@pytest.fixture(scope="module")
def model_store(tmp_path_factory):
    """A store written by MLflow alone (tests/faultlib/model_store.py): ``(folder, marker, run ids)``."""
    store = tmp_path_factory.mktemp("models")
    marker = store / "code-ran"
    env = dict(os.environ)
    env.pop("MLFLOW_TRACKING_URI", None)
    proc = subprocess.run([sys.executable, str(HERE / "faultlib" / "model_store.py"), str(store), str(marker)],
                          cwd=store, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return store, marker, json.loads(proc.stdout.strip().splitlines()[-1])


def _predict(plcore_cli, store, run_id, *extra, env=None):
    return plcore_cli(["predict", f"run={run_id}", "data=iris", "out=p.csv", "overwrite=true", *extra], store, env,
                      check=False)


def test_a_crafted_pickle_model_runs_no_code_unless_the_store_is_trusted(model_store, plcore_cli):
    """A store's ``model.pkl`` replaced by a pickle that creates a file when loaded: ``predict``
    refuses it in one line, and the file is not created; ``trust=true`` loads it (and runs it)."""
    store, marker, ids = model_store
    proc = _predict(plcore_cli, store, ids["crafted_pickle"])
    assert not marker.exists(), "loading the model ran code from the store"
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        f"error: the model of run {ids['crafted_pickle']} (crafted_pickle) is a pickle (cloudpickle): loading it runs "
        "code from the tracking store; pass trust=true if you trust the store"], proc.stderr
    from mlflow.tracking import MlflowClient

    from plcore.run.predict import load_run_model

    uri = f"sqlite:///{store / 'mlflow.db'}"
    load_run_model(MlflowClient(tracking_uri=uri).get_run(ids["crafted_pickle"]), uri, trust=True)
    assert marker.exists()  # the documented meaning of trust=true
    marker.unlink()


def test_a_model_that_declares_types_plcore_does_not_trust_is_refused(model_store, plcore_cli):
    """MLflow reads a skops model with the types its own MLmodel declares trusted; plcore decides
    itself, so a crafted model cannot declare its way in."""
    store, _, ids = model_store
    proc = _predict(plcore_cli, store, ids["declares_untrusted"])
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(err) == 1, proc.stderr
    assert "holds types plcore does not trust (_operator.neg)" in err[0] and "trust=true" in err[0]
    from mlflow.tracking import MlflowClient

    from plcore.run.predict import load_run_model

    uri = f"sqlite:///{store / 'mlflow.db'}"
    model, classes, note = load_run_model(MlflowClient(tracking_uri=uri).get_run(ids["declares_untrusted"]), uri,
                                          trust=True)
    assert model.predict(np.zeros((2, 4))).shape == (2,) and classes == ["setosa", "versicolor", "virginica"]


def test_predict_leaves_nothing_in_the_temporary_folder(model_store, plcore_cli, tmp_path):
    store, _, ids = model_store
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = _predict(plcore_cli, store, ids["plain"], env={"TMPDIR": str(tmp)})
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert "150 predictions" in proc.stdout
    assert sorted(os.listdir(tmp)) == []


def test_a_model_of_another_plcore_version_is_named_in_one_line(model_store, plcore_cli):
    """The plcore version a model's requirements pin is compared with the installed one: one
    warning line where the model loads, one error line naming both where it cannot."""
    from plcore import __version__

    store, _, ids = model_store
    ok = _predict(plcore_cli, store, ids["older_plcore"])
    assert ok.returncode == 0 and "150 predictions" in ok.stdout
    assert ok.stderr.strip().splitlines() == [
        f"warning: the model of run {ids['older_plcore']} was written by plcore 0.0.1; installed: plcore "
        f"{__version__}"], ok.stderr
    bad = _predict(plcore_cli, store, ids["older_plcore_class"])
    assert bad.returncode == 2 and bad.stderr.strip().splitlines() == [
        f"error: the model of run {ids['older_plcore_class']} (older_plcore_class) needs "
        "plcore.learners.plknn.PlKnnLearnerV0, which the installed packages lack (written by plcore 0.0.1; "
        f"installed: plcore {__version__})"], bad.stderr


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
