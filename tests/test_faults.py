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

HERE = Path(__file__).resolve().parent
SLOW = ["+learner=plknn", "learner._target_=faulty.SlowKnn", "dataset=iris", "bags.r=1", "progress=false"]
CHEAP = ["dataset=iris", "bags.r=1", "protocol.n_splits=2", "protocol.refit=false", "progress=false"]
WAIT = 180
LEAK_S = 317.5  # longer than WAIT, and a command line no other process has


def _env(**extra):
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    env.pop("MLFLOW_TRACKING_URI", None)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE / "faultlib")] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH")
                                                                     else []))
    env.update(extra)
    return env


def _start(args, cwd, **env):
    return subprocess.Popen([sys.executable, "-m", "plcore", *args], cwd=cwd, env=_env(**env),
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
@pytest.mark.parametrize("trial", range(5))
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
    """Create ``mlflow.db`` first (in another experiment), so that the tracking writer keeps up
    with the run under test instead of spending its first seconds creating the store."""
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
def test_a_run_whose_process_died_is_ended_killed_by_its_writer(tmp_path):
    """SIGKILL cannot be caught, but the tracking writer sees its pipe close and ends the run."""
    _create_store(tmp_path)
    proc = _start(SLOW + ["+learner.delay=1.0", "protocol.n_splits=10"], tmp_path)
    _wait_for_folds(tmp_path / "mlflow.db", 1, proc)
    proc.kill()
    proc.communicate(timeout=WAIT)
    client, (run,) = _runs(tmp_path / "mlflow.db")
    run = _wait_for_status(client, run.info.run_id, "KILLED")  # no other plcore process ran
    assert run.data.tags["plcore.ended_by"] == "its run process vanished before ending the run"
    folds = client.get_metric_history(run.info.run_id, "fold/accuracy")
    assert run.data.tags["plcore.folds_done"] == str(len(folds)) and 1 <= len(folds) < 10
    deadline = time.monotonic() + WAIT
    while not _pid_gone(int(run.data.tags["plcore.writer_pid"])):  # and the writer exits
        assert time.monotonic() < deadline, "the writer outlived its run"
        time.sleep(0.2)


@pytest.mark.slow
def test_sigterm_to_the_run_and_its_writer_ends_the_run_killed(tmp_path):
    """A scheduler (Slurm, systemd) signals every process: the writer ignores it, the run ends it."""
    _create_store(tmp_path)
    proc = _start(SLOW + ["+learner.delay=1.0", "protocol.n_splits=10"], tmp_path)
    _wait_for_folds(tmp_path / "mlflow.db", 2, proc)
    client, (run,) = _runs(tmp_path / "mlflow.db")
    os.kill(int(run.data.tags["plcore.writer_pid"]), signal.SIGTERM)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=WAIT)
    assert proc.returncode == 143, err
    run = client.get_run(run.info.run_id)
    assert run.info.status == "KILLED" and run.data.tags["plcore.ended_by"] == "SIGTERM"


@pytest.mark.slow
def test_a_killed_run_is_ended_even_while_a_child_holds_the_writers_pipe(tmp_path):
    """A helper process that inherited every descriptor keeps the pipe open: the writer sees its
    parent change instead, and ends the run."""
    _create_store(tmp_path)
    try:  # the child outlives the wait below: only the writer's watch on its parent can end the run
        proc = _start(SLOW + ["+learner.delay=1.0", f"+learner.leak_fds={LEAK_S}", "protocol.n_splits=10"],
                      tmp_path)
        _wait_for_folds(tmp_path / "mlflow.db", 1, proc)
        proc.kill()
        proc.communicate(timeout=WAIT)
        client, (run,) = _runs(tmp_path / "mlflow.db")
        run = _wait_for_status(client, run.info.run_id, "KILLED")
        assert run.data.tags["plcore.ended_by"] == "its run process vanished before ending the run"
    finally:
        try:
            subprocess.run(["pkill", "-f", f"sleep {LEAK_S}"], check=False)
        except FileNotFoundError:  # no pkill: the child ends by itself
            pass


def test_a_run_whose_process_and_writer_died_is_reaped(tmp_path):
    """Both processes killed (power loss, OOM of the group): the next run on the store ends it."""
    _create_store(tmp_path)
    proc = _start(SLOW + ["+learner.delay=1.0", "protocol.n_splits=10"], tmp_path)
    _wait_for_folds(tmp_path / "mlflow.db", 1, proc)
    client, (orphan,) = _runs(tmp_path / "mlflow.db")
    writer_pid = int(orphan.data.tags["plcore.writer_pid"])
    os.kill(writer_pid, signal.SIGKILL)
    proc.kill()
    proc.communicate(timeout=WAIT)
    assert client.get_run(orphan.info.run_id).info.status == "RUNNING"
    done = _start(CHEAP, tmp_path)
    assert done.wait(timeout=WAIT) == 0
    run = client.get_run(orphan.info.run_id)
    assert run.info.status == "KILLED" and run.data.tags["plcore.ended_by"].startswith("reaped")


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
    line = err.strip().splitlines()[-1]
    assert line.startswith(f"error: tracking store {server.url} failed during run ") and "written to" in line, err
    path = Path(line.rsplit("written to ", 1)[1])
    if not path.is_absolute():
        path = tmp_path / path
    record = json.loads(path.read_text())
    assert len(record["steps"]) == 6 and record["summary"]["accuracy_mean"] > 0.5  # nothing was lost
    assert record["params"]["learner.delay"] == "0.7"


@pytest.mark.slow
def test_tracking_writer_dying_mid_run_leaves_a_local_fallback(tmp_path):
    _create_store(tmp_path)
    proc = _start(SLOW + ["+learner.delay=1.0", "protocol.n_splits=10", "protocol.refit=false"], tmp_path)
    _wait_for_folds(tmp_path / "mlflow.db", 1, proc)
    client, (run,) = _runs(tmp_path / "mlflow.db")
    assert run.info.status == "RUNNING"  # killed while it writes the run
    os.kill(int(run.data.tags["plcore.writer_pid"]), signal.SIGKILL)
    out, err = proc.communicate(timeout=WAIT)
    assert proc.returncode == 2, err
    line = err.strip().splitlines()[-1]
    assert line.startswith("error: tracking store sqlite:///") and "tracking writer" in line, err
    record = json.loads(Path(line.rsplit("written to ", 1)[1]).read_text())
    assert len(record["steps"]) == 10 and record["summary"]["accuracy_mean"] > 0.5  # nothing was lost
    assert record["run_id"] == run.info.run_id


def test_a_store_that_cannot_be_opened_leaves_a_local_fallback(tmp_path):
    (tmp_path / "blocked").write_text("a file where the store's folder should be")
    uri = f"sqlite:///{tmp_path / 'blocked' / 'mlflow.db'}"
    proc = _start(CHEAP, tmp_path, MLFLOW_TRACKING_URI=uri)
    out, err = proc.communicate(timeout=WAIT)
    assert proc.returncode == 2, err
    line = err.strip().splitlines()[-1]
    assert line.startswith(f"error: tracking store {uri} could not be opened (") and "written to" in line, err
    record = json.loads(Path(line.rsplit("written to ", 1)[1]).read_text())
    assert len(record["steps"]) == 2 and record["run_id"] is None


@pytest.mark.slow
def test_inline_and_process_writers_log_the_same_run(tmp_path):
    for writer in ("inline", "process"):
        proc = _start(CHEAP + [f"tracking.writer={writer}", "protocol.refit=true"], tmp_path)
        out, err = proc.communicate(timeout=WAIT)
        assert proc.returncode == 0, err
    client, runs = _runs(tmp_path / "mlflow.db")
    inline, process = sorted(runs, key=lambda r: r.data.params["tracking.writer"])
    assert inline.info.status == process.info.status == "FINISHED"
    assert "plcore.writer_pid" in process.data.tags and "plcore.writer_pid" not in inline.data.tags
    skip = {"pid", "plcore.writer_pid", "hydra.output_dir", "overrides", "mlflow.runName"}
    assert ({k: v for k, v in inline.data.tags.items() if k not in skip}
            == {k: v for k, v in process.data.tags.items() if k not in skip})
    assert inline.data.metrics.keys() == process.data.metrics.keys()
    assert {k: v for k, v in inline.data.metrics.items() if "time" not in k} == \
        {k: v for k, v in process.data.metrics.items() if "time" not in k}
    assert {k: v for k, v in inline.data.params.items() if k != "tracking.writer"} == \
        {k: v for k, v in process.data.params.items() if k != "tracking.writer"}

    def artifacts(run_id, path=None):
        out = []
        for a in client.list_artifacts(run_id, path):
            out += artifacts(run_id, a.path) if a.is_dir else [a.path]
        return sorted(out)

    assert artifacts(inline.info.run_id) == artifacts(process.info.run_id)
    outputs = []
    for run in (inline, process):  # each model loads and predicts the same
        proc = subprocess.run([sys.executable, "-m", "plcore", "predict", f"run={run.info.run_id}", "data=iris",
                               f"out={run.info.run_id}.csv"], cwd=tmp_path, env=_env(), capture_output=True,
                              text=True, timeout=WAIT)
        assert proc.returncode == 0, proc.stderr
        outputs.append((tmp_path / f"{run.info.run_id}.csv").read_text())
    assert outputs[0] == outputs[1] and len(outputs[0].splitlines()) == 151


@pytest.mark.slow
def test_a_sequential_sweep_shares_one_writer(tmp_path):
    proc = _start(["-m"] + CHEAP + ["seed=0,1,2"], tmp_path)
    out, err = proc.communicate(timeout=WAIT)
    assert proc.returncode == 0, err
    client, runs = _runs(tmp_path / "mlflow.db")
    assert len(runs) == 3 and all(r.info.status == "FINISHED" for r in runs)
    assert len({r.data.tags["plcore.writer_pid"] for r in runs}) == 1


# ----------------------------------------------------------------------------- a failing component
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


# ----------------------------------------------------------------------------- the writer's pipe
def test_a_slow_writer_is_waited_for_with_a_notice(monkeypatch, caplog):
    """No deadline (a slow upload is not cut in half): the run says that it waits, and goes on."""
    import queue

    from plcore import tracking_writer

    w = tracking_writer.WriterConnection.__new__(tracking_writer.WriterConnection)
    w.replies, w.broken, w.pid, w._lock, w._pending = queue.Queue(), None, 4242, __import__("threading").Lock(), None
    monkeypatch.setattr(tracking_writer, "SLOW_NOTICE_S", 0.1)
    threading_timer = __import__("threading").Timer(0.35, w.replies.put, args=[("ended", "t", None)])
    threading_timer.start()
    with caplog.at_level("WARNING", logger="plcore.tracking_writer"):
        assert w.reply() == ("ended", "t", None)
    assert "waiting for the tracking writer (pid 4242) to finish writing the run" in caplog.text
    assert w.broken is None


def _fake_writer_run():
    """A WriterRun whose writer records the frames it is sent."""
    import queue

    from plcore.tracking_writer import WriterRun

    class Recorder:
        broken = None

        def __init__(self):
            self.frames, self.replies = [], queue.Queue()

        def send_frame(self, frame, fds=()):
            self.frames.append(frame)

    run = WriterRun.__new__(WriterRun)
    run.tcfg, run.steps, run.result, run.run_id, run.token = {}, [], None, None, "mine"
    run._fault, run._warned, run._writer = None, False, Recorder()
    return run


def test_replies_of_an_earlier_run_are_never_taken():
    run = _fake_writer_run()
    for reply in [("started", "earlier", "r0"), ("ended", "earlier", None), ("started", "mine", "r1"),
                  ("ended", "mine", None)]:
        run._writer.replies.put(reply)
    run._writer.reply = lambda: run._writer.replies.get_nowait()
    run.end("FINISHED")
    assert run.run_id == "r1" and run.fault is None


def test_steps_go_to_the_writer_as_plain_numbers_and_the_run_keeps_them_whole():
    import io

    from plcore.tracking_writer import _read_frame

    class Score(float):  # a value type the writer process could not import
        pass

    run = _fake_writer_run()
    run.log_step({"step": 2, "accuracy": Score(0.75), "label": "fold 2", "ok": True})
    op, step, ts = _read_frame(io.BytesIO(run._writer.frames[0]))
    assert op == "log_step" and step == {"accuracy": 0.75, "step": 2} and type(step["accuracy"]) is float
    assert run.steps == [{"step": 2, "accuracy": Score(0.75), "label": "fold 2", "ok": True}]


def test_an_unpicklable_message_is_a_fault_not_a_crash():
    run = _fake_writer_run()
    run.log_text(lambda: None, "x.txt")  # not picklable: nothing is written, the fault is kept
    assert run._writer.frames == [] and "could not send log_text" in run.fault


def test_frames_round_trip_and_a_cut_frame_reads_as_end_of_file():
    import io

    from plcore.tracking_writer import _HEADER, BadFrame, _read_frame, _write_frame

    buf = io.BytesIO()
    messages = [("log_step", {"step": 0, "accuracy": 0.5}), ("end", "FINISHED")]
    for msg in messages:
        _write_frame(buf, msg)
    data = buf.getvalue()
    stream = io.BytesIO(data)
    assert [_read_frame(stream), _read_frame(stream), _read_frame(stream)] == messages + [None]
    cut = io.BytesIO(data[: len(data) - 3])
    assert _read_frame(cut) == messages[0] and _read_frame(cut) is None  # a sender that died mid-write
    payload = b"cno_such_module_xyz\nThing\n."  # a whole frame naming a class this process lacks
    stream = io.BytesIO(_HEADER.pack(len(payload)) + payload + data)
    with pytest.raises(BadFrame, match="ModuleNotFoundError"):
        _read_frame(stream)
    assert _read_frame(stream) == messages[0]  # still in step
