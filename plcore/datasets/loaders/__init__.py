"""Data-set loaders: PALM .mat, UCI ARFF, CSV/Parquet/NPZ and scikit-learn built-ins.

Every error a loader raises is one line naming the file (and the offending rows, columns
or keys): a :class:`~plcore.exceptions.DatasetNotFoundError` for a missing file, else a
:class:`~plcore.exceptions.DataValidationError`. Files are never unpickled.

Named data sets are looked up in a *data home*: the ``data_home`` argument, else the
``PLCORE_DATA_HOME`` environment variable, else ``~/plcore_data``. The data home and
its immediate subfolders are searched (so ``datasets/palm/lost.mat`` is found from
``datasets/``). Anything else is loaded by path, by its suffix
(:data:`plcore.datasets.formats.FORMATS`: one module of this package per format).
"""

from __future__ import annotations

from pathlib import Path

from plcore.data import PLDataset
from plcore.datasets.catalog import CIFAR_DATASETS, IDX_DATASETS, PALM_DATASETS, SKLEARN_DATASETS, UCI_DATASETS
from plcore.datasets.formats import TableOptions, format_of, names, suffixes
from plcore.datasets.loaders.arff import load_arff
from plcore.datasets.loaders.cifar import cifar_kind, find_cifar_folder, load_cifar, load_image_npz
from plcore.datasets.loaders.csvfile import load_csv
from plcore.datasets.loaders.home import (PALM_URL, UCI_URL, _data_home_contents, find_dataset_file, get_data_home,
                                          known_names)
from plcore.datasets.loaders.idx import _IDX_PARTS, _idx_file, find_idx_folder, load_idx
from plcore.datasets.loaders.npz import load_npz
from plcore.datasets.loaders.palm import load_palm, load_splits
from plcore.datasets.loaders.parquet import load_parquet
from plcore.datasets.loaders.reading import _existing_file
from plcore.datasets.loaders.sklearn_sets import load_sklearn
from plcore.exceptions import DataValidationError
from plcore.feature_columns import CATEGORICAL

__all__ = [
    "PALM_DATASETS",
    "UCI_DATASETS",
    "SKLEARN_DATASETS",
    "IDX_DATASETS",
    "get_data_home",
    "find_dataset_file",
    "find_idx_folder",
    "load_idx",
    "load_cifar",
    "load_image_npz",
    "find_cifar_folder",
    "load_dataset",
    "load_palm",
    "load_arff",
    "load_csv",
    "load_parquet",
    "load_npz",
    "load_sklearn",
    "load_splits",
    "read_table",
    "read_tables",
]


def load_dataset(name_or_path, data_home=None, class_coverage=None, *, noisy: bool = False, label_column=None,
                 candidate_column=None, separator: str = ";", indicator_columns=None, id_column=None,
                 categorical: str = "error", strict: bool = False) -> PLDataset:
    """Load a data set by name (PALM, UCI, scikit-learn built-in, IDX images) or by path.

    Paths are read by their suffix (:data:`~plcore.datasets.formats.FORMATS`): ``.mat`` as PALM
    files, ``.arff`` as ARFF, ``.csv`` as CSV (:func:`load_csv`), ``.parquet`` as Parquet
    (:func:`load_parquet`) and ``.npz`` as NPZ (keys ``X``, optional ``S``, ``y``); a folder
    holding ``train-images-idx3-ubyte[.gz]`` and its companions as an IDX image set; ``cifar10``,
    ``cifar100``, ``plcifar10`` (and ``plcifar10-vaguest``), or a folder in CIFAR's python layout, as
    images (:func:`load_cifar`; an ``.npz`` of images ``x``, ``y``: :func:`load_image_npz`).
    ``label_column``, ``candidate_column``, ``separator`` and ``indicator_columns`` say how a CSV
    or Parquet file holds its labels (default: exact labels in the last column); ``id_column``
    names a column of row ids, read as no feature and kept in ``ids``
    (:class:`~plcore.data.RowIds`); with ``categorical`` they make one
    :class:`~plcore.datasets.formats.TableOptions`. A true label outside its candidate set is
    refused unless ``noisy`` (noisy partial labels; ``meta["noisy"]``). ``categorical``: a CSV,
    Parquet or ARFF file's nominal feature columns are refused (``"error"``) or one-hot encoded
    (``"onehot"``). ``strict``: a CSV or Parquet file's duplicated or empty ids and class labels that
    differ only in case or surrounding spaces are refused, not warned of.
    A file whose columns have names keeps them in ``meta["features"]``
    (:class:`~plcore.feature_columns.FeatureColumns`), so that a model reads new rows by column name.
    ``class_coverage`` (e.g. 0.99, the deep-PLL recipe's rule): keep only the most frequent
    classes that hold that share of the true labels (:meth:`PLDataset.frequent_classes`).
    """
    options = TableOptions(label_column, candidate_column, separator, indicator_columns, id_column, categorical,
                           strict)
    if categorical not in CATEGORICAL:
        raise DataValidationError(f"categorical must be one of {', '.join(CATEGORICAL)}, got {categorical!r}")
    dataset = _load(name_or_path, data_home, bool(noisy), options)
    return dataset if class_coverage is None else dataset.frequent_classes(float(class_coverage))


def _load(name_or_path, data_home, noisy, options: TableOptions) -> PLDataset:
    key = str(name_or_path)
    path = Path(key).expanduser()
    fmt = format_of(path.suffix)
    given = options.given()
    if given and not (fmt is not None and fmt.table_options):
        raise DataValidationError(f"{', '.join(given)} apply to {names(table_options=True)} files only, not to {key!r}")
    if options.categorical != "error" and key not in UCI_DATASETS and not (fmt is not None and fmt.categorical):
        raise DataValidationError(f"categorical={options.categorical} applies to {names(categorical=True)} files only "
                                  f"(and the UCI sets), not to {key!r}")
    if key in SKLEARN_DATASETS:
        return load_sklearn(key)
    if key in PALM_DATASETS:
        return load_palm(find_dataset_file(key, data_home), name=key, noisy=noisy)
    if key in UCI_DATASETS:
        return load_arff(find_dataset_file(key, data_home), name=key, categorical=options.categorical)
    if key in IDX_DATASETS:
        return load_idx(find_idx_folder(key, data_home), name=key, classes=IDX_DATASETS[key]["classes"])
    if key in CIFAR_DATASETS:
        return load_cifar(key, data_home=data_home, noisy=noisy)
    if path.is_dir() and _idx_file(path, _IDX_PARTS[0]):
        return load_idx(path)
    if path.is_dir() and cifar_kind(path):
        return load_cifar(cifar_kind(path), folder=path)
    if fmt is None:
        known = suffixes()
        raise DataValidationError(
            f"cannot load {key!r}: not a known data set name ({', '.join(known_names())}) "
            f"nor a path ending in {', '.join(known[:-1])} or {known[-1]} nor a folder of IDX files or "
            f"of CIFAR's python version; "
            f"{_data_home_contents(get_data_home(data_home))}"
        )
    return fmt.reader()(_existing_file(path), noisy=noisy, options=options)


def read_table(path, delimiter: str = ","):
    """The rows of a CSV file (its first row naming the columns; values as text, index the file
    lines, named ``line``), of a Parquet file or of an ARFF file (every attribute, its class too;
    index the rows from 0, named ``row``) as a pandas DataFrame, columns named as in the file: new
    rows for a model that reads its feature columns by name (:class:`~plcore.feature_columns.FeatureColumns`).
    A file that cannot be read, is empty or has rows of another width is refused in one line
    naming it. The reader is the suffix's in :data:`~plcore.datasets.formats.FORMATS` (a file of
    another suffix is read as CSV; ``delimiter`` applies to CSV only)."""
    path = _existing_file(path)
    fmt = format_of(path.suffix)
    reader = None if fmt is None else fmt.frame_reader()
    if reader is None:  # any other file is read as CSV, as before the suffix table
        reader = format_of(".csv").frame_reader()
    return reader(path, delimiter=delimiter)


def read_tables(path, delimiter: str = ",", cells: int | None = None):
    """The rows :func:`read_table` reads, as DataFrames of about ``cells`` cells each, read as they
    are used (CSV and Parquet; other formats, or ``cells=None``: one frame of all rows). Cut from
    the one frame :func:`read_table` gives: the same values, columns and index, piece by piece."""
    path = _existing_file(path)
    fmt = format_of(path.suffix)
    if fmt is None or fmt.frame_reader() is None:
        fmt = format_of(".csv")
    reader = fmt.frames_reader()
    if reader is None:
        yield fmt.frame_reader()(path, delimiter=delimiter)
        return
    yield from reader(path, delimiter=delimiter, cells=cells)
