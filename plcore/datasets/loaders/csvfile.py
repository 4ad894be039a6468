"""CSV files: a table of numeric features with exact labels or candidate sets (:mod:`.table`)."""

from __future__ import annotations

import csv

import numpy as np

from plcore.data import PLDataset
from plcore.datasets.formats import TableOptions
from plcore.datasets.loaders.reading import _accept_truth, _existing_file, _reading
from plcore.datasets.loaders.table import _table_dataset, _warn_of_faults, _warn_sets_read_as_labels
from plcore.exceptions import DataValidationError


def _csv_rows(path, delimiter, comments_after_header: bool = True):
    """Non-blank, non-comment rows of a CSV file as ``(file line, stripped fields)``; with
    ``comments_after_header=False`` a row starting with ``#`` is a comment only before the first
    row (new rows whose first field is ``#123`` are rows)."""
    with open(path, newline="", encoding="utf-8-sig") as fh:
        return list(_each_csv_row(fh, delimiter, comments_after_header))


def _each_csv_row(fh, delimiter, comments_after_header: bool = True):
    """The rows of :func:`_csv_rows` one at a time, from an open file."""
    reader = csv.reader(fh, delimiter=delimiter)
    seen = False
    for fields in reader:
        fields = [f.strip() for f in fields]
        if not any(fields) or (fields[0].startswith("#") and (comments_after_header or not seen)):
            continue
        seen = True
        yield reader.line_num, fields


def _check_width(path, rows, width: int) -> None:
    """Refuse, in one line naming the file lines, CSV rows (``(file line, fields)``) whose number of
    fields is not ``width``."""
    ragged = [(line, len(f)) for line, f in rows if len(f) != width]
    if ragged:
        shown = ", ".join(f"line {line} has {k}" for line, k in ragged[:5])
        more = f", ... ({len(ragged)} lines in total)" if len(ragged) > 5 else ""
        raise DataValidationError(f"{path}: rows have different numbers of fields: expected {width}, "
                                  f"but {shown}{more}")


def _names_a_column(option) -> bool:
    """Whether a column option gives a column by name (then the file's first row names them)."""
    if isinstance(option, str):
        return True
    if option is None or isinstance(option, (int, np.integer)):
        return False
    return any(isinstance(o, str) for o in option)


def load_csv(path, name: str | None = None, label_column=None, delimiter: str = ",",
             skip_header: int | None = None, *, candidate_column=None, separator: str = ";",
             indicator_columns=None, id_column=None, noisy: bool = False, categorical: str = "error",
             strict: bool = False) -> PLDataset:
    """Load a CSV file of numeric features with exact labels or candidate sets.

    Exact labels: one label column, ``label_column`` (a name or a position; default the last).
    Candidate sets, chosen explicitly: ``candidate_column``, one column
    of labels separated by ``separator`` (``b;d``), or ``indicator_columns``, 0/1 columns (a list
    of names, or a pattern such as ``"cand_*"``); ``label_column`` then names the optional
    column of true labels. A first row whose features are not all numbers is a header (unless
    ``skip_header`` says how many rows to skip; a column given by name means a header).
    Missing feature values (empty, ``?``, ``NA``, ``NaN``) and inf are rejected naming the rows
    and columns: nothing is imputed or dropped. Blank lines and lines starting with ``#`` are
    skipped. A true label outside its candidate set is refused unless ``noisy``.
    ``categorical="onehot"`` one-hot encodes the feature columns that hold values other than
    numbers (a header must name them); a header's names are kept (``meta["features"]``).
    Duplicated or empty ids and class labels that differ only in case or surrounding spaces are
    warned of in one line each kind, or refused with ``strict``.
    """
    options = TableOptions(label_column, candidate_column, separator, indicator_columns, id_column, categorical,
                           strict)
    return read_dataset(path, name=name, noisy=noisy, options=options, delimiter=delimiter, skip_header=skip_header)


def read_dataset(path, *, name: str | None = None, noisy: bool = False, options: TableOptions = TableOptions(),
                 delimiter: str = ",", skip_header: int | None = None) -> PLDataset:
    """The suffix table's reader of ``.csv`` files: :func:`load_csv` with its table options in one
    :class:`~plcore.datasets.formats.TableOptions`."""
    o = options
    path = _existing_file(path)
    with _reading(path, "a CSV file"):
        rows = _csv_rows(path, delimiter)
        if not rows:
            raise DataValidationError(f"{path}: the file is empty (no data rows)")
        label_column, candidate_column, partial = o.label_column, o.candidate_column, o.partial
        if skip_header is None:
            if any(_names_a_column(c) for c in (label_column, candidate_column, o.indicator_columns, o.id_column)):
                skip_header = 1  # columns given by name: the first row names them
            else:
                first = list(rows[0][1])
                # labels and candidate sets may be strings: a header has non-numeric features
                given = [c for c in (-1 if label_column is None and not partial else label_column, candidate_column)
                         if c is not None and -len(first) <= c < len(first)]
                for j in sorted({c % len(first) for c in given}, reverse=True):
                    del first[j]
                try:
                    [float(x) for x in first if x]
                    skip_header = 0
                except ValueError:
                    skip_header = 1
        header = rows[skip_header - 1][1] if skip_header else None
        rows = rows[skip_header:]
        if not rows:
            raise DataValidationError(f"{path}: no data rows after the header")
        _check_width(path, rows, len(header) if header is not None else len(rows[0][1]))
        lines = np.array([line for line, _ in rows])
        cells = np.array([f for _, f in rows], dtype=object)
        ds = _table_dataset(path, name, header, cells, lines, o)
    _warn_sets_read_as_labels(ds, path, o.separator)
    _warn_of_faults(ds, path, o.strict, lines)
    return _accept_truth(ds, noisy, path)


def read_frame(path, *, delimiter: str = ","):
    """A CSV file's rows as a DataFrame (its first row naming the columns; values as text, index
    the file lines, named ``line``): the suffix table's reader of new rows."""
    frames = read_frames(path, delimiter=delimiter)
    try:
        return next(frames)
    finally:
        frames.close()


def read_frames(path, *, delimiter: str = ",", cells: int | None = None):
    """The rows of :func:`read_frame` as DataFrames of about ``cells`` cells each (at least one
    row; None: one frame of all rows), read as they are used: memory does not grow with the file.
    The frames are those of the whole file cut into pieces (the same text, index and columns)."""
    import itertools

    import pandas as pd

    what = "a CSV file"
    with _reading(path, what):
        fh = open(path, newline="", encoding="utf-8-sig")
    with fh:
        rows = _each_csv_row(fh, delimiter, comments_after_header=False)
        with _reading(path, what):
            first = next(rows, None)
        header = None if first is None else first[1]
        size = None if cells is None or header is None else max(1, cells // max(1, len(header)))
        done = 0
        while True:
            with _reading(path, what):
                chunk = list(itertools.islice(rows, size))
            if not chunk:
                if not done:
                    raise DataValidationError(f"{path}: needs a header row naming the columns and at least one "
                                              "data row")
                return
            _check_width(path, chunk, len(header))
            done += len(chunk)
            yield pd.DataFrame([f for _, f in chunk], columns=header, dtype=object,
                               index=pd.Index([line for line, _ in chunk], name="line"))
            if size is None:
                return
