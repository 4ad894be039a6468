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
sequential sweep pays MLflow's import once).

Faults, none of which loses a result:

* the run process dies (SIGKILL, out of memory): the writer reads end-of-file with a run
  open, ends it ``KILLED`` (``plcore.ended_by``) and exits;
* the writer dies, or its store fails: the run goes on, keeps everything it logged, and at
  the end writes the local fallback file and raises :class:`~plcore.exceptions.TrackingError`,
  as ``tracking.writer=inline`` does;
* the writer does not end the run within :data:`END_TIMEOUT_S`: it is killed and the same.

The writer runs in its own session, so a Ctrl-C at the terminal reaches only the run,
which then ends its run ``KILLED`` through the writer.

Messages are length-prefixed pickles (cloudpickle for the result, which holds the model).
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

log = logging.getLogger(__name__)

#: seconds the run waits, at its end, for the writer to end the MLflow run
END_TIMEOUT_S = 300.0
#: seconds after which the waiting run says that it waits
SLOW_NOTICE_S = 10.0
_HEADER = struct.Struct("<Q")


def _write_frame(stream, obj, dumps=pickle.dumps) -> None:
    data = dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def _read_frame(stream):
    """The next message, or None at end-of-file (also a frame cut short by a dying sender)."""
    head = stream.read(_HEADER.size)
    if len(head) < _HEADER.size:
        return None
    (size,) = _HEADER.unpack(head)
    data = stream.read(size)
    return pickle.loads(data) if len(data) == size else None


# ----------------------------------------------------------------------------- the run's side
class WriterProcess:
    """The run process's end of one writer process (see the module docstring)."""

    def __init__(self):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([p for p in sys.path if p] +
                                            ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        self.proc = subprocess.Popen([sys.executable, "-m", "plcore.tracking_writer"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env, start_new_session=True)
        self.owner = os.getpid()
        self.replies: queue.Queue = queue.Queue()
        self.broken: str | None = None
        threading.Thread(target=self._read_replies, name="plcore-tracking-replies", daemon=True).start()

    def _read_replies(self):
        while True:
            try:
                msg = _read_frame(self.proc.stdout)
            except Exception:  # noqa: BLE001 - a garbled pipe is a dead writer
                msg = None
            self.replies.put(msg)
            if msg is None:
                return

    @property
    def usable(self) -> bool:
        return self.owner == os.getpid() and self.broken is None and self.proc.poll() is None

    def send(self, msg, *, dumps=pickle.dumps) -> None:
        if self.broken is not None:
            return
        try:
            _write_frame(self.proc.stdin, msg, dumps)
        except (OSError, ValueError) as err:  # BrokenPipeError: the writer died
            self.broken = f"the tracking writer (pid {self.proc.pid}) exited ({err})"

    def reply(self, timeout: float):
        """The next reply; None if the writer died or did not answer within ``timeout`` s
        (then it is killed). Says so on stderr once after :data:`SLOW_NOTICE_S`."""
        import time

        deadline = time.monotonic() + timeout
        wait = min(SLOW_NOTICE_S, timeout)
        while True:
            try:
                msg = self.replies.get(timeout=max(wait, 0.0))
                break
            except queue.Empty:
                if time.monotonic() >= deadline:
                    self.broken = f"the tracking writer (pid {self.proc.pid}) did not answer within {timeout:g} s"
                    self.kill()
                    return None
                if wait == SLOW_NOTICE_S:
                    log.warning("waiting for the tracking writer (pid %d) to finish writing the run", self.proc.pid)
                wait = deadline - time.monotonic()
        if msg is None:
            code = self.proc.wait()
            self.broken = self.broken or f"the tracking writer (pid {self.proc.pid}) exited with status {code}"
        return msg

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

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


def writer(tcfg: dict) -> WriterProcess:
    """This process's writer (started now if there is none alive), asked to open ``tcfg``'s store."""
    global _WRITER
    with _LOCK:
        if _WRITER is None or not _WRITER.usable:
            if _WRITER is None:
                import atexit

                atexit.register(_close_writer)
            try:
                _WRITER = WriterProcess()
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
    at the interpreter's exit, having written nothing."""
    global _WRITER
    with _LOCK:
        if _WRITER is None:
            import atexit

            atexit.register(_close_writer)
            try:
                _WRITER = WriterProcess()
            except OSError:  # the job starts its writer itself, and reports it
                _WRITER = None


def _close_writer():
    if _WRITER is not None:
        _WRITER.close()


def _store_key(tcfg: dict) -> tuple[str, str]:
    return tcfg["tracking_uri"], tcfg.get("experiment_name") or "plcore"


class WriterRun:
    """The run's handle when its writes go to a :class:`WriterProcess` (same methods as
    :class:`plcore.tracking.MlflowRun`). Keeps the steps and the result for the fallback file."""

    def __init__(self, tcfg: dict, *, params: dict, tags: dict, config_yaml: str, run_name: str | None,
                 step_name: str):
        self.tcfg = tcfg
        self.steps: list = []
        self.result = None
        self.run_id: str | None = None
        self._fault: str | None = None
        self._warned = False
        self._writer = writer(tcfg)
        self._writer.send(("start", dict(tcfg=tcfg, params=params, tags=tags, config_yaml=config_yaml,
                                         run_name=run_name, step_name=step_name)))

    @property
    def fault(self) -> str | None:
        fault = self._fault or self._writer.broken
        if fault is not None and not self._warned:
            self._warned = True
            log.warning("tracking failed (%s); the run continues and is saved locally at the end", fault)
        return fault

    def _send(self, *msg, dumps=pickle.dumps):
        if self.fault is None:
            self._writer.send(msg, dumps=dumps)

    def log_step(self, step: dict):
        self.steps.append(dict(step))
        self._send("log_step", dict(step))

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

            payload = cloudpickle.dumps(replace(result, model=None), protocol=pickle.HIGHEST_PROTOCOL)
        self._send("log_result", payload)

    def mark_killed(self, reason: str):
        self._send("mark_killed", reason)

    def mark_failed(self, traceback_text: str):
        self._send("mark_failed", traceback_text)

    def end(self, status: str):
        """Ask the writer to end the run with ``status`` and wait until it has (or failed)."""
        self._send("end", status)
        while self._fault is None and self._writer.broken is None:
            msg = self._writer.reply(END_TIMEOUT_S)
            if msg is None or self._take(msg):
                break
        while True:  # a writer that died may still have said which run it opened
            try:
                msg = self._writer.replies.get_nowait()
            except queue.Empty:
                break
            if msg is not None:
                self._take(msg)
        self.fault  # noqa: B018 - warns once

    def _take(self, msg) -> bool:
        """Note one reply; True once the run is over (ended, or could not be opened)."""
        kind, value = msg
        if kind == "started":
            self.run_id = value
            return False
        self._fault = value  # "ended": None when everything was written; "failed": why not
        return True


# ----------------------------------------------------------------------------- the writer's side
def _serve(inbox: queue.Queue, reply) -> int:
    from plcore import tracking

    stores: dict = {}
    handle = None

    def open_store(key):
        if key not in stores:
            stores[key] = tracking.prepare_store(*key)
        return stores[key]

    while True:
        msg = inbox.get()
        if msg is None:  # the run process closed the pipe or died
            if handle is not None:
                handle.mark_killed("its run process vanished before ending the run")
                handle.end("KILLED")
            return 0
        op, *args = msg
        try:
            if op == "open":  # before the job's input is checked: create nothing (no new file, experiment)
                import mlflow.tracking  # noqa: F401

                path = tracking._sqlite_file(args[0][0])
                if path is not None and path.is_file() and path.stat().st_size > 0:
                    open_store(args[0])
            elif op == "start":
                kw = args[0]
                kw["tags"] = {**kw["tags"], "plcore.writer_pid": str(os.getpid())}
                handle = tracking.open_run(**kw)
                reply(("started", handle.run_id))
            elif handle is None:  # the run could not be opened: nothing to write to
                continue
            elif op == "end":
                handle.end(args[0])
                reply(("ended", None if handle.fault is None else f"{type(handle.fault).__name__}: {handle.fault}"))
                handle = None
            elif op == "log_result":
                handle.log_result(pickle.loads(args[0]))
            else:
                getattr(handle, op)(*args)
        except Exception as err:  # noqa: BLE001 - reported to the run, which keeps its results
            if op == "open":
                stores.pop(args[0], None)  # "start" tries again and reports it
            elif op == "start":
                reply(("failed", f"{type(err).__name__}: {err}"))
                handle = None
            elif handle.fault is None:  # e.g. a result this process cannot unpickle
                handle.fault = err
        if op == "start" and handle is not None and inbox.empty():
            _warm_up(kw["tcfg"], kw["params"])


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


def main() -> int:
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # whatever MLflow prints goes to stderr
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the run ends its run; a stray Ctrl-C must not
    inbox: queue.Queue = queue.Queue()
    priming = threading.Event()
    priming.set()
    stdin = sys.stdin.buffer

    def read():
        while True:
            try:
                msg = _read_frame(stdin)
            except Exception:  # noqa: BLE001 - a garbled frame: the sender died mid-write
                msg = None
            if msg is None:
                with inbox.mutex:
                    pending = any(m is not None and m[0] == "start" for m in inbox.queue)
                if priming.is_set() and not pending:
                    os._exit(0)  # no run opened nor asked for: nothing to write; don't hold stderr
            inbox.put(msg)
            if msg is None:
                return

    threading.Thread(target=read, name="plcore-tracking-inbox", daemon=True).start()

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
