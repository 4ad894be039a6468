"""Faults a run must survive (DESIGN.md section 9, issue "Runs a team can trust"): concurrent
processes on a fresh store, SIGTERM / SIGINT mid-run, a dead or vanishing tracking server, a
component that raises inside ``fit``. Every test is bounded in time."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from childenv import child_env

HERE = Path(__file__).resolve().parent
SLOW = ["+learner=plknn", "learner._target_=faulty.SlowKnn", "dataset=iris", "bags.r=1", "progress=false"]
CHEAP = ["dataset=iris", "bags.r=1", "protocol.n_splits=2", "protocol.refit=false", "progress=false"]
WAIT = 180


def _start(args, cwd, **env):
    return subprocess.Popen([sys.executable, "-m", "plcore", *args], cwd=cwd, env=child_env(**env),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _count(db: Path, sql: str) -> int:
    if not db.is_file():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as con:
            return con.execute(sql).fetchone()[0]
    except sqlite3.OperationalError:  # tables not there yet
        return 0


def _wait_for_folds(db: Path, n: int, proc) -> None:
    deadline = time.monotonic() + WAIT
    while _count(db, "SELECT COUNT(*) FROM metrics WHERE key = 'fold/accuracy'") < n:
        assert proc.poll() is None, f"the run ended early:\n{proc.communicate()}"
        assert time.monotonic() < deadline, "no fold was logged in time"
        time.sleep(0.2)


def _runs(db: Path):
    import mlflow

    client = mlflow.tracking.MlflowClient(tracking_uri=f"sqlite:///{db}")
    exp = client.get_experiment_by_name("plcore")
    return client, (client.search_runs([exp.experiment_id]) if exp else [])


# ----------------------------------------------------------------------------- concurrency
@pytest.mark.slow
@pytest.mark.parametrize("trial", range(3))
def test_independent_processes_on_a_fresh_sqlite_store(tmp_path, trial):
    """4 separate ``python -m plcore`` started at once on a fresh SQLite file: the store is
    created and migrated once (lock + atomic rename), every run FINISHED, database sound."""
    procs = [_start(CHEAP + [f"seed={i}"], tmp_path) for i in range(4)]
    outs = [p.communicate(timeout=WAIT) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, f"exit {p.returncode}\n{out}\n{err}"
    db = tmp_path / "mlflow.db"
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert con.execute("SELECT COUNT(*) FROM experiments WHERE name = 'plcore'").fetchone() == (1,)
    _, runs = _runs(db)
    assert sorted(r.data.tags["seed"] for r in runs) == ["0", "1", "2", "3"]
    assert all(r.info.status == "FINISHED" for r in runs)
    assert not list(tmp_path.glob(".mlflow.db.*.tmp"))


# ----------------------------------------------------------------------------- signals
@pytest.mark.slow
@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signal_mid_run_ends_killed_with_the_folds_done(tmp_path, signum, code):
    _create_store(tmp_path)
    proc = _start(SLOW + ["+learner.delay=1.0", "protocol.n_splits=10"], tmp_path)
    _wait_for_folds(tmp_path / "mlflow.db", 2, proc)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=WAIT)
    assert proc.returncode == code, f"exit {proc.returncode}\n{err}"
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"interrupted by {signal.Signals(signum).name}; run ") and "ended KILLED" in last, err
    assert "Traceback" not in err
    client, (run,) = _runs(tmp_path / "mlflow.db")
    assert run.info.status == "KILLED"
    folds = client.get_metric_history(run.info.run_id, "fold/accuracy")
    assert 2 <= len(folds) < 10 and run.data.tags["plcore.folds_done"] == str(len(folds))
    assert "accuracy_mean" not in run.data.metrics  # no summary of an incomplete run


def _wait_for_status(client, run_id, status):
    deadline = time.monotonic() + WAIT
    while client.get_run(run_id).info.status != status:
        assert time.monotonic() < deadline, f"run {run_id} is {client.get_run(run_id).info.status}, not {status}"
        time.sleep(0.2)
    return client.get_run(run_id)


def _create_store(cwd: Path) -> None:
    """Create ``mlflow.db`` first (in another experiment), so that the run under test logs its
    folds without first spending seconds creating the store."""
    setup = ["dataset=iris", "bags.r=1", "protocol=holdout", "protocol.refit=false", "progress=false",
             "tracking.experiment_name=setup"]  # logs no fold/accuracy (_wait_for_folds counts those)
    assert _start(setup, cwd).wait(timeout=WAIT) == 0


def _pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:  # a zombie (exited, not yet reaped by its new parent) is gone too
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return False


@pytest.mark.slow
def test_a_run_whose_process_died_is_reaped_by_the_next_run(tmp_path):
    """SIGKILL cannot be caught (nor can power loss or the OOM killer): the run stays RUNNING
    until the next run on the store sees its process gone and ends it KILLED."""
    _create_store(tmp_path)
    proc = _start(SLOW + ["+learner.delay=1.0", "protocol.n_splits=10"], tmp_path)
    _wait_for_folds(tmp_path / "mlflow.db", 1, proc)
    proc.kill()
    proc.communicate(timeout=WAIT)
    client, (orphan,) = _runs(tmp_path / "mlflow.db")
    assert client.get_run(orphan.info.run_id).info.status == "RUNNING"
    done = _start(CHEAP, tmp_path)
    assert done.wait(timeout=WAIT) == 0
    run = client.get_run(orphan.info.run_id)
    assert run.info.status == "KILLED" and run.data.tags["plcore.ended_by"].startswith("reaped")


@pytest.mark.slow
def test_no_process_a_command_starts_outlives_it(tmp_path):
    """Every process started by ``python -m plcore`` (tracking on, a plain run and a sweep)
    is gone when the command returns: no descendant carries the command's environment marker."""
    for args in (CHEAP, ["-m"] + CHEAP + ["seed=0,1"]):
        marker = f"plcore-test-{os.getpid()}-{time.monotonic_ns()}"
        proc = _start(args, tmp_path, PLCORE_TEST_MARKER=marker)
        out, err = proc.communicate(timeout=WAIT)
        assert proc.returncode == 0, err
        assert _processes_with(f"PLCORE_TEST_MARKER={marker}") == []


@pytest.mark.slow
def test_a_killed_runs_worker_processes_exit_within_seconds(tmp_path):
    """``kill -9`` of a run with ``protocol.n_jobs=2``: its loky workers (and their resource
    tracker) are gone within seconds, not after loky's 5-minute idle timeout."""
    marker = f"plcore-test-{os.getpid()}-{time.monotonic_ns()}"
    proc = _start(SLOW + ["+learner.delay=3", "protocol.n_splits=6", "protocol.refit=false", "protocol.n_jobs=2"],
                  tmp_path, PLCORE_TEST_MARKER=marker)
    deadline = time.monotonic() + WAIT
    while len(_processes_with(f"PLCORE_TEST_MARKER={marker}")) < 3:  # the run and its two workers
        assert proc.poll() is None, f"the run ended early:\n{proc.communicate()}"
        assert time.monotonic() < deadline, "the workers did not start"
        time.sleep(0.2)
    proc.kill()
    proc.wait(timeout=WAIT)
    deadline = time.monotonic() + 10
    while _processes_with(f"PLCORE_TEST_MARKER={marker}") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _processes_with(f"PLCORE_TEST_MARKER={marker}") == []


def _processes_with(entry: str) -> list[int]:
    """Pids of the live processes whose environment holds ``entry`` (Linux /proc)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            environ = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if entry.encode() in environ and not _pid_gone(int(proc.name)):
            pids.append(int(proc.name))
    return pids


# ----------------------------------------------------------------------------- tracking faults
def test_dead_tracking_server_fails_fast_in_one_line(tmp_path):
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    proc = _start(CHEAP, tmp_path, MLFLOW_TRACKING_URI=url)
    out, err = proc.communicate(timeout=WAIT)  # no timing assert: the check runs before any work, with a
    assert proc.returncode == 2, err            # 5 s connect timeout (plcore.tracking.check_reachable)
    assert err.strip().splitlines() == [f"error: tracking server {url} is unreachable ([Errno 111] Connection "
                                        "refused); start it, or run with tracking=none or another "
                                        "MLFLOW_TRACKING_URI"], err
    assert "n=150" not in out  # failed before loading data or running anything
    assert not (tmp_path / "mlflow.db").exists()


@pytest.mark.slow
def test_tracking_server_vanishing_mid_run_leaves_a_local_fallback(tmp_path, mlflow_server):
    srv = tmp_path / "server"
    srv.mkdir()
    server = mlflow_server(f"sqlite:///{srv / 'mlflow.db'}", srv, command="server")
    proc = _start(SLOW + ["+learner.delay=0.7", "protocol.n_splits=6", "protocol.refit=false"], tmp_path,
                  MLFLOW_TRACKING_URI=server.url)
    _wait_for_folds(srv / "mlflow.db", 1, proc)
    server.stop()
    out, err = proc.communicate(timeout=WAIT)
    assert proc.returncode == 2, err
    assert _not_progress(err) == [err.strip().splitlines()[-1]], err  # one line: no urllib3 retries, no warning
    assert "Retrying" not in out + err and "tracking failed" not in out, out
    line = err.strip().splitlines()[-1]
    assert line.startswith(f"error: tracking store {server.url} failed during run ") and "written to" in line, err
    assert "([Errno 111] Connection refused)" in line, line
    assert line.endswith("(python -m plcore import FILE logs them into a store)"), line
    path = Path(line.rsplit("written to ", 1)[1].split(" (python -m plcore import")[0])
    if not path.is_absolute():
        path = tmp_path / path
    record = json.loads(path.read_text())
    assert len(record["steps"]) == 6 and record["summary"]["accuracy_mean"] > 0.5  # nothing was lost
    assert record["params"]["learner.delay"] == "0.7"
    # the documented command logs the file into a store once one is back
    (tmp_path / "later").mkdir()
    done = subprocess.run([sys.executable, "-m", "plcore", "import", str(path)], cwd=tmp_path / "later",
                          env=child_env(), capture_output=True, text=True, timeout=WAIT)
    assert done.returncode == 0 and "logged as run" in done.stdout, done.stderr
    client, (run,) = _runs(tmp_path / "later" / "mlflow.db")
    assert run.info.status == "FINISHED" and run.data.tags["plcore.imported_from"] == path.name
    assert len(client.get_metric_history(run.info.run_id, "fold/accuracy")) == 6
    assert run.data.metrics["accuracy_mean"] == record["summary"]["accuracy_mean"]
    assert run.data.params["learner.delay"] == "0.7"


def _not_progress(err: str) -> list[str]:
    """The lines of stderr other than the protocol's progress lines (``[kfold iris] fold 0 ...``)."""
    return [line for line in err.strip().splitlines() if not line.startswith("[")]


@pytest.mark.slow
def test_a_store_failing_mid_run_is_one_line_keeps_the_model_and_import_ends_the_original_run(tmp_path,
                                                                                              monkeypatch):
    """The SQLite store becomes unreadable after the first fold (as a full disk, a store another
    program overwrote or a lock held too long): one line on stderr, nothing from MLflow or
    SQLAlchemy; the fallback file keeps the results and the refitted model; once the store is
    back, ``import`` logs them as a new run with the model and ends the original run FAILED at its
    last sign of life, and a second import of the same file is refused."""
    _create_store(tmp_path)
    db = tmp_path / "mlflow.db"
    proc = _start(SLOW + ["+learner.delay=1.0", "protocol.n_splits=4"], tmp_path)  # refit (the default): a model
    _wait_for_folds(db, 1, proc)
    live, copy = sqlite3.connect(db), sqlite3.connect(tmp_path / "backup.db")
    live.backup(copy)  # a consistent copy: the store as it will be once it is back
    live.close()
    copy.close()
    with open(db, "r+b") as fh:  # in place: from now on every access of the run's process fails
        fh.write(b"not a database " * 1000)
    out, err = proc.communicate(timeout=WAIT)
    assert proc.returncode == 2, err
    lines = _not_progress(err)
    assert len(lines) == 1 and lines[0].startswith(f"error: tracking store sqlite:///{db} failed during run "), err
    assert "Traceback" not in out + err and "[SQL" not in out + err and "tracking failed" not in out, (out, err)
    assert "; its results and model were written to " in lines[0], lines[0]
    path = Path(lines[0].rsplit("written to ", 1)[1].split(" (python -m plcore import")[0])
    record = json.loads(path.read_text())
    assert len(record["steps"]) == 4 and record["summary"]["accuracy_mean"] > 0.5
    assert (path.parent / record["model"] / "MLmodel").is_file()
    original_id = record["run_id"]
    db.write_bytes((tmp_path / "backup.db").read_bytes())  # the store is back
    done = subprocess.run([sys.executable, "-m", "plcore", "import", str(path)], cwd=tmp_path, env=child_env(),
                          capture_output=True, text=True, timeout=WAIT)
    assert done.returncode == 0 and done.stdout.strip().endswith("the original run is now FAILED"), done
    client, runs = _runs(db)
    (new,) = [r for r in runs if r.info.run_id != original_id]
    original = client.get_run(original_id)
    assert original.info.status == "FAILED" and original.data.tags["plcore.imported_as"] == new.info.run_id
    last = max(m.timestamp for m in client.get_metric_history(original_id, "fold/accuracy"))
    assert original.info.end_time == last
    assert new.info.status == "FINISHED" and new.data.tags["plcore.original_run_id"] == original_id
    assert len(client.get_metric_history(new.info.run_id, "fold/accuracy")) == 4
    monkeypatch.syspath_prepend(str(HERE / "faultlib"))  # the model's learner is faulty.SlowKnn: a pickle
    from plcore.run.predict import load_run_model

    model, classes, _ = load_run_model(new, f"sqlite:///{db}", trust=True)
    assert type(model.pipeline[-1]).__name__ == "SlowKnn" and len(classes) == 3
    from plcore.exceptions import TrackingError
    from plcore.run.importer import main as import_main

    with pytest.raises(TrackingError, match=f"was already imported into sqlite:///{db} as run {new.info.run_id}"):
        import_main([str(path), "--tracking-uri", f"sqlite:///{db}"])


def test_a_store_file_that_is_not_a_database_fails_in_one_line_before_any_work(tmp_path):
    (tmp_path / "mlflow.db").write_text("notes, not a database\n")
    proc = _start(CHEAP, tmp_path)
    out, err = proc.communicate(timeout=WAIT)
    assert proc.returncode == 2 and "n=150" not in out, (out, err)
    assert err.strip().splitlines() == [f"error: tracking store sqlite:///{tmp_path / 'mlflow.db'}: "
                                        f"{tmp_path / 'mlflow.db'} is not an SQLite database; move it away or name "
                                        "another file, or run with tracking=none or another MLFLOW_TRACKING_URI"], err


@pytest.mark.slow
def test_wrong_credentials_are_named_before_any_data_is_loaded(tmp_path, mlflow_server, monkeypatch):
    """An authenticating server (MLflow's basic-auth app) answers 401: one line naming
    MLFLOW_TRACKING_USERNAME / MLFLOW_TRACKING_PASSWORD, exit 2, before the data is loaded."""
    srv = tmp_path / "server"
    srv.mkdir()
    (srv / "auth.ini").write_text(
        "[mlflow]\ndefault_permission = READ\n"
        f"database_uri = sqlite:///{srv / 'basic_auth.db'}\n"
        "admin_username = admin\nadmin_password = plcore-admin-pw-1\n"
        "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n")
    monkeypatch.setenv("MLFLOW_AUTH_CONFIG_PATH", str(srv / "auth.ini"))
    monkeypatch.setenv("MLFLOW_FLASK_SERVER_SECRET_KEY", os.urandom(16).hex())
    server = mlflow_server(f"sqlite:///{srv / 'mlflow.db'}", srv, command="server",
                           extra_args=["--app-name", "basic-auth"])
    for user, words in (("admin", "user 'admin'"), (None, "no MLFLOW_TRACKING_USERNAME set")):
        creds = {"MLFLOW_TRACKING_USERNAME": user, "MLFLOW_TRACKING_PASSWORD": "wrong"} if user else {}
        proc = _start(CHEAP, tmp_path, MLFLOW_TRACKING_URI=server.url, **creds)
        out, err = proc.communicate(timeout=WAIT)
        assert proc.returncode == 2 and "n=150" not in out, (out, err)
        assert err.strip().splitlines() == [
            f"error: tracking server {server.url} refused the credentials ({words}; HTTP 401): set "
            "MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD (or MLFLOW_TRACKING_TOKEN) to an account of the "
            "server, or run with tracking=none"], err


def test_an_unusable_store_fails_in_one_line_before_any_work(tmp_path):
    """A store whose folder is missing (or a file), or that cannot be written, is refused before
    the data is loaded: one line, exit 2, nothing computed, no folder created."""
    (tmp_path / "blocked").write_text("a file where the store's folder should be")
    for uri in (f"sqlite:///{tmp_path / 'blocked' / 'mlflow.db'}", f"sqlite:///{tmp_path / 'no' / 'dir' / 'mlflow.db'}"):
        proc = _start(CHEAP, tmp_path, MLFLOW_TRACKING_URI=uri)
        out, err = proc.communicate(timeout=WAIT)
        assert proc.returncode == 2, err
        assert err.strip().splitlines() == [err.strip()] and err.startswith(f"error: tracking store {uri}: the folder"), err
        assert "[kfold" not in err and "accuracy" not in out, (out, err)  # before any work
    assert not (tmp_path / "no").exists() and not list(tmp_path.glob("outputs/*/*/plcore-unlogged-*.json"))


# ----------------------------------------------------------------------------- a failing component
def test_component_raising_in_fit_is_one_line_naming_its_failed_run(tmp_path):
    """An error that only fit can find ends the run FAILED (traceback as its artifact) and prints
    one line, exit 1; HYDRA_FULL_ERROR=1 shows the traceback."""
    args = SLOW + ["+learner.fail=true", "protocol.n_splits=2", "protocol.refit=false"]
    proc = _start(args, tmp_path)
    out, err = proc.communicate(timeout=WAIT)
    lines = [l for l in err.splitlines() if l.startswith(("error", "Traceback"))]
    assert proc.returncode == 1 and len(lines) == 1 and "Traceback" not in err, err
    client, (run,) = _runs(tmp_path / "mlflow.db")
    assert lines[0] == (f"error: RuntimeError: deliberate failure inside fit; run {run.info.run_id} ended FAILED "
                        "with the traceback as its artifact error/traceback.txt (HYDRA_FULL_ERROR=1 prints the "
                        "traceback)")
    assert run.info.status == "FAILED"
    full = _start(args, tmp_path, HYDRA_FULL_ERROR="1")
    out, err = full.communicate(timeout=WAIT)
    assert full.returncode == 1 and "Traceback" in err and "deliberate failure inside fit" in err


@pytest.mark.slow
def test_component_raising_in_fit_fails_its_run_and_the_sweep_goes_on(tmp_path):
    proc = _start(["-m"] + SLOW + ["+learner.fail=true,false", "protocol.n_splits=2", "protocol.refit=false"],
                  tmp_path)
    out, err = proc.communicate(timeout=WAIT)
    client, runs = _runs(tmp_path / "mlflow.db")
    by_fail = {r.data.params["learner.fail"]: r for r in runs}
    assert set(by_fail) == {"True", "False"}, (out, err)
    failed, ok = by_fail["True"], by_fail["False"]
    assert failed.info.status == "FAILED" and ok.info.status == "FINISHED"
    trace = Path(client.download_artifacts(failed.info.run_id, "error/traceback.txt", str(tmp_path)))
    assert "deliberate failure inside fit" in trace.read_text()
    assert proc.returncode != 0  # the sweep reports the failed job
