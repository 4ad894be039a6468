"""Parquet files (pandas with pyarrow), read as a CSV file with a header is (:mod:`.table`)."""

from __future__ import annotations

from pathlib import Path

from plcore.data import PLDataset
from plcore.datasets.formats import TableOptions
from plcore.datasets.loaders.reading import _accept_truth, _existing_file, _reading
from plcore.datasets.loaders.table import _table_dataset, _warn_of_faults, _warn_sets_read_as_labels
from plcore.exceptions import DataValidationError, one_line


def _read_parquet(path: Path):
    """A Parquet file's rows (pandas with pyarrow); a file pyarrow cannot read, or one of no
    rows, is one line naming it."""
    import pandas as pd

    with _reading(path, "a Parquet file"):
        try:
            frame = pd.read_parquet(path)
        except Exception as err:  # noqa: BLE001 - pyarrow raises many kinds for a bad file
            raise DataValidationError(f"{path}: not a readable Parquet file ({type(err).__name__}: "
                                      f"{one_line(str(err)) or 'no detail'})") from err
    if frame.shape[0] == 0:
        raise DataValidationError(f"{path}: the file holds no rows")
    return frame


def load_parquet(path, name: str | None = None, label_column=None, *, candidate_column=None,
                 separator: str = ";", indicator_columns=None, id_column=None, noisy: bool = False,
                 categorical: str = "error", strict: bool = False) -> PLDataset:
    """Load a Parquet file (pandas with pyarrow) as :func:`load_csv` reads a CSV file with a
    header: numeric feature columns and exact labels or candidate sets given by the same
    options. A candidate column may also hold lists of labels (no separator then)."""
    options = TableOptions(label_column, candidate_column, separator, indicator_columns, id_column, categorical,
                           strict)
    return read_dataset(path, name=name, noisy=noisy, options=options)


def read_dataset(path, *, name: str | None = None, noisy: bool = False,
                 options: TableOptions = TableOptions()) -> PLDataset:
    """The suffix table's reader of ``.parquet`` files: :func:`load_parquet` with its table options
    in one :class:`~plcore.datasets.formats.TableOptions`."""
    path = _existing_file(path)
    with _reading(path, "a Parquet file"):
        frame = _read_parquet(path)
        header = [str(c) for c in frame.columns]
        cells = frame.astype(object).where(frame.notna(), None).to_numpy(dtype=object)
        ds = _table_dataset(path, name, header, cells, None, options)
    _warn_sets_read_as_labels(ds, path, options.separator)
    _warn_of_faults(ds, path, options.strict)
    return _accept_truth(ds, noisy, path)


def read_frame(path, *, delimiter: str = ","):
    """A Parquet file's rows as a DataFrame (index the rows from 0, named ``row``; columns named
    as text): the suffix table's reader of new rows (``delimiter`` is for CSV only)."""
    import pandas as pd

    frame = _read_parquet(path)
    frame.index = pd.RangeIndex(frame.shape[0], name="row")
    frame.columns = [str(c) for c in frame.columns]
    return frame


def read_frames(path, *, delimiter: str = ",", cells: int | None = None):
    """The rows of :func:`read_frame` as DataFrames of about ``cells`` cells each (batches of the
    file's row groups, read as they are used; None: one frame of all rows). Each batch is
    converted as the whole file is (its pandas metadata too), its index the rows' positions."""
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    if cells is None:
        yield read_frame(path)
        return
    what = "a Parquet file"
    with _reading(path, what):
        try:
            file = pq.ParquetFile(path)
        except Exception as err:  # noqa: BLE001 - pyarrow raises many kinds for a bad file
            raise DataValidationError(f"{path}: not a readable Parquet file ({type(err).__name__}: "
                                      f"{one_line(str(err)) or 'no detail'})") from err
    if file.metadata.num_rows == 0:
        raise DataValidationError(f"{path}: the file holds no rows")
    schema = file.schema_arrow
    batches = file.iter_batches(batch_size=max(1, cells // max(1, len(schema.names))))
    done = 0
    while True:
        with _reading(path, what):
            batch = next(batches, None)
            if batch is None:
                return
            frame = pa.Table.from_batches([batch], schema=schema).to_pandas()
        frame.index = pd.RangeIndex(done, done + frame.shape[0], name="row")
        frame.columns = [str(c) for c in frame.columns]
        done += frame.shape[0]
        yield frame
