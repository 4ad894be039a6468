"""The file formats plcore reads, in one suffix table, and the options of a table file.

:data:`FORMATS` is the one place a suffix is tied to its reader: :func:`~plcore.datasets.load_dataset`
dispatches a path through it, :func:`~plcore.datasets.read_table` reads new rows through it, and
the messages that list the known suffixes are written from it. Each reader is named by its
import path (``"module:function"``), so that this module imports nothing: the registry lists
the ``file`` data set, and its config node takes :class:`TableOptions`' defaults, without
loading a reader.

Adding a format is one module of :mod:`plcore.datasets.loaders` with a
``read_dataset(path, *, name, noisy, options)`` function (and, for a table of named columns, a
``read_frame(path, *, delimiter)``, and where it can read them in pieces a
``read_frames(path, *, delimiter, cells)``), plus one :class:`Format` entry here.
"""

from __future__ import annotations

import importlib
from dataclasses import asdict, dataclass, fields
from typing import Any, Callable

__all__ = ["TableOptions", "Format", "FORMATS", "format_of", "suffixes", "frame_suffixes", "names"]


@dataclass(frozen=True)
class TableOptions:
    """How a table file (CSV, Parquet) holds its labels, and how nominal features are read.

    ``label_column``: the exact labels (default: the last column), or with candidate sets the
    optional true labels; ``candidate_column``: one column of labels separated by
    ``separator``; ``indicator_columns``: 0/1 columns (a list, or a pattern such as
    ``"cand_*"``); ``id_column``: row ids, read as no feature (:class:`~plcore.data.RowIds`).
    A column is a name or a position. ``categorical``: nominal feature columns refused
    (``"error"``) or one-hot encoded (``"onehot"``); it applies to ARFF files too. ``strict``:
    duplicated or empty ids and class labels that differ only in case or surrounding spaces are
    refused (:class:`~plcore.exceptions.DataValidationError`) instead of warned of.
    """

    label_column: Any = None
    candidate_column: Any = None
    separator: str = ";"
    indicator_columns: Any = None
    id_column: Any = None
    categorical: str = "error"
    strict: bool = False

    @property
    def partial(self) -> bool:
        """Whether the options ask for candidate sets (a candidate or indicator columns)."""
        return self.candidate_column is not None or self.indicator_columns is not None

    def given(self) -> list[str]:
        """The names of the label options (all but ``categorical``; ``strict`` too) set to other than their
        defaults."""
        default = TableOptions()
        return [f.name for f in fields(self)
                if f.name != "categorical" and getattr(self, f.name) != getattr(default, f.name)]

    def labels(self) -> dict:
        """The label options (all but ``categorical``; ``strict`` too) as a dict: a data set's config node."""
        return {k: v for k, v in asdict(self).items() if k != "categorical"}


@dataclass(frozen=True)
class Format:
    """One file format: its suffix, its name in messages, and its readers by import path.

    ``load`` reads a data set: ``read_dataset(path, *, name, noisy, options) -> PLDataset``
    (``options`` a :class:`TableOptions`); ``frame``, for a table of named columns, reads new
    rows: ``read_frame(path, *, delimiter) -> DataFrame``; ``frames`` reads them in pieces of about
    ``cells`` cells, as they are used: ``read_frames(path, *, delimiter, cells) -> iterator of
    DataFrames`` (the whole file's frame cut into pieces). ``table_options``: the file reads the
    label options of :class:`TableOptions`; ``categorical``: it reads ``categorical``.
    """

    suffix: str
    name: str
    load: str
    frame: str | None = None
    frames: str | None = None
    table_options: bool = False
    categorical: bool = False

    def reader(self) -> Callable:
        """The ``read_dataset`` function (imported on first use)."""
        return _resolve(self.load)

    def frame_reader(self) -> Callable | None:
        """The ``read_frame`` function, or ``None`` for a format without one."""
        return None if self.frame is None else _resolve(self.frame)

    def frames_reader(self) -> Callable | None:
        """The ``read_frames`` function, or ``None`` for a format that reads new rows whole."""
        return None if self.frames is None else _resolve(self.frames)


_LOADERS = "plcore.datasets.loaders"

#: the suffix table: every format a path may have, in the order messages list them
FORMATS: tuple[Format, ...] = (
    Format(".mat", "PALM", f"{_LOADERS}.palm:read_dataset"),
    Format(".arff", "ARFF", f"{_LOADERS}.arff:read_dataset", frame=f"{_LOADERS}.arff:read_frame", categorical=True),
    Format(".csv", "CSV", f"{_LOADERS}.csvfile:read_dataset", frame=f"{_LOADERS}.csvfile:read_frame",
           frames=f"{_LOADERS}.csvfile:read_frames",
           table_options=True, categorical=True),
    Format(".parquet", "Parquet", f"{_LOADERS}.parquet:read_dataset", frame=f"{_LOADERS}.parquet:read_frame",
           frames=f"{_LOADERS}.parquet:read_frames",
           table_options=True, categorical=True),
    Format(".npz", "NPZ", f"{_LOADERS}.npz:read_dataset"),
)


def format_of(suffix: str) -> Format | None:
    """The format of a file suffix (``".csv"``, compared lower-case), or ``None``."""
    suffix = suffix.lower()
    return next((f for f in FORMATS if f.suffix == suffix), None)


def suffixes() -> tuple[str, ...]:
    """Every known suffix, in the table's order."""
    return tuple(f.suffix for f in FORMATS)


def frame_suffixes() -> tuple[str, ...]:
    """The suffixes of the tables of named columns (those :func:`~plcore.datasets.read_table` reads)."""
    return tuple(f.suffix for f in FORMATS if f.frame is not None)


def names(**flags) -> str:
    """The names of the formats with ``flags`` (e.g. ``table_options=True``) in a phrase, the
    table formats first: ``"CSV and Parquet"``, ``"CSV, Parquet and ARFF"``."""
    chosen = sorted((f for f in FORMATS if all(getattr(f, k) == v for k, v in flags.items())),
                    key=lambda f: not f.table_options)
    chosen = [f.name for f in chosen]
    return chosen[0] if len(chosen) == 1 else f"{', '.join(chosen[:-1])} and {chosen[-1]}"


def _resolve(path: str) -> Callable:
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)
