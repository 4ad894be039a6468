"""Writing files: :func:`checked_output`, the one check of an output path before a command's work
(issue 71, item 4), and :func:`atomic_write`, the one "temporary file, then rename" of plcore."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["atomic_write", "checked_output"]


def checked_output(path, *, flag: str = "out", inputs=(), trees=(), overwrite: bool = False) -> Path:
    """``path`` resolved as a file a command may write, checked before any work is done; else a
    :class:`~plcore.exceptions.ConfigError` in one line that names ``flag`` (``out=``, ``--out``).

    Refused: a directory; one of ``inputs`` (the same file, through links too); a path inside one
    of ``trees`` (folders whose files only the command's own writer may touch, such as a results
    tree); an existing file unless ``overwrite``; a folder that is missing, not a folder, or not
    writable (a read-only file system too)."""
    from plcore.exceptions import ConfigError

    said = f"{flag}{'' if flag.endswith('=') else ' '}{path}"
    out = Path(path).expanduser()
    target = out.resolve()
    if out.is_dir():
        raise ConfigError(f"{said}: is a folder; name a file to write")
    for given in inputs:
        if given is not None and Path(given).exists() and Path(given).resolve() == target:
            raise ConfigError(f"{said}: is the input {given}: it would be overwritten; name another file")
    for tree in trees:
        root = Path(tree).resolve()
        if target == root or root in target.parents:
            raise ConfigError(f"{said}: is inside {tree}, whose files this command must not replace; "
                              "write it elsewhere")
    if out.exists() and not overwrite:
        raise ConfigError(f"{said}: exists: not overwritten (overwrite replaces it)")
    folder = target.parent
    if not folder.exists():
        raise ConfigError(f"{said}: its folder {out.parent} does not exist")
    if not folder.is_dir():
        raise ConfigError(f"{said}: {out.parent} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ConfigError(f"{said}: its folder {out.parent} is not writable")
    return out


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
