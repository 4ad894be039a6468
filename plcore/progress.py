"""Progress of long work inside a step: per-iteration bars with ETA on a terminal.

The protocols turn it on while they run (``progress=True``) and only where stderr is a
terminal; a method wraps its main loop::

    for it in iterations(range(1, self.max_iter + 1), "CENDA"):
        ...

Off a terminal (logs, CI, Slurm) nothing is printed here: the app prints one line per
step instead. Outside a protocol (plain scikit-learn use) the loop is returned unchanged.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = ["iterations", "enabled"]

_ENABLED: ContextVar[bool] = ContextVar("plcore_iteration_progress", default=False)


@contextmanager
def enabled(on: bool = True):
    """Turn per-iteration bars on for the block (where stderr is a terminal)."""
    token = _ENABLED.set(bool(on) and sys.stderr.isatty())
    try:
        yield
    finally:
        _ENABLED.reset(token)


def iterations(iterable, desc: str, total: int | None = None):
    """``iterable`` with a transient tqdm bar (ETA) when enabled, else unchanged."""
    if not _ENABLED.get():
        return iterable
    from tqdm.auto import tqdm

    return tqdm(iterable, desc=desc, total=total, leave=False, position=1, dynamic_ncols=True)
