"""The MLflow store: a fresh SQLite file made safely by any number of processes, a tracking
server (its answer and the user's credentials) and a store file checked before the work, the
experiment prepared, and runs whose process died ended ``KILLED`` (the reaper). POSIX-only calls
are guarded: off POSIX no lock is taken (the atomic rename still protects readers) and nothing
is reaped."""

from __future__ import annotations

import logging
import os
import socket
import time
from contextlib import contextmanager
from pathlib import Path

from plcore.exceptions import TrackingError
from plcore.utils.files import atomic_write

log = logging.getLogger(__name__)

__all__ = ["check_store", "check_readable", "check_reachable", "check_access", "prepare_store", "reap_orphans",
           "last_sign_of_life"]

_EXPERIMENT_KIND = {"mlflow.experimentKind": "custom_model_development"}  # MLflow 3: model training, not GenAI
_HEALTH_TIMEOUT_S = 5.0
_SQLITE_HEADER = b"SQLite format 3\x00"


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

        quiet = [logging.getLogger(name) for name in ("mlflow.store.db.utils", "alembic")]
        levels = [lg.level for lg in quiet]
        for lg in quiet:  # "Creating initial MLflow database tables..." on every fresh store
            lg.setLevel(logging.WARNING)
        try:
            with atomic_write(path) as tmp:
                store = SqlAlchemyStore(f"sqlite:///{tmp}", str(Path.cwd() / "mlruns"))
                store.engine.dispose()
        finally:
            for lg, level in zip(quiet, levels):
                lg.setLevel(level)


def check_store(tracking_uri: str) -> None:
    """Fail fast, in one line, before any work, when the store cannot take a run: what
    :func:`check_readable` refuses, or a SQLite file whose folder does not exist (plcore creates
    no folder the user did not name) or that cannot be written."""
    check_readable(tracking_uri)
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


def check_readable(tracking_uri: str) -> None:
    """Fail fast, in one line: an HTTP server that does not answer (:func:`check_reachable`) or
    refuses the user (:func:`check_access`), or a store file that is not an SQLite database."""
    check_reachable(tracking_uri)
    check_access(tracking_uri)
    path = _sqlite_file(tracking_uri)
    if path is not None and path.is_file() and path.stat().st_size > 0:
        try:
            with open(path, "rb") as fh:
                header = fh.read(len(_SQLITE_HEADER))
        except OSError as err:
            raise TrackingError(f"tracking store {tracking_uri} cannot be read ({err}); fix its permissions, or "
                                "run with tracking=none or another MLFLOW_TRACKING_URI") from None
        if header != _SQLITE_HEADER:
            raise TrackingError(f"tracking store {tracking_uri}: {path} is not an SQLite database; move it away or "
                                "name another file, or run with tracking=none or another MLFLOW_TRACKING_URI")


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


def check_access(tracking_uri: str) -> None:
    """Fail fast, in one line, when an HTTP tracking server refuses the user: no or wrong
    credentials (HTTP 401: ``MLFLOW_TRACKING_USERNAME`` / ``MLFLOW_TRACKING_PASSWORD``, or
    ``MLFLOW_TRACKING_TOKEN``), a user without permission (403), or a server that answers with
    an error. Asked the way MLflow's client asks (its credentials, its retries limited)."""
    if not tracking_uri.startswith(("http://", "https://")):
        return
    from mlflow.tracking import MlflowClient

    from plcore.tracking.quiet import describe, quiet_mlflow

    _limit_http_retries()
    try:
        with quiet_mlflow():
            MlflowClient(tracking_uri=tracking_uri).search_experiments(max_results=1)
    except Exception as err:  # noqa: BLE001 - MLflow raises its own exception types
        status = getattr(err, "get_http_status_code", lambda: None)()
        user = os.environ.get("MLFLOW_TRACKING_USERNAME")
        who = f"user {user!r}" if user else "no MLFLOW_TRACKING_USERNAME set"
        if status == 401:
            raise TrackingError(f"tracking server {tracking_uri} refused the credentials ({who}; HTTP 401): set "
                                "MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD (or MLFLOW_TRACKING_TOKEN) "
                                "to an account of the server, or run with tracking=none") from None
        if status == 403:
            raise TrackingError(f"tracking server {tracking_uri} denies {who} access (HTTP 403); ask its "
                                "administrator for permission, or run with tracking=none") from None
        raise TrackingError(f"tracking server {tracking_uri} cannot be used ({describe(err)}); run with "
                            "tracking=none or another MLFLOW_TRACKING_URI") from None


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


def last_sign_of_life(client, run) -> tuple[int, str | None, int]:
    """``(time, step name, steps done)`` of a run from its metrics: the time (ms) of its latest
    metric (its start where it logged none), the name of its steps (``fold`` of ``fold/accuracy``,
    else its ``plcore.step_name`` tag) and how many distinct steps it logged."""
    last, steps, name = run.info.start_time or 0, {}, run.data.tags.get("plcore.step_name")
    for key in run.data.metrics:
        history = client.get_metric_history(run.info.run_id, key)
        last = max([last] + [m.timestamp for m in history])
        prefix, sep, _ = key.partition("/")
        if sep:
            steps.setdefault(prefix, set()).update(m.step for m in history)
    if steps:
        name = name if name in steps else sorted(steps)[0]
    return last, name, len(steps.get(name, ()))


def _running_runs(client):
    """The RUNNING runs of every active experiment of the store."""
    ids = [e.experiment_id for e in client.search_experiments(max_results=1000)]
    token = None
    while ids:
        page = client.search_runs(ids, filter_string="attributes.status = 'RUNNING'", max_results=1000,
                                  page_token=token)
        yield from page
        token = page.token
        if not token:
            return


def reap_orphans(client) -> int:
    """End as KILLED the RUNNING runs of this host whose process is gone (SIGKILL, out of memory,
    power loss), in every experiment of the store: a process that cannot end its own run has it
    ended by the next run on the store. The run's end is dated at its last sign of life
    (:func:`last_sign_of_life`), and it is tagged ``plcore.ended_by`` and
    ``plcore.<step>s_done`` (as a run stopped by a signal).

    Returns how many were ended. Runs of other hosts are left alone (their process cannot be seen).
    """
    host = socket.gethostname()
    n = 0
    for run in list(_running_runs(client)):
        tags = run.data.tags
        pid = tags.get("pid", "")
        if tags.get("host") != host or not pid.isdigit() or _pid_alive(int(pid)):
            continue
        last, step_name, done = last_sign_of_life(client, run)
        client.set_tag(run.info.run_id, "plcore.ended_by", "reaped: its process was gone")
        if step_name:
            client.set_tag(run.info.run_id, f"plcore.{step_name}s_done", str(done))
        client.set_terminated(run.info.run_id, status="KILLED", end_time=last)
        n += 1
    return n
