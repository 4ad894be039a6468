"""Writing a file whole: :func:`atomic_write`, the one "temporary file, then rename" of plcore."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["atomic_write"]


@contextmanager
def atomic_write(path) -> Iterator[Path]:
    """A temporary path beside ``path`` to write to; renamed to ``path`` when the block ends
    without an error (``os.replace``: atomic on one file system), removed otherwise.

    A reader, or a writer killed half-way, sees none or all of the file, never half of it. The
    temporary file is ``.<name>.<pid>.tmp`` in the same folder (a rename does not cross file
    systems); the folder must exist."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)  # a leftover of a killed process with this pid
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
