"""The resident tracking writer (plcore.tracking_writer, plcore._writer_process): a command
reuses the writer an earlier one left, with MLflow imported; it goes away when idle, when
stopped, or when killed, and nothing is lost on the way. Every test is bounded in time."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from plcore.tracking_writer import _code_digest, stop_resident

CHEAP = ["dataset=iris", "bags.r=1", "protocol.n_splits=2", "protocol.refit=false", "progress=false"]
WAIT = 180


@pytest.fixture
def writers():
    """A short folder of its own for the writers' sockets (a Unix socket path has ~100 bytes)."""
    folder = Path(tempfile.mkdtemp(prefix="plw-"))
    yield folder
    stop_resident(folder)


def _run(args, cwd, writers: Path, **env):
    env = dict(os.environ, OMP_NUM_THREADS="1", PLCORE_WRITER_DIR=str(writers), **env)
    env.pop("MLFLOW_TRACKING_URI", None)
    return subprocess.run([sys.executable, "-m", "plcore", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=WAIT)


def _resident_pid(writers: Path) -> int | None:
    """The pid in the resident writer's lock file, if that process lives."""
    locks = list(writers.glob("writer-*.sock.lock"))
    if not locks:
        return None
    text = locks[0].read_text().strip()
    if not text:
        return None
    pid = int(text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    return pid if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z" else None


def _runs(cwd: Path):
    import mlflow

    client = mlflow.tracking.MlflowClient(tracking_uri=f"sqlite:///{cwd / 'mlflow.db'}")
    exp = client.get_experiment_by_name("plcore")
    return client.search_runs([exp.experiment_id]) if exp else []


def _wait(condition, what: str):
    deadline = time.monotonic() + WAIT
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.2)


def test_the_next_command_is_served_by_the_resident_writer(tmp_path, writers):
    first = _run(CHEAP, tmp_path, writers)
    assert first.returncode == 0, first.stderr
    resident = _resident_pid(writers)
    assert resident is not None and (writers / next(writers.glob("*.lock")).name[:-5]).exists()
    other = tmp_path / "elsewhere"  # another folder, store and environment: the same writer
    other.mkdir()
    second = _run(CHEAP + ["seed=7"], other, writers, PLCORE_EXTRA="x")
    assert second.returncode == 0, second.stderr
    assert _resident_pid(writers) == resident and len(list(writers.glob("*.lock"))) == 1
    (run1,), (run2,) = _runs(tmp_path), _runs(other)  # each run in its own command's store
    assert run1.info.status == run2.info.status == "FINISHED"
    assert run2.data.params["seed"] == "7" and "mlflow.db" not in os.listdir(writers)
    writer_pids = {int(r.data.tags["plcore.writer_pid"]) for r in (run1, run2)}
    assert len(writer_pids) == 2 and resident not in writer_pids  # a fork of it served each command


def test_an_idle_resident_writer_exits_and_the_next_command_starts_one(tmp_path, writers):
    proc = _run(CHEAP, tmp_path, writers, PLCORE_WRITER_IDLE_S="1")
    assert proc.returncode == 0, proc.stderr
    _wait(lambda: _resident_pid(writers) is None, "the idle writer did not exit")
    assert not list(writers.glob("*.sock"))  # it removed its socket
    again = _run(CHEAP, tmp_path, writers, PLCORE_WRITER_IDLE_S="1")
    assert again.returncode == 0, again.stderr
    assert [r.info.status for r in _runs(tmp_path)] == ["FINISHED", "FINISHED"]


def test_writer_idle_0_leaves_no_resident_writer(tmp_path, writers):
    proc = _run(CHEAP + ["tracking.writer_idle_s=0"], tmp_path, writers)
    assert proc.returncode == 0, proc.stderr
    assert not list(writers.iterdir())
    (run,) = _runs(tmp_path)
    assert run.info.status == "FINISHED"


def test_a_bad_idle_time_fails_in_one_line(tmp_path, writers):
    for bad in ("soon", "inf", "-1"):
        proc = _run(CHEAP + [f"tracking.writer_idle_s={bad}"], tmp_path, writers)
        assert proc.returncode == 2
        line = proc.stderr.strip().splitlines()[-1]
        assert line in (f"error: tracking.writer_idle_s must be a finite number of seconds >= 0, got {v}"
                        for v in (bad, repr(bad), float(bad) if bad != "soon" else None)), line


def test_a_killed_resident_writer_is_replaced(tmp_path, writers):
    assert _run(CHEAP, tmp_path, writers).returncode == 0
    old = _resident_pid(writers)
    os.kill(old, signal.SIGKILL)
    _wait(lambda: _resident_pid(writers) is None, "the writer did not die")
    assert list(writers.glob("*.sock"))  # its socket is left behind: nobody listens on it
    proc = _run(CHEAP, tmp_path, writers)
    assert proc.returncode == 0, proc.stderr
    new = _resident_pid(writers)
    assert new is not None and new != old
    assert [r.info.status for r in _runs(tmp_path)] == ["FINISHED", "FINISHED"]


def test_commands_starting_together_share_one_resident_writer(tmp_path, writers):
    _run(CHEAP + ["tracking.writer_idle_s=0"], tmp_path, writers)  # the store exists first
    results = [None] * 3

    def go(i):
        results[i] = _run(CHEAP + [f"seed={i}"], tmp_path, writers)

    threads = [threading.Thread(target=go, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT)
    assert all(r is not None and r.returncode == 0 for r in results), [r and r.stderr for r in results]
    assert sorted(r.info.status for r in _runs(tmp_path)) == ["FINISHED"] * 4
    assert _resident_pid(writers) is not None and len(list(writers.glob("*.lock"))) == 1


def test_stop_asks_the_resident_writer_to_exit(tmp_path, writers):
    assert _run(CHEAP, tmp_path, writers).returncode == 0
    assert _resident_pid(writers) is not None
    assert stop_resident(writers) == 1
    _wait(lambda: _resident_pid(writers) is None, "the stopped writer did not exit")
    assert not list(writers.glob("*.sock"))


def test_the_writer_socket_name_follows_the_installed_packages(monkeypatch, tmp_path):
    """An upgraded package or an edited plcore must not be served by a writer that imported the
    old one: the digest in the socket's name changes with them."""
    site = tmp_path / "site-packages"
    site.mkdir()
    before = _code_digest()
    assert _code_digest() == before  # stable
    monkeypatch.setattr(sys, "path", sys.path[:1] + [str(site)] + sys.path[1:])  # [0]: the invocation's
    with_site = _code_digest()
    assert with_site != before
    os.utime(site, ns=(0, 10**18))  # a package installed there
    installed = _code_digest()
    assert installed != with_site
    monkeypatch.setattr(sys, "path", [str(tmp_path)] + sys.path[1:])  # started from another folder
    assert _code_digest() == installed  # sys.path[0] (the working directory) does not count


def test_a_fork_of_the_run_process_neither_hangs_nor_holds_the_connection(tmp_path):
    """The reply thread is blocked reading the connection: a forked child (multiprocessing,
    a DataLoader's workers) must not wait for its lock, and must not keep the writer's
    connection open."""
    script = ("import os, sys\n"
              "from plcore.tracking_writer import writer\n"
              "w = writer({'tracking_uri': 'sqlite:///' + os.path.abspath('mlflow.db'), 'writer_idle_s': 0})\n"
              "pid = os.fork()\n"
              "if pid == 0:\n"
              "    os._exit(0 if os.fstat(w.sock.fileno()).st_rdev == os.stat(os.devnull).st_rdev else 3)\n"
              "_, status = os.waitpid(pid, 0)\n"
              "print('child', os.waitstatus_to_exitcode(status))\n")
    proc = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PLCORE_WRITER_IDLE_S="0"))
    assert proc.returncode == 0 and proc.stdout.strip() == "child 0", proc.stderr


def _bounded(fn, timeout=WAIT):
    """``fn()`` in a thread, failing the test if it has not returned within ``timeout`` s."""
    out = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), f"{fn} did not return within {timeout} s"
    return out[0]


@pytest.fixture
def fake_resident(monkeypatch, writers):
    """A socket where the resident writer's would be, whose listener never serves anyone."""
    import socket

    from plcore import tracking_writer

    path = writers / "w.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(4)
    monkeypatch.setattr(tracking_writer, "resident_path", lambda: path)
    yield listener
    listener.close()


def _unreadable_frame() -> bytes:
    from plcore.tracking_writer import _HEADER

    payload = b"cno_such_module_xyz\nThing\n."  # a whole frame naming a class no process has
    return _HEADER.pack(len(payload)) + payload


def test_a_connection_closed_unserved_is_sent_again_to_a_writer_of_its_own(fake_resident):
    """A resident writer that stops (or is killed) with a command's connection still queued:
    the command starts its own writer and sends it everything again, in order."""
    from plcore.tracking_writer import WriterConnection

    conn = WriterConnection(idle_s=300)
    try:
        assert conn.process is None  # it connected to the "resident writer"
        conn.send_frame(_unreadable_frame())  # both wait in the queued connection's buffer
        conn.send(("end", "token", "FINISHED", 0))
        queued, _ = fake_resident.accept()
        queued.close()  # ... which the writer closes unread
        reply = _bounded(conn.reply)  # answered by a writer of its own, which got both frames
        assert reply[:2] == ("failed", "token") and "could not be read: ModuleNotFoundError" in reply[2], reply
        assert conn.process is not None and conn.pid == conn.process.pid and conn.broken is None
    finally:
        conn.close()
        if conn.process is not None:
            conn.process.wait(timeout=WAIT)


def test_a_resident_writer_that_never_serves_is_given_up_after_a_while(monkeypatch, fake_resident):
    """Alive but not serving (stopped, stuck): after HELLO_TIMEOUT_S the command starts its own."""
    from plcore import tracking_writer

    monkeypatch.setattr(tracking_writer, "HELLO_TIMEOUT_S", 1.0)
    conn = tracking_writer.WriterConnection(idle_s=300)
    try:
        conn.send(("end", "token", "FINISHED", 0))
        assert _bounded(conn.reply) == ("failed", "token", "no run was opened")
        assert conn.process is not None and conn.broken is None
    finally:
        conn.close()
        if conn.process is not None:
            conn.process.wait(timeout=WAIT)


def test_stop_never_signals_a_pid_left_in_a_released_lock(writers):
    """A lock file nobody holds names a pid that may be anyone's now: it is not signalled."""
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        (writers / "writer-0123456789abcdef.sock.lock").write_text(f"{bystander.pid}\n")
        assert stop_resident(writers) == 0
        time.sleep(0.2)
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()
