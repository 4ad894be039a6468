"""Worker processes that never outlive the process that started them.

joblib's loky workers wait 5 minutes idle before they exit, and a worker busy when its parent is
SIGKILLed finishes its task first: after ``kill -9`` of a run, its workers and their resource
tracker lived on for 5-6 minutes. :func:`worker_pool` is joblib's ``parallel_config`` for the
loky backend with :func:`end_with_parent` as every worker's initializer.
"""

from __future__ import annotations

import os
import signal
import sys

__all__ = ["end_with_parent", "worker_pool"]

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def end_with_parent(parent_pid: int) -> None:
    """Worker initializer: on Linux the worker receives SIGTERM as soon as the process that started
    it dies (``prctl(PR_SET_PDEATHSIG)``), and ends at once if that already happened; elsewhere
    nothing (the worker then exits at loky's idle timeout)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    except (OSError, AttributeError):  # no prctl (another libc): the idle timeout still applies
        return
    if os.getppid() != parent_pid:  # the parent died before the request took effect
        os.kill(os.getpid(), signal.SIGTERM)


def worker_pool(**config):
    """``joblib.parallel_config(backend="loky", **config)`` whose workers end with this process."""
    from joblib import parallel_config

    return parallel_config(backend="loky", initializer=end_with_parent, initargs=(os.getpid(),), **config)
