"""The MLflow store: a fresh SQLite file made safely by any number of processes, a tracking
server checked before the work, the experiment prepared, and runs whose process died ended
``KILLED`` (the reaper). POSIX-only calls are guarded: off POSIX no lock is taken (the atomic
rename still protects readers) and nothing is reaped."""

from __future__ import annotations

import logging
import os
import socket
import time
from contextlib import contextmanager
from pathlib import Path

from plcore.exceptions import TrackingError

log = logging.getLogger(__name__)

__all__ = ["check_store", "check_reachable", "prepare_store", "reap_orphans"]

_EXPERIMENT_KIND = {"mlflow.experimentKind": "custom_model_development"}  # MLflow 3: model training, not GenAI
_HEALTH_TIMEOUT_S = 5.0


def _sqlite_file(tracking_uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI (None for any other store)."""
    if not tracking_uri.startswith("sqlite:///"):
        return None
    path = tracking_uri[len("sqlite:///"):]
    return None if path in ("", ":memory:") else Path(path)


@contextmanager
def _file_lock(path: Path):
    """An exclusive advisory lock on ``path`` (the file created if needed, in an existing folder),
    held for the block."""
    with open(path, "a+b") as fh:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: the atomic rename still protects readers
            yield
            return
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _create_sqlite_store(path: Path) -> None:
    """Create and migrate a fresh SQLite store ONCE, whoever else starts on the same file.

    Under a lock file beside it, the database is built in a temporary file and renamed into
    place (atomic on one file system): every process -- plcore's or any other MLflow
    client -- sees either no file or a complete, migrated one, so alembic never runs twice.
    """
    if path.is_file() and path.stat().st_size > 0:
        return
    with _file_lock(path.with_name(path.name + ".lock")):
        if path.is_file() and path.stat().st_size > 0:
            return  # another process created it while we waited
        from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.unlink(missing_ok=True)
        quiet = [logging.getLogger(name) for name in ("mlflow.store.db.utils", "alembic")]
        levels = [lg.level for lg in quiet]
        for lg in quiet:  # "Creating initial MLflow database tables..." on every fresh store
            lg.setLevel(logging.WARNING)
        try:
            store = SqlAlchemyStore(f"sqlite:///{tmp}", str(Path.cwd() / "mlruns"))
            store.engine.dispose()
        finally:
            for lg, level in zip(quiet, levels):
                lg.setLevel(level)
        os.replace(tmp, path)


def check_store(tracking_uri: str) -> None:
    """Fail fast, in one line, before any work, when the store cannot take a run: an HTTP
    server that does not answer (:func:`check_reachable`), or a SQLite file whose folder does
    not exist (plcore creates no folder the user did not name) or that cannot be written."""
    check_reachable(tracking_uri)
    path = _sqlite_file(tracking_uri)
    if path is None:
        return
    folder = path.parent
    if not folder.is_dir():
        raise TrackingError(f"tracking store {tracking_uri}: the folder {folder} does not exist (plcore creates no "
                            "folder you did not name); create it, or run with tracking=none or another "
                            "MLFLOW_TRACKING_URI")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise TrackingError(f"tracking store {tracking_uri} is not writable; fix its permissions, or run with "
                            "tracking=none or another MLFLOW_TRACKING_URI")


def check_reachable(tracking_uri: str, timeout: float = _HEALTH_TIMEOUT_S) -> None:
    """Fail fast, in one line, when an HTTP tracking server does not answer.

    Any HTTP answer (also 401 from an authenticating server) counts as reachable; a refused or
    timed-out connection raises :class:`~plcore.exceptions.TrackingError` within ``timeout``.
    """
    if not tracking_uri.startswith(("http://", "https://")):
        return
    import urllib.error
    import urllib.request

    try:
        urllib.request.urlopen(tracking_uri.rstrip("/") + "/health", timeout=timeout).close()
    except urllib.error.HTTPError:
        return
    except (urllib.error.URLError, OSError) as err:
        reason = getattr(err, "reason", err)
        raise TrackingError(f"tracking server {tracking_uri} is unreachable ({reason}); start it, or run "
                            "with tracking=none or another MLFLOW_TRACKING_URI") from None


def _limit_http_retries() -> None:
    """MLflow retries a dead server for minutes by default; a run should fail within seconds."""
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "1")
    os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "10")


def prepare_store(tracking_uri: str, experiment_name: str) -> str:
    """Make the store and the experiment exist; return the experiment id.

    Safe for any number of independent processes starting at once on a fresh SQLite file
    (:func:`_create_sqlite_store`). The experiment is marked as model training for MLflow 3's
    UI (tag ``mlflow.experimentKind``).
    """
    from mlflow.tracking import MlflowClient

    check_reachable(tracking_uri)
    _limit_http_retries()
    path = _sqlite_file(tracking_uri)
    if path is not None:
        _create_sqlite_store(path)
    client = MlflowClient(tracking_uri=tracking_uri)
    exp = client.get_experiment_by_name(experiment_name)
    if exp is None:
        try:
            return client.create_experiment(experiment_name, tags=_EXPERIMENT_KIND)
        except Exception:  # noqa: BLE001 - created concurrently by another process
            exp = client.get_experiment_by_name(experiment_name)
            if exp is None:
                raise
    if exp.tags.get("mlflow.experimentKind") is None:
        client.set_experiment_tag(exp.experiment_id, *next(iter(_EXPERIMENT_KIND.items())))
    return exp.experiment_id


def _pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, exited but not yet waited for, does not). Off POSIX
    every process counts as alive (``os.kill(pid, 0)`` would end it on Windows): nothing is reaped."""
    if os.name != "posix":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def reap_orphans(client, experiment_id: str) -> int:
    """End as KILLED the RUNNING runs of this host whose process is gone (SIGKILL, out of memory,
    power loss): a process that cannot end its own run has it ended by the next run on the store.

    Returns how many were ended. Runs of other hosts are left alone (their process cannot be seen).
    """
    host = socket.gethostname()
    n = 0
    for run in client.search_runs([experiment_id], filter_string="attributes.status = 'RUNNING'",
                                  max_results=200):
        tags = run.data.tags
        pid = tags.get("pid", "")
        if tags.get("host") != host or not pid.isdigit() or _pid_alive(int(pid)):
            continue
        client.set_tag(run.info.run_id, "plcore.ended_by", "reaped: its process was gone")
        client.set_terminated(run.info.run_id, status="KILLED")
        n += 1
    return n
