"""MLflow's writes in a separate process that overlaps the run (``tracking.writer=process``).

A fresh process pays 2-3 s to import MLflow and its SQL store, and another 2 s at the run's
end for scikit-learn (to unpickle the model), matplotlib (plots) and MLflow's model logging
(docs/runs.md, "What tracking costs"). With the default ``tracking.writer=process``,
``python -m plcore`` starts ``python -m plcore.tracking_writer`` first thing when its command
line runs one job that is not untracked (:func:`prestart`; otherwise the job starts it), and
the writer does those imports on the machine's other core while Hydra composes, the data
load and the protocol computes. The run sends it the run's params and tags, each step, and
the result through a pipe, and at the end waits until the writer has ended the MLflow run, so
a finished command has written everything. One writer serves every job of its process (a
sequential sweep pays MLflow's import once). Times (run start and end, metric timestamps),
the job's environment and its working directory are the run process's, so both writers log
the same run.

Faults, none of which loses a result:

* the run process dies (SIGKILL, out of memory): the writer reads end-of-file (or sees its
  parent change, should a forked child still hold the pipe), ends the open run ``KILLED``
  (``plcore.ended_by``) and exits;
* the writer dies, or its store fails, or a message cannot be read: the run goes on, keeps
  everything it logged, and at the end writes the local fallback file and raises
  :class:`~plcore.exceptions.TrackingError`, as ``tracking.writer=inline`` does;
* a writer that takes long is waited for (a notice after :data:`SLOW_NOTICE_S`); a Ctrl-C
  while waiting writes the fallback file too.

The writer runs in its own session and ignores SIGINT, SIGTERM and SIGHUP: a Ctrl-C at the
terminal, or a scheduler's SIGTERM to every process, reaches the run, which ends its run
``KILLED`` through the writer. Messages are length-prefixed pickles (cloudpickle for the
result, which holds the model), written with those signals blocked so that none is cut.
"""

from __future__ import annotations

import importlib
import logging
import os
import pickle
import queue
import signal
import struct
import subprocess
import sys
import threading
import time
from contextlib import contextmanager

from plcore.tracking import _now_ms

log = logging.getLogger(__name__)

#: seconds after which the run says that it waits for its writer (and then every minute)
SLOW_NOTICE_S = 10.0
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


# ----------------------------------------------------------------------------- the run's side
class WriterProcess:
    """The run process's end of one writer process (see the module docstring)."""

    def __init__(self):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([p for p in sys.path if p] +
                                            ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        self.proc = subprocess.Popen([sys.executable, "-m", "plcore.tracking_writer", str(os.getpid())],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                     start_new_session=True)
        self.owner = os.getpid()
        self.replies: queue.Queue = queue.Queue()
        self.broken: str | None = None
        threading.Thread(target=self._read_replies, name="plcore-tracking-replies", daemon=True).start()

    def _read_replies(self):
        while True:
            try:
                msg = _read_frame(self.proc.stdout)
            except Exception:  # noqa: BLE001 - a garbled reply: treat the writer as gone
                msg = None
            self.replies.put(msg)
            if msg is None:
                return

    def _after_fork_in_child(self):
        """A forked child must not keep the writer's stdin open (the writer would not see
        the run process die)."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        self.broken = "a forked child does not write to its parent's tracking writer"

    @property
    def usable(self) -> bool:
        return self.owner == os.getpid() and self.broken is None and self.proc.poll() is None

    def send_frame(self, frame: bytes) -> None:
        if self.broken is not None:
            return
        try:
            with _signals_blocked():  # a signal must not cut a frame in half
                self.proc.stdin.write(frame)
                self.proc.stdin.flush()
        except (OSError, ValueError) as err:  # BrokenPipeError: the writer died
            self.broken = f"the tracking writer (pid {self.proc.pid}) exited ({err})"

    def send(self, msg) -> None:
        self.send_frame(_frame(msg))

    def reply(self):
        """The next reply, waiting as long as the writer lives (a notice on stderr after
        :data:`SLOW_NOTICE_S`, then every minute); None once it has died."""
        wait, waited = SLOW_NOTICE_S, 0.0
        while True:
            try:
                msg = self.replies.get(timeout=wait)
                break
            except queue.Empty:
                waited += wait
                log.warning("waiting for the tracking writer (pid %d) to finish writing the run (%.0f s)",
                            self.proc.pid, waited)
                wait = 60.0
        if msg is None:
            code = self.proc.wait()
            self.broken = self.broken or f"the tracking writer (pid {self.proc.pid}) exited with status {code}"
        return msg

    def close(self):
        """No more runs: the writer exits after what it was sent. Not waited for: every run it
        served has been ended, and its interpreter's shut-down is no one's business."""
        if self.owner != os.getpid():
            return
        try:
            self.proc.stdin.close()
        except OSError:
            pass


_WRITER: WriterProcess | None = None
_LOCK = threading.Lock()


def _spawn() -> WriterProcess:
    global _WRITER
    if _WRITER is None:
        import atexit

        atexit.register(_close_writer)
        os.register_at_fork(after_in_child=_forget_in_child)
    _WRITER = WriterProcess()
    return _WRITER


def _forget_in_child():
    global _WRITER
    if _WRITER is not None:
        _WRITER._after_fork_in_child()
        _WRITER = None


def writer(tcfg: dict) -> WriterProcess:
    """This process's writer (started now if there is none alive), asked to connect to
    ``tcfg``'s store (read only: nothing is created before the job's input is checked)."""
    with _LOCK:
        if _WRITER is None or not _WRITER.usable:
            try:
                _spawn()
            except OSError as err:
                from plcore.exceptions import TrackingError

                raise TrackingError(f"could not start the tracking writer process ({err}); "
                                    "run with tracking.writer=inline or tracking=none") from None
        _WRITER.send(("open", _store_key(tcfg)))
        return _WRITER


def prestart() -> None:
    """Start this process's writer before the job's config is even composed (``python -m
    plcore`` with one job and tracking not turned off on the command line): it imports MLflow
    and its SQL store while the job starts. If the job turns out untracked, the writer exits
    when this process does, having written nothing."""
    with _LOCK:
        if _WRITER is None:
            try:
                _spawn()
            except OSError:  # the job starts its writer itself, and reports it
                pass


def _close_writer():
    if _WRITER is not None:
        _WRITER.close()


def _store_key(tcfg: dict) -> tuple[str, str]:
    return tcfg["tracking_uri"], tcfg.get("experiment_name") or "plcore"


class WriterRun:
    """The run's handle when its writes go to a :class:`WriterProcess` (same methods as
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
            step_name=step_name, start_time=_now_ms()), dict(os.environ), os.getcwd())

    @property
    def fault(self) -> str | None:
        fault = self._fault or self._writer.broken
        if fault is not None and not self._warned:
            self._warned = True
            log.warning("tracking failed (%s); the run continues and is saved locally at the end", fault)
        return fault

    def _send(self, *msg, dumps=pickle.dumps):
        if self.fault is not None:
            return
        try:
            frame = _frame(msg, dumps)
        except Exception as err:  # noqa: BLE001 - nothing was written; the run keeps it for the fallback
            self._fault = f"could not send {msg[0]} to the tracking writer ({type(err).__name__}: {err})"
            return
        self._writer.send_frame(frame)

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
        self._send("end", status, _now_ms())
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


# ----------------------------------------------------------------------------- the writer's side
class _Session:
    """The writer's state: the open run (one at a time) and what it was asked."""

    def __init__(self, reply):
        from plcore import tracking

        self.tracking = tracking
        self.reply = reply
        self.handle = None
        self.token = None

    def open(self, key):
        """Connect to an existing store, read only (the job's input is not checked yet)."""
        path = self.tracking._sqlite_file(key[0])
        if path is not None and path.is_file() and path.stat().st_size > 0:
            from mlflow.tracking import MlflowClient

            MlflowClient(tracking_uri=key[0]).get_experiment_by_name(key[1])

    def start(self, token, kw, environ, cwd):
        """Open the run in the run process's environment and working directory."""
        if self.handle is not None:  # cannot happen in order; never leave a run open
            self.handle.mark_killed("a new run started before it ended")
            self.end("KILLED")
        self.token = token
        for name in set(os.environ) - set(environ):
            del os.environ[name]
        os.environ.update(environ)
        os.chdir(cwd)
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
        self.reply(("ended", self.token, None if fault is None else f"{type(fault).__name__}: {fault}"))

    def vanished(self):
        """The run process is gone: end its open run KILLED."""
        if self.handle is not None:
            self.handle.mark_killed("its run process vanished before ending the run")
            self.end("KILLED")

    def handle_message(self, msg):
        op, *args = msg
        if op == "open":
            try:
                self.open(*args)
            except Exception as err:  # noqa: BLE001 - "start" connects again and reports it
                log.debug("could not connect early: %s", err)
        elif op == "start":
            self.start(*args)
        elif self.handle is None:  # the run could not be opened: nothing to write to
            return
        elif op == "end":
            self.end(*args)
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


def _serve(inbox: queue.Queue, reply) -> int:
    session = _Session(reply)
    while True:
        msg = inbox.get()
        if msg is None:  # the run process closed the pipe, died, or is no longer our parent
            session.vanished()
            return 0
        session.handle_message(msg)


def _prime() -> None:
    """Import MLflow's client and SQL store first thing (2-3 s, most of a run's tracking cost;
    not the SQL store when ``$MLFLOW_TRACKING_URI`` names a server), then scikit-learn (to
    unpickle the result). Should the run process exit meanwhile without having asked for a
    run (an untracked job, bad input), the inbox reader ends this process at once."""
    modules = ["mlflow.tracking"]
    if not os.environ.get("MLFLOW_TRACKING_URI", "sqlite:").startswith(("http:", "https:", "databricks")):
        modules.append("mlflow.store.tracking.sqlalchemy_store")  # the default store: SQLite
    modules.append("plcore.protocols")  # scikit-learn
    for module in modules:
        importlib.import_module(module)


def _warm_up(tcfg: dict, params: dict) -> None:
    """Import now, while the run computes, what its end needs: the plots' matplotlib, MLflow's
    model logging, and the modules of the run's components (to unpickle the model)."""
    if tcfg.get("log_plots", True):
        import matplotlib.backends.backend_agg  # noqa: F401
        import matplotlib.figure  # noqa: F401
    if tcfg.get("log_model", True):
        import mlflow.models  # noqa: F401
        import mlflow.sklearn  # noqa: F401
        for key, target in params.items():
            if key.endswith("._target_") and isinstance(target, str) and "." in target:
                try:
                    importlib.import_module(target.rsplit(".", 1)[0])
                except Exception:  # noqa: BLE001 - only a head start; unpickling reports real problems
                    pass


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parent = int(argv[0]) if argv else os.getppid()
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # whatever MLflow prints goes to stderr
    for signum in _SIGNALS:  # the run ends its run; signals meant for it must not end this one
        signal.signal(signum, signal.SIG_IGN)
    inbox: queue.Queue = queue.Queue()
    priming = threading.Event()
    priming.set()
    gone = threading.Lock()
    stdin = sys.stdin.buffer

    def run_process_gone():
        """End-of-file, or a new parent: the run process is gone (once)."""
        if not gone.acquire(blocking=False):
            return
        with inbox.mutex:
            pending = any(m[0] == "start" for m in inbox.queue)
        if priming.is_set() and not pending:
            os._exit(0)  # no run opened nor asked for: nothing to write; don't hold stderr
        inbox.put(None)

    def read():
        while True:
            try:
                msg = _read_frame(stdin)
            except BadFrame as err:
                inbox.put(("bad_frame", str(err)))
                continue
            except Exception:  # noqa: BLE001 - a broken pipe reads as end-of-file
                msg = None
            if msg is None:
                run_process_gone()
                return
            inbox.put(msg)

    def watch_parent():  # a forked child of the run may still hold the pipe open after it died
        while os.getppid() == parent:
            time.sleep(1.0)
        time.sleep(2.0)  # end-of-file, if it comes, comes first, after the last messages
        run_process_gone()

    threading.Thread(target=read, name="plcore-tracking-inbox", daemon=True).start()
    threading.Thread(target=watch_parent, name="plcore-tracking-parent", daemon=True).start()

    def reply(msg):
        try:
            _write_frame(replies, msg)
        except OSError:
            pass

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    _prime()
    priming.clear()
    code = _serve(inbox, reply)
    # Every run it served has ended and its writes are committed: skip the interpreter's
    # shut-down (about 1 s with MLflow loaded), which would keep the run's stderr open that long.
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    raise SystemExit(main())
