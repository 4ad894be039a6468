"""MLflow's and its libraries' noise kept off the terminal, and a tracking failure told in one line.

plcore reports every tracking failure itself (one ``error:`` line), so while it talks to a
store the libraries' own reports would only repeat it at length: urllib3's retry warnings,
MLflow's logged SQLAlchemy tracebacks, alembic's migration notes, MLflow's run URLs and
artifact progress bars. A user who sets ``MLFLOW_LOGGING_LEVEL`` keeps MLflow's loggers as
MLflow configures them.
"""

from __future__ import annotations

import logging
import os
from contextlib import contextmanager

__all__ = ["quiet_mlflow", "describe"]

#: loggers and the level they are raised to while plcore tracks
_LOGGERS = {"urllib3.connectionpool": logging.ERROR,   # "Retrying (Retry(total=1, ...))" per attempt
            "alembic": logging.ERROR,                   # migration notes of a fresh store
            "mlflow": logging.CRITICAL}                 # "SQLAlchemy database error" + traceback, retries
#: MLflow's documented switches (set unless the user set them)
_ENV = {"MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",   # "View run ... at: http://..." on stdout
        "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false"}    # tqdm bars on stderr per artifact transfer
_MAX_CHARS = 300


@contextmanager
def quiet_mlflow():
    """While the block runs, the loggers of :data:`_LOGGERS` show only what is worse than their
    noise, and MLflow prints no run URLs or progress bars; levels are restored afterwards.
    MLflow is imported first (it configures its loggers on import)."""
    for key, value in _ENV.items():
        os.environ.setdefault(key, value)
    import mlflow  # noqa: F401 - MLflow sets its loggers' levels when it is imported: first, then ours

    names = [n for n in _LOGGERS if not (n == "mlflow" and os.environ.get("MLFLOW_LOGGING_LEVEL"))]
    saved = {n: logging.getLogger(n).level for n in names}
    for n in names:
        logger = logging.getLogger(n)
        logger.setLevel(max(_LOGGERS[n], logger.getEffectiveLevel()))
    try:
        yield
    finally:
        for n, level in saved.items():
            logging.getLogger(n).setLevel(level)


def _chain(err: BaseException):
    seen = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        yield err
        err = err.__cause__ or err.__context__


def describe(err) -> str:
    """A tracking failure in one line: a network failure by its cause (``[Errno 111] Connection
    refused``), anything else by the first line of its message (SQLAlchemy's ``[SQL: ...]`` and
    MLflow's appendices left out), at most 300 characters."""
    if isinstance(err, str):
        text = err
    else:
        cause = next((e for e in _chain(err) if isinstance(e, OSError) and e.errno is not None), None)
        text = str(cause) if cause is not None else (str(err).strip() or type(err).__name__)
        if cause is None and type(err).__name__ not in ("MlflowException", "RestException"):
            text = f"{type(err).__name__}: {text}"
    line = " ".join(text.strip().splitlines()[0].split()) if text.strip() else text
    return line if len(line) <= _MAX_CHARS else line[:_MAX_CHARS - 3] + "..."
