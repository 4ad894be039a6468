"""MLflow's writes in a separate process that overlaps the run (``tracking.writer=process``).

A fresh process pays 2-4 s to import MLflow and its SQL store, and another 2 s at the run's
end for scikit-learn (to unpickle the model), matplotlib (plots) and MLflow's model logging
(docs/runs.md, "What tracking costs"). With the default ``tracking.writer=process`` the run
hands its writes to a **tracking writer** (:mod:`plcore._writer_process`) over a Unix socket:
the run's params and tags, each step, and the result; at the end it waits until the writer
has ended the MLflow run, so a finished command has written everything. One connection
serves every job of its process (a sequential sweep). Times (run start and end, metric
timestamps), the job's environment, working directory and ``sys.path`` are the run
process's, so both writers log the same run.

**The resident writer.** A writer stays after its command for ``tracking.writer_idle_s``
seconds (default :data:`DEFAULT_IDLE_S`; ``$PLCORE_WRITER_IDLE_S`` sets the default), with
MLflow imported, listening on a socket in ``$PLCORE_WRITER_DIR`` (default
``$XDG_RUNTIME_DIR/plcore-<uid>``, else ``/tmp/plcore-<uid>``, mode 0700). The next command
connects and gets a ``fork`` of it, which imports nothing: tracking then costs it a fraction
of a second. The socket's name is a digest of this interpreter, plcore's source files and
the installed packages (:func:`resident_path`), so an edited plcore or a new package starts
a new writer. ``tracking.writer_idle_s=0`` starts a writer for the command only;
``python -m plcore.tracking_writer stop`` stops the resident writers in that folder.
:func:`prestart` connects (or starts the writer) first thing, when ``python -m plcore``'s
command line runs one tracked job, so that its imports overlap Hydra's composition.

Faults, none of which loses a result:

* the run process dies (SIGKILL, out of memory): the writer reads end-of-file (or sees the
  process gone, should a forked child still hold the connection), ends the open run
  ``KILLED`` (``plcore.ended_by``) and exits;
* the writer dies, or its store fails, or a message cannot be read: the run goes on, keeps
  everything it logged, and at the end writes the local fallback file and raises
  :class:`~plcore.exceptions.TrackingError`, as ``tracking.writer=inline`` does;
* a writer that takes long is waited for (a notice after :data:`SLOW_NOTICE_S`); a Ctrl-C
  while waiting writes the fallback file too;
* a resident writer that was killed leaves its socket behind: the next command cannot
  connect, starts a new writer, which takes the lock and the path over.

Writers run in their own session and ignore SIGINT, SIGTERM and SIGHUP: a Ctrl-C at the
terminal, or a scheduler's SIGTERM to every process, reaches the run, which ends its run
``KILLED`` through the writer. Messages are length-prefixed pickles (cloudpickle for the
result, which holds the model), written with those signals blocked so that none is cut.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import math
import os
import pickle
import queue
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from plcore.tracking import _now_ms

log = logging.getLogger(__name__)

#: seconds after which the run says that it waits for its writer (and then every minute)
SLOW_NOTICE_S = 10.0
#: seconds a command waits for a resident writer to take its connection (a fork of it says
#: ``hello``; a writer still priming takes a few seconds) before it starts a writer of its own
HELLO_TIMEOUT_S = 60.0
#: frames larger than this wait for that ``hello`` first (smaller ones fit the socket's buffer)
_BUFFERED = 1 << 16
#: seconds a resident writer waits for the next command (``tracking.writer_idle_s``)
DEFAULT_IDLE_S = 300.0
_HEADER = struct.Struct("<Q")
_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class BadFrame(Exception):
    """A complete message that could not be unpickled (the stream is still in step)."""


def _frame(obj, dumps=pickle.dumps) -> bytes:
    data = dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return _HEADER.pack(len(data)) + data


def _write_frame(stream, obj, dumps=pickle.dumps) -> None:
    stream.write(_frame(obj, dumps))
    stream.flush()


def _read_frame(stream):
    """The next message; None at end-of-file (also a frame cut short by a dying sender);
    raises :class:`BadFrame` for a whole frame that does not unpickle."""
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(head)
    data = stream.read(size)
    if len(data) < size:
        return None
    try:
        return pickle.loads(data)
    except Exception as err:  # noqa: BLE001 - e.g. a class this process cannot import
        raise BadFrame(f"{type(err).__name__}: {err}") from None


@contextmanager
def _signals_blocked():
    """SIGINT / SIGTERM / SIGHUP held back (delivered after the block) in this thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


# ----------------------------------------------------------------------------- the resident writer
def _writer_dir() -> Path | None:
    """This user's folder of writer sockets (created 0700); None if it is not safely ours."""
    base = os.environ.get("PLCORE_WRITER_DIR") or os.path.join(
        os.environ.get("XDG_RUNTIME_DIR") or "/tmp", f"plcore-{os.getuid()}")
    try:
        os.makedirs(base, mode=0o700, exist_ok=True)
        st = os.stat(base)
    except OSError:
        return None
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        log.debug("not keeping a resident writer in %s: not this user's alone (mode 0700)", base)
        return None
    return Path(base)


def _stable_path() -> list[str]:
    """``sys.path`` without its first entry (the working directory for ``python -m``, a
    script's folder): what the writer's imports depend on, the same from any folder."""
    return [p for p in sys.path[1:] if p]


def _code_digest() -> str:
    """A digest of what a resident writer has imported: this interpreter, plcore's source files
    and ``sys.path`` with the times of its package folders (installing or upgrading a package
    changes them)."""
    h = hashlib.sha256(f"{os.path.realpath(sys.executable)}\0{sys.version}".encode())
    package = Path(__file__).resolve().parent
    for folder, dirs, files in os.walk(package):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                st = os.stat(os.path.join(folder, name))
                h.update(f"{folder}/{name}\0{st.st_mtime_ns}\0{st.st_size}\0".encode())
    for entry in _stable_path():
        h.update(f"{entry}\0".encode())
        if os.path.basename(entry) in ("site-packages", "dist-packages") and os.path.isdir(entry):
            h.update(f"{os.stat(entry).st_mtime_ns}\0".encode())
    return h.hexdigest()[:16]


def resident_path() -> Path | None:
    """The socket of this interpreter's resident writer (None where none can be kept)."""
    if not hasattr(socket, "AF_UNIX") or not hasattr(socket, "send_fds"):
        return None
    folder = _writer_dir()
    return None if folder is None else folder / f"writer-{_code_digest()}.sock"


def idle_seconds(value=None) -> float:
    """``tracking.writer_idle_s`` (``value``; default ``$PLCORE_WRITER_IDLE_S``, else
    :data:`DEFAULT_IDLE_S`) as seconds >= 0."""
    raw = os.environ.get("PLCORE_WRITER_IDLE_S", DEFAULT_IDLE_S) if value is None else value
    try:
        seconds = float(raw)
    except (TypeError, ValueError):
        seconds = -1.0
    if not 0 <= seconds < math.inf:
        from plcore.exceptions import ConfigError

        raise ConfigError(f"tracking.writer_idle_s must be a finite number of seconds >= 0, got {raw!r}")
    return seconds


def stop_resident(folder: Path | None = None) -> int:
    """Ask the resident writers in ``folder`` (default: this user's) to stop; they finish what
    they serve. Returns how many were asked."""
    import fcntl

    folder = _writer_dir() if folder is None else Path(folder)
    asked = 0
    for path in sorted(folder.glob("writer-*.sock.lock")) if folder is not None else []:
        try:
            with open(path) as lock:
                try:
                    fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
                    continue  # nobody holds it: no writer, and its pid may be anyone's now
                except BlockingIOError:
                    os.kill(int(lock.read().split()[0]), signal.SIGUSR1)  # its holder, still holding it
                    asked += 1
        except (OSError, ValueError, IndexError):
            continue
    return asked


# ----------------------------------------------------------------------------- the run's side
class WriterConnection:
    """The run process's connection to a writer (see the module docstring): to the resident
    writer when one listens, else to a writer started now (resident for ``idle_s`` seconds).

    A resident writer may close a connection before serving it (it was stopping, or was
    killed with connections queued): until it says ``hello``, what was sent is kept, and
    should the connection close first, a writer is started for this command and sent it all.
    """

    def __init__(self, idle_s: float = 0.0):
        self.owner = os.getpid()
        self.pid: int | None = None  # the writer serving us, once it said so
        self.process = None  # the last writer this process started
        self.broken: str | None = None
        self._lock = threading.Lock()
        self._pending: list | None = None  # (frame, fds) sent to a resident writer before its hello
        self._dropped = False
        self._served = threading.Event()  # the writer said hello
        self._since = time.monotonic()
        path = resident_path() if idle_s > 0 else None
        sock = self._connect(path) if path is not None else None
        if sock is not None:
            self._pending = []
        else:
            sock = self._start_writer(path, idle_s)
        self._attach(sock)
        self.send(("hello", os.getpid()))

    @staticmethod
    def _connect(path: Path) -> socket.socket | None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(path))
        except OSError:  # none there, or one that was killed: start one
            sock.close()
            return None
        return sock

    def _start_writer(self, path: Path | None, idle_s: float) -> socket.socket:
        ours, theirs = socket.socketpair()
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
        here = str(Path(__file__).resolve().parent.parent)  # plcore, installed or not
        env["PYTHONPATH"] = os.pathsep.join([here] + _stable_path() +
                                            ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        args = [sys.executable, "-m", "plcore._writer_process", "--fd", str(theirs.fileno())]
        if path is not None:
            args += ["--listen", str(path), "--idle", repr(idle_s)]
        try:
            self.process = subprocess.Popen(args, pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                                            cwd="/", start_new_session=True)
        except OSError:
            ours.close()
            raise
        finally:
            theirs.close()
        return ours

    def _attach(self, sock: socket.socket) -> None:
        self.sock = sock
        self.replies: queue.Queue = queue.Queue()
        self.closed = threading.Event()
        threading.Thread(target=self._read_replies, args=(sock, self.replies, self.closed),
                         name="plcore-tracking-replies", daemon=True).start()

    def _read_replies(self, sock: socket.socket, replies: queue.Queue, closed: threading.Event):
        stream = sock.makefile("rb")
        while True:
            try:
                msg = _read_frame(stream)
            except Exception:  # noqa: BLE001 - a garbled reply: treat the writer as gone
                msg = None
            with self._lock:
                if sock is not self.sock:  # a connection given up on: nothing it says counts
                    return
                if msg is not None and msg[0] == "hello":
                    self.pid, self._pending = msg[2], None
                    self._served.set()
                    continue
                unserved = msg is None and self._pending is not None
                self._dropped = self._dropped or unserved
            if msg is None:
                closed.set()
                replies.put(_DROPPED if unserved else None)
                return
            replies.put(msg)

    def _unserved_for(self) -> float | None:
        """Seconds this connection has waited for a resident writer's hello (None: served)."""
        with self._lock:
            return None if self._pending is None else time.monotonic() - self._since

    def _fall_back(self) -> None:
        """The resident writer closed the connection unserved: start a writer for this command
        and send it everything sent so far."""
        with self._lock:
            pending, self._pending, self._dropped = self._pending or [], None, False
        log.debug("the resident tracking writer did not serve the connection; starting one for this command")
        try:
            old = self.sock
            try:
                old.shutdown(socket.SHUT_RDWR)  # a writer that took it after all reads end-of-file
            except OSError:
                pass
            with self._lock:
                self.sock = self._start_writer(None, 0.0)
            old.close()
            self._attach(self.sock)
            for frame, fds in pending:
                self._send_raw(frame, fds)
        except (OSError, ValueError) as err:
            self.broken = f"could not start a tracking writer after the resident one closed the connection ({err})"

    def _after_fork_in_child(self):
        """A forked child must not keep the connection open (the writer would not see the run
        process die). Its descriptor is pointed at /dev/null: closing the socket could wait for
        a lock that the parent's reply thread held at the fork."""
        try:
            null = os.open(os.devnull, os.O_RDWR)
            os.dup2(null, self.sock.fileno())
            os.close(null)
        except (OSError, ValueError):
            pass
        self.broken = "a forked child does not write to its parent's tracking writer"

    @property
    def name(self) -> str:
        return "the tracking writer" + (f" (pid {self.pid})" if self.pid else "")

    @property
    def usable(self) -> bool:
        return self.owner == os.getpid() and self.broken is None and (self._dropped or not self.closed.is_set())

    def _send_raw(self, frame: bytes, fds=()) -> None:
        with _signals_blocked():  # a signal must not cut a frame in half
            sent = 0
            if fds:
                try:
                    sent = socket.send_fds(self.sock, [frame], list(fds))
                except OSError as err:
                    if err.errno != errno.EBADF:  # no such descriptor (a closed stderr): send without
                        raise
            self.sock.sendall(memoryview(frame)[sent:])

    def send_frame(self, frame: bytes, fds=()) -> None:
        """Send one frame (with ``fds`` passed along); a writer that is gone marks us broken."""
        if self.broken is not None:
            return
        waited = self._unserved_for()
        if self._dropped or (waited is not None and len(frame) > _BUFFERED and not self._await_hello(waited)):
            self._fall_back()  # a large frame would block on a connection nobody reads
            if self.broken is not None:
                return
        with self._lock:
            unserved = self._pending is not None
            if unserved:
                self._pending.append((frame, fds))
        try:
            self._send_raw(frame, fds)
        except (OSError, ValueError) as err:  # BrokenPipeError: the writer died
            if unserved:
                self._fall_back()  # sends this frame again, to the new writer
            else:
                self.broken = f"{self.name} exited ({err})"

    def send(self, msg, fds=()) -> None:
        self.send_frame(_frame(msg), fds)

    def _await_hello(self, waited: float) -> bool:
        """Whether the resident writer says hello within :data:`HELLO_TIMEOUT_S` of connecting."""
        return self._served.wait(max(0.0, HELLO_TIMEOUT_S - waited)) or self._unserved_for() is None

    def reply(self):
        """The next reply, waiting as long as the writer lives (a notice on stderr after
        :data:`SLOW_NOTICE_S`, then every minute); None once it has gone."""
        wait, waited = SLOW_NOTICE_S, 0.0
        while True:
            unserved = self._unserved_for()
            try:
                msg = self.replies.get(timeout=wait if unserved is None else
                                       max(0.01, min(wait, HELLO_TIMEOUT_S - unserved)))
            except queue.Empty:
                unserved = self._unserved_for()
                if unserved is not None and unserved >= HELLO_TIMEOUT_S:  # a resident writer not serving
                    msg = _DROPPED
                else:
                    waited += wait
                    log.warning("waiting for %s to finish writing the run (%.0f s)", self.name, waited)
                    wait = 60.0
                    continue
            if msg is _DROPPED:
                self._fall_back()
                if self.broken is None:
                    continue
                msg = None
            break
        if msg is None:
            self.broken = self.broken or f"{self.name} exited before it had written the run"
        return msg

    def close(self):
        """No more runs: the writer's server ends after what it was sent. Not waited for:
        every run it served has been ended."""
        if self.owner != os.getpid():
            return
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass


#: the reply that says a resident writer closed the connection without serving it
_DROPPED = ("dropped", None, None)


_WRITER: WriterConnection | None = None
_LOCK = threading.Lock()


def _connect_writer(idle_s: float) -> WriterConnection:
    global _WRITER
    if _WRITER is None:
        import atexit

        atexit.register(_close_writer)
        os.register_at_fork(after_in_child=_forget_in_child)
    _WRITER = WriterConnection(idle_s)
    return _WRITER


def _forget_in_child():
    global _WRITER
    if _WRITER is not None:
        _WRITER._after_fork_in_child()
        _WRITER = None


def writer(tcfg: dict) -> WriterConnection:
    """This process's connection to a writer (made now if there is none usable), asked to
    connect to ``tcfg``'s store (read only: nothing is created before the job's input is checked)."""
    idle_s = idle_seconds(tcfg.get("writer_idle_s"))
    with _LOCK:
        if _WRITER is None or not _WRITER.usable:
            try:
                _connect_writer(idle_s)
            except OSError as err:
                from plcore.exceptions import TrackingError

                raise TrackingError(f"could not start the tracking writer process ({err}); "
                                    "run with tracking.writer=inline or tracking=none") from None
        _WRITER.send(("open", _store_key(tcfg)))
        return _WRITER


def prestart(argv=()) -> None:
    """Connect to (or start) this process's writer before the job's config is even composed
    (``python -m plcore`` with one job and tracking not turned off on the command line), so
    that MLflow is imported while the job starts. ``tracking.writer_idle_s=S`` on the command
    line is honoured. If the job turns out untracked, the connection closes unused."""
    idle = [a.split("=", 1)[1] for a in argv if a.startswith("tracking.writer_idle_s=")]
    with _LOCK:
        if _WRITER is None:
            try:
                _connect_writer(idle_seconds(idle[-1] if idle else None))
            except Exception:  # noqa: BLE001 - the job connects itself, and reports it
                pass


def _close_writer():
    if _WRITER is not None:
        _WRITER.close()


def _store_key(tcfg: dict) -> tuple[str, str]:
    return tcfg["tracking_uri"], tcfg.get("experiment_name") or "plcore"


class WriterRun:
    """The run's handle when its writes go to a :class:`WriterConnection` (same methods as
    :class:`plcore.tracking.MlflowRun`). Keeps the steps and the result for the fallback file.
    Replies carry this run's token, so a reply left from an earlier run is never taken."""

    def __init__(self, tcfg: dict, *, params: dict, tags: dict, config_yaml: str, run_name: str | None,
                 step_name: str):
        self.tcfg = tcfg
        self.steps: list = []
        self.result = None
        self.run_id: str | None = None
        self.token = os.urandom(8).hex()
        self._fault: str | None = None
        self._warned = False
        self._writer = writer(tcfg)
        self._send("start", self.token, dict(
            tcfg=tcfg, params=params, tags=tags, config_yaml=config_yaml, run_name=run_name,
            step_name=step_name, start_time=_now_ms()), dict(os.environ), os.getcwd(), list(sys.path),
            fds=(2,))  # the run's stderr, for what MLflow says while writing it

    @property
    def fault(self) -> str | None:
        fault = self._fault or self._writer.broken
        if fault is not None and not self._warned:
            self._warned = True
            log.warning("tracking failed (%s); the run continues and is saved locally at the end", fault)
        return fault

    def _send(self, *msg, dumps=pickle.dumps, fds=()):
        if self.fault is not None:
            return
        try:
            frame = _frame(msg, dumps)
        except Exception as err:  # noqa: BLE001 - nothing was written; the run keeps it for the fallback
            self._fault = f"could not send {msg[0]} to the tracking writer ({type(err).__name__}: {err})"
            return
        self._writer.send_frame(frame, fds)

    def log_step(self, step: dict):
        from plcore.tracking import _numeric

        self.steps.append(dict(step))
        self._send("log_step", {**_numeric(step), "step": int(step.get("step", 0))}, _now_ms())

    def set_tag(self, key: str, value):
        self._send("set_tag", key, str(value))

    def log_text(self, text: str, path: str):
        self._send("log_text", text, path)

    def log_dataset(self, dataset):
        from plcore.tracking import dataset_info

        self._send("log_dataset", dataset_info(dataset))

    def log_result(self, result):
        import cloudpickle

        self.result = result
        try:
            payload = cloudpickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as err:  # noqa: BLE001 - an unpicklable model: log the rest
            log.warning("the fitted model cannot be pickled (%s); the run is logged without it", err)
            from dataclasses import replace

            try:
                payload = cloudpickle.dumps(replace(result, model=None), protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as err2:  # noqa: BLE001 - kept for the fallback file
                self._fault = f"the run's result cannot be sent to the tracking writer ({err2})"
                return
        self._send("log_result", payload, _now_ms())

    def mark_killed(self, reason: str):
        self._send("mark_killed", reason)

    def mark_failed(self, traceback_text: str):
        self._send("mark_failed", traceback_text)

    def end(self, status: str):
        """Ask the writer to end the run with ``status`` and wait until it has (or failed)."""
        self._send("end", self.token, status, _now_ms())
        while self.fault is None:
            msg = self._writer.reply()
            if msg is None or self._take(msg):
                break
        while True:  # a writer that died may still have said which run it opened
            try:
                msg = self._writer.replies.get_nowait()
            except queue.Empty:
                break
            if msg is not None:
                self._take(msg)

    def _take(self, msg) -> bool:
        """Note one reply of this run; True once the run is over (ended, or not opened)."""
        kind, token, value = msg
        if token != self.token:  # left from an earlier run whose wait was cut short
            return False
        if kind == "started":
            self.run_id = value
            return False
        self._fault = value  # "ended": None when everything was written; "failed": why not
        return True


def main(argv=None) -> int:
    """``python -m plcore.tracking_writer stop``: stop the resident writers of the writers' folder."""
    argv = sys.argv[1:] if argv is None else argv
    if argv != ["stop"]:
        print("usage: python -m plcore.tracking_writer stop", file=sys.stderr)
        return 2
    print(f"asked {stop_resident()} resident tracking writer(s) to stop")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
