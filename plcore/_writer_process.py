"""The tracking writer's own process: ``python -m plcore._writer_process`` (see
:mod:`plcore.tracking_writer`, which starts it and talks to it).

One writer process imports MLflow, its SQL store and scikit-learn (:func:`_prime`), then
serves connections. Each connection is one run process; it is served by a ``fork`` of the
primed writer (:func:`serve_connection`), so no state is shared between two commands. With
``--listen PATH`` the writer stays **resident**: it holds ``PATH.lock``, listens on the Unix
socket ``PATH``, and forks a server for every command that connects, until nobody has
connected for ``--idle`` seconds (or it gets SIGUSR1); then it removes ``PATH``, releases the
lock, serves what was already queued, and exits. Without ``--listen`` it serves the one
connection it was started with, in-process, and exits.

The process ignores SIGINT, SIGTERM and SIGHUP (a run ends its run through it), is started
with its standard streams on /dev/null, and writes to a run's stderr only once the run has
sent it (with the ``start`` message). It serves only its own user (``SO_PEERCRED``), and its
socket is created under umask 077.
"""

from __future__ import annotations

import array
import fcntl
import importlib
import logging
import os
import pickle
import queue
import signal
import socket
import struct
import sys
import threading
import time

from plcore.tracking import _pid_alive
from plcore.tracking_writer import _SIGNALS, BadFrame, _frame, _read_frame

log = logging.getLogger("plcore.tracking_writer")

#: seconds between two checks that the run process still lives
WATCH_INTERVAL_S = 1.0


#: set by SIGUSR1 (``python -m plcore.tracking_writer stop``): a resident writer stops taking
#: commands within a second (a plain flag: a handler must take no lock)
_STOPPING = False


def _on_stop(signum, frame):
    global _STOPPING
    _STOPPING = True


# ----------------------------------------------------------------------------- one run process
class _Session:
    """The writer's state for one connection: the open run (one at a time) and what it was asked."""

    def __init__(self, reply, prime_error: str | None):
        from plcore import tracking

        self.tracking = tracking
        self.reply = reply
        self.prime_error = prime_error
        self.handle = None
        self.token = None
        self.unread: str | None = None  # why a message could not be read while no run was open

    def open(self, key):
        """Connect to an existing store, read only (the job's input is not checked yet)."""
        path = self.tracking._sqlite_file(key[0])
        if self.prime_error is None and path is not None and path.is_file() and path.stat().st_size > 0:
            from mlflow.tracking import MlflowClient

            MlflowClient(tracking_uri=key[0]).get_experiment_by_name(key[1])

    def start(self, token, kw, environ, cwd, path):
        """Open the run in the run process's environment, working directory and ``sys.path``."""
        if self.handle is not None:  # cannot happen in order; never leave a run open
            self.handle.mark_killed("a new run started before it ended")
            self.end("KILLED")
        self.token = token
        if self.prime_error is not None:
            self.reply(("failed", token, f"the tracking writer could not import MLflow ({self.prime_error})"))
            return
        for name in set(os.environ) - set(environ):
            del os.environ[name]
        os.environ.update(environ)
        os.chdir(cwd)
        sys.path[:] = path  # the run's modules (a plugin on its PYTHONPATH) unpickle here
        importlib.invalidate_caches()
        kw["tags"] = {**kw["tags"], "plcore.writer_pid": str(os.getpid())}
        try:
            self.handle = self.tracking.open_run(**kw)
        except Exception as err:  # noqa: BLE001 - reported to the run, which keeps its results
            self.reply(("failed", token, f"{type(err).__name__}: {err}"))
            return
        self.reply(("started", token, self.handle.run_id))
        try:
            _warm_up(kw["tcfg"], kw["params"])
        except Exception as err:  # noqa: BLE001 - only a head start: the real use reports it
            log.debug("warm-up import failed: %s", err)

    def end(self, status, end_time=None):
        handle, self.handle = self.handle, None
        handle.end(status, end_time)
        fault = handle.fault
        self.reply(("ended", self.token, None if fault is None else self.tracking._describe(fault)))

    def vanished(self):
        """The run process is gone: end its open run KILLED."""
        if self.handle is not None:
            self.handle.mark_killed("its run process vanished before ending the run")
            self.end("KILLED")

    def handle_message(self, msg):
        op, *args = msg
        if op == "stderr":  # the run's stderr (sent with "start"): MLflow's warnings go there
            fd = args[0]
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.close(fd)
        elif op == "open":
            try:
                self.open(*args)
            except Exception as err:  # noqa: BLE001 - "start" connects again and reports it
                log.debug("could not connect early: %s", err)
        elif op == "start":
            self.start(*args)
        elif self.handle is None:  # the run could not be opened: nothing to write to
            if op == "bad_frame":
                self.unread = self.unread or args[0]
            elif op == "end":  # say so, or the run would wait for its end forever
                why = f"a message could not be read: {self.unread}" if self.unread else "no run was opened"
                self.reply(("failed", args[0], why))
        elif op == "end":
            self.end(*args[1:])
        elif op == "bad_frame":
            self.handle.fault = self.handle.fault or RuntimeError(f"a message could not be read: {args[0]}")
        else:
            try:
                if op == "log_result":
                    self.handle.log_result(pickle.loads(args[0]), *args[1:])
                else:
                    getattr(self.handle, op)(*args)
            except Exception as err:  # noqa: BLE001 - e.g. a result this process cannot unpickle
                self.handle.fault = self.handle.fault or err


class _SocketReader:
    """``read(n)`` over a connected socket, keeping the descriptors sent along (SCM_RIGHTS)."""

    _ANCILLARY = socket.CMSG_SPACE(4 * array.array("i").itemsize)

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.buffer = bytearray()
        self.fds: list[int] = []

    def read(self, n: int) -> bytes:
        while len(self.buffer) < n:
            data, ancillary, _, _ = self.sock.recvmsg(max(65536, n - len(self.buffer)), self._ANCILLARY)
            for level, kind, payload in ancillary:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds = array.array("i")
                    fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
                    self.fds.extend(fds)
            if not data:
                break
            self.buffer += data
        out = bytes(self.buffer[:n])
        del self.buffer[:n]
        return out

    def take_fds(self) -> list[int]:
        fds, self.fds = self.fds, []
        return fds


def _peer(conn: socket.socket) -> tuple[int | None, int | None]:
    """The connected process's pid and uid (``SO_PEERCRED``; Nones where the system lacks it)."""
    try:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("iII"))
    except (AttributeError, OSError):
        return None, None
    pid, uid, _ = struct.unpack("iII", creds)
    return pid, uid


def serve_connection(conn: socket.socket, prime_error: str | None = None) -> int:
    """Serve one run process on ``conn`` until it closes it or dies; its open run then ends
    ``KILLED``. The run process says its pid first (``hello``): a forked child of it may still
    hold the connection after it died, so the run process itself is watched too."""
    inbox: queue.Queue = queue.Queue()
    gone = threading.Lock()
    sending = threading.Lock()
    stream = _SocketReader(conn)

    def run_process_gone():
        if gone.acquire(blocking=False):
            inbox.put(None)

    def watch(pid: int):
        while _pid_alive(pid):
            time.sleep(WATCH_INTERVAL_S)
        time.sleep(2.0)  # end-of-file, if it comes, comes first, after the last messages
        run_process_gone()

    def read():
        while True:
            try:
                msg = _read_frame(stream)
            except BadFrame as err:
                msg = ("bad_frame", str(err))
            except Exception:  # noqa: BLE001 - a reset connection reads as end-of-file
                msg = None
            for fd in stream.take_fds():
                inbox.put(("stderr", fd))
            if msg is None:
                run_process_gone()
                return
            if msg[0] == "hello":  # the run process's pid, where the kernel does not say it
                if peer_pid is None:  # (0: a process of another pid namespace: not watched)
                    threading.Thread(target=watch, args=(msg[1],), name="plcore-tracking-watch",
                                     daemon=True).start()
            else:
                inbox.put(msg)

    def reply(msg):
        with sending:
            try:
                conn.sendall(_frame(msg))
            except OSError:
                pass

    peer_pid, peer_uid = _peer(conn)
    if peer_uid is not None and peer_uid != os.getuid():
        conn.close()  # not our user: serve nothing
        return 0
    if peer_pid:  # the kernel's word, in this process's pid namespace
        threading.Thread(target=watch, args=(peer_pid,), name="plcore-tracking-watch", daemon=True).start()
    threading.Thread(target=read, name="plcore-tracking-inbox", daemon=True).start()
    reply(("hello", None, os.getpid()))
    session = _Session(reply, prime_error)
    while True:
        msg = inbox.get()
        if msg is None:  # the run process closed the connection, or died
            session.vanished()
            break
        session.handle_message(msg)
    sys.stdout.flush()
    sys.stderr.flush()
    return 0


# ----------------------------------------------------------------------------- the primed process
#: what a run's end imports: for the plots, and for MLflow's model logging (GitPython: the
#: logged model's git tags)
_PLOT_MODULES = ("matplotlib.figure", "matplotlib.backends.backend_agg")
_MODEL_MODULES = ("mlflow.models", "mlflow.sklearn", "git")


def _prime(resident: bool) -> None:
    """Import MLflow's client and SQL store (2-4 s, most of a run's tracking cost; not the SQL
    store when ``$MLFLOW_TRACKING_URI`` names a server), then scikit-learn (to unpickle results);
    a resident writer also what a run's end imports (its forks then import nothing of it)."""
    modules = ["mlflow.tracking"]
    if not os.environ.get("MLFLOW_TRACKING_URI", "sqlite:").startswith(("http:", "https:", "databricks")):
        modules.append("mlflow.store.tracking.sqlalchemy_store")  # the default store: SQLite
    modules.append("plcore.protocols")  # scikit-learn
    for module in modules:
        importlib.import_module(module)
    if resident:
        _import_quietly(_PLOT_MODULES + _MODEL_MODULES)


def _import_quietly(modules) -> None:
    for module in modules:
        try:
            importlib.import_module(module)
        except Exception as err:  # noqa: BLE001 - only a head start: the real use reports it
            log.debug("could not import %s early: %s", module, err)


def _warm_up(tcfg: dict, params: dict) -> None:
    """Import now, while the run computes, what its end needs (unless primed): the plots'
    matplotlib, MLflow's model logging, and the modules of the run's components (to unpickle
    the model)."""
    if tcfg.get("log_plots", True):
        _import_quietly(_PLOT_MODULES)
    if tcfg.get("log_model", True):
        _import_quietly(_MODEL_MODULES + tuple(
            target.rsplit(".", 1)[0] for key, target in params.items()
            if key.endswith("._target_") and isinstance(target, str) and "." in target))


class _Listener:
    """A resident writer's socket, held with its lock file (one resident writer per path)."""

    def __init__(self, path: str, sock: socket.socket, lock):
        self.path, self.sock, self.lock = path, sock, lock

    @classmethod
    def open(cls, path: str) -> _Listener | None:
        """Listen on ``path``; None when another writer holds it (it serves the next commands)."""
        lock = open(f"{path}.lock", "a+")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lock.close()
            return None
        lock.seek(0)
        lock.truncate()
        lock.write(f"{os.getpid()}\n")
        lock.flush()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            try:
                os.unlink(path)  # left by a writer that was killed
            except FileNotFoundError:
                pass
            sock.bind(path)
            sock.listen(64)
        except OSError:
            sock.close()
            lock.close()
            return None
        return cls(path, sock, lock)

    def forget(self):
        """In a forked child: close the socket and the lock without touching either."""
        self.sock.close()
        self.lock.close()

    def serve(self, first: socket.socket, idle_s: float, fork_serve) -> None:
        """Fork a server for ``first``, then one per connection until ``idle_s`` pass without
        one, or SIGUSR1."""
        fork_serve(first)
        deadline = time.monotonic() + idle_s
        while not _STOPPING:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self.sock.settimeout(min(left, 1.0))  # SIGUSR1 is seen within a second
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            fork_serve(conn)
            deadline = time.monotonic() + idle_s
        self.close(fork_serve)

    def close(self, fork_serve=None) -> None:
        """Stop taking commands: the path goes first (a new command starts a new writer), then
        the lock (emptied: its pid is no one's to signal); connections already queued are still
        served. One that comes in the last instant is closed unserved: its command sends what it
        sent to a writer it starts itself."""
        try:
            os.unlink(self.path)
        except OSError:
            pass
        self.lock.truncate(0)
        self.lock.close()
        self.sock.setblocking(False)
        while fork_serve is not None:
            try:
                conn, _ = self.sock.accept()
            except (BlockingIOError, InterruptedError):
                break
            fork_serve(conn)
        self.sock.close()


def _fork_serve(listener: _Listener):
    def fork_serve(conn: socket.socket) -> None:
        conn.setblocking(True)
        try:
            pid = os.fork()
        except OSError as err:  # the run sees its connection close and keeps its results
            log.warning("could not fork a tracking writer: %s", err)
            pid = -1
        if pid == 0:
            code = 1
            try:
                signal.signal(signal.SIGUSR1, signal.SIG_IGN)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                listener.forget()
                code = serve_connection(conn)
            finally:
                os._exit(code)
        conn.close()

    return fork_serve


def main(argv=None) -> int:
    """``--fd N`` (the connection it was started with), ``--listen PATH --idle S`` (resident)."""
    argv = sys.argv[1:] if argv is None else argv
    opts = dict(zip(argv[::2], argv[1::2]))
    for signum in _SIGNALS:  # the run ends its run; signals meant for it must not end this one
        signal.signal(signum, signal.SIG_IGN)
    signal.signal(signal.SIGUSR1, _on_stop)  # before its pid is in the lock file
    os.umask(0o077)  # its socket: this user's only
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    first = socket.socket(fileno=int(opts["--fd"]))
    listener = _Listener.open(opts["--listen"]) if opts.get("--listen") else None
    prime_error = None
    try:
        _prime(resident=listener is not None)
    except Exception as err:  # noqa: BLE001 - said to the run when it starts one
        prime_error = f"{type(err).__name__}: {err}"
    if listener is not None and prime_error is not None:
        listener.close()
        listener = None
    if listener is None:
        code = serve_connection(first, prime_error)
        # Every run it served has ended and its writes are committed: skip the interpreter's
        # shut-down (about 1 s with MLflow loaded), which would keep the run's stderr open that long.
        os._exit(code)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # forked servers are reaped by the kernel
    listener.serve(first, float(opts.get("--idle", "0")), _fork_serve(listener))
    os._exit(0)


if __name__ == "__main__":
    raise SystemExit(main())
