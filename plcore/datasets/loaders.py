"""Data-set loaders: PALM .mat, UCI ARFF, CSV/Parquet/NPZ and scikit-learn built-ins.

Every error a loader raises is one line naming the file (and the offending rows, columns
or keys): a :class:`~plcore.exceptions.DatasetNotFoundError` for a missing file, else a
:class:`~plcore.exceptions.DataValidationError`. Files are never unpickled.

Named data sets are looked up in a *data home*: the ``data_home`` argument, else the
``PLCORE_DATA_HOME`` environment variable, else ``~/plcore_data``. The data home and
its immediate subfolders are searched (so ``datasets/palm/lost.mat`` is found from
``datasets/``). Anything else is loaded by path.
"""

from __future__ import annotations

import contextlib
import csv
import os
import re
import warnings
import zipfile
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp
from scipy.io import arff

from plcore.data import PLDataset, RowIds, _first, _row_list
from plcore.datasets.catalog import IDX_DATASETS, PALM_DATASETS, SKLEARN_DATASETS, UCI_DATASETS
from plcore.exceptions import DataValidationError, DatasetNotFoundError, PlcoreError
from plcore.tables import CATEGORICAL, MISSING, FeatureColumns, missing_cells

__all__ = [
    "PALM_DATASETS",
    "UCI_DATASETS",
    "SKLEARN_DATASETS",
    "IDX_DATASETS",
    "get_data_home",
    "find_dataset_file",
    "find_idx_folder",
    "load_idx",
    "load_dataset",
    "load_palm",
    "load_arff",
    "load_csv",
    "load_parquet",
    "load_npz",
    "load_sklearn",
    "load_splits",
    "read_table",
]

PALM_URL = "https://palm.seu.edu.cn/zhangml/Resources.htm#partial_data (Min-Ling Zhang's PALM lab)"
UCI_URL = "https://archive.ics.uci.edu/ (UCI repository; ARFF copies in the UCI++ collection)"



def _norm(stem: str) -> str:
    return re.sub(r"[^a-z0-9]", "", stem.lower())


def get_data_home(data_home=None) -> Path:
    """The data home: argument, else ``$PLCORE_DATA_HOME``, else ``~/plcore_data``."""
    if data_home is None:
        data_home = os.environ.get("PLCORE_DATA_HOME") or Path.home() / "plcore_data"
    return Path(data_home).expanduser()


def _search_dirs(home: Path) -> list[Path]:
    dirs = [home]
    if home.is_dir():
        dirs += sorted(p for p in home.iterdir() if p.is_dir())
    return dirs


_SUFFIXES = (".mat", ".arff", ".csv", ".parquet", ".npz")
#: ARFF: a numeric last attribute is read as the class only under one of these names
_CLASS_NAMES = ("class", "label", "target", "y")
#: CSV cells read as missing feature values (reported as such, never silently imputed)
_MISSING = MISSING


def _one_line(text) -> str:
    return " ".join(str(text).split())


def _data_home_contents(home: Path, limit: int = 20) -> str:
    """One phrase saying which data files the data home (and its subfolders) holds."""
    if not home.is_dir():
        return f"the data home {home} does not exist"
    files = sorted(
        str(f.relative_to(home))
        for d in _search_dirs(home) if d.is_dir()
        for f in d.iterdir() if f.suffix.lower() in _SUFFIXES and f.is_file()
    )
    if not files:
        return f"the data home {home} holds no {'/'.join(_SUFFIXES)} files"
    more = f", ... ({len(files)} in total)" if len(files) > limit else ""
    return f"the data home {home} holds {', '.join(files[:limit])}{more}"


def _existing_file(path) -> Path:
    """``path`` as a Path; :class:`DatasetNotFoundError` naming it when it is not a readable file."""
    path = Path(path).expanduser()
    if not path.is_file():
        where = "" if path.is_absolute() else f" (relative to the current directory {Path.cwd()})"
        what = "is not a file" if path.exists() else "does not exist"
        raise DatasetNotFoundError(f"data file {str(path)!r} {what}{where}")
    return path


@contextlib.contextmanager
def _reading(path: Path, what: str):
    """Turn any error raised while reading ``path`` into one line naming the file."""
    try:
        with warnings.catch_warnings():
            # readers' own warnings (e.g. scipy's MatReadWarning) would add lines to stderr; what they
            # warn about is either harmless or reported below as an error naming the file
            warnings.simplefilter("ignore")
            yield
    except DatasetNotFoundError:
        raise
    except DataValidationError as err:
        msg = _one_line(err)
        if str(path) in msg:
            raise
        raise type(err)(f"{path}: {msg}") from err
    except PlcoreError:
        raise
    except Exception as err:  # noqa: BLE001 - whatever a reader raises, say which file and why
        detail = _one_line(err) or "unexpected end of file"
        raise DataValidationError(f"{path}: cannot read it as {what} ({type(err).__name__}: {detail})") from err


def _check_classes(y, classes, what="the labels"):
    """Exact labels must hold at least two classes (else there is nothing to learn)."""
    present = np.unique(y)
    if present.size < 2:
        value = np.asarray(classes)[present[0]].item() if present.size else None
        raise DataValidationError(
            f"{what} hold only one class ({value!r} in all {len(y)} rows); "
            "partial-label learning needs at least 2 classes"
        )


def find_dataset_file(name: str, data_home=None) -> Path:
    """Locate the file of a named PALM/UCI data set; raise a helpful error if absent."""
    if name in PALM_DATASETS:
        stems, suffix, source = PALM_DATASETS[name], ".mat", PALM_URL
    elif name in UCI_DATASETS:
        stems, suffix, source = UCI_DATASETS[name], ".arff", UCI_URL
    else:
        raise DataValidationError(
            f"unknown data set name {name!r}; known: {sorted(known_names())}; "
            f"{_data_home_contents(get_data_home(data_home))}"
        )
    home = get_data_home(data_home)
    wanted = {_norm(s) for s in stems}
    dirs = _search_dirs(home)
    for d in dirs:
        if not d.is_dir():
            continue
        for f in sorted(d.iterdir()):
            if f.suffix.lower() == suffix and _norm(f.stem) in wanted:
                return f
    looked = ", ".join(str(d) for d in dirs) if home.is_dir() else f"{home} (does not exist)"
    holds = f" ({_data_home_contents(home)})" if home.is_dir() else ""
    raise DatasetNotFoundError(
        f"data set {name!r} not found: looked for {stems[0]}{suffix} in {looked}{holds}. "
        f"Set PLCORE_DATA_HOME (or pass data_home) to the folder holding it; "
        f"a public copy is at {source}"
    )


def known_names() -> list[str]:
    return list(PALM_DATASETS) + list(UCI_DATASETS) + list(SKLEARN_DATASETS) + list(IDX_DATASETS)


#: the four files of an IDX image set, as MNIST and Fashion-MNIST ship them (optionally .gz)
_IDX_PARTS = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
              "t10k-labels-idx1-ubyte")


def _idx_file(folder: Path, stem: str) -> Path | None:
    for suffix in ("", ".gz"):
        if (folder / (stem + suffix)).is_file():
            return folder / (stem + suffix)
    return None


def find_idx_folder(name: str, data_home=None) -> Path:
    """The folder holding IDX set ``name``'s four files: ``<data home>/<folder>`` (or the data
    home itself), else where its Debian package installs them; a one-line error naming the
    package when none does."""
    info = IDX_DATASETS[name]
    home = get_data_home(data_home)
    candidates = [home / info["folder"], home, Path(info["system"])]
    for folder in candidates:
        if all(_idx_file(folder, stem) for stem in _IDX_PARTS):
            return folder
    raise DatasetNotFoundError(
        f"data set {name!r} not found: no {_IDX_PARTS[0]}[.gz] and its three companions in "
        f"{', '.join(str(c) for c in candidates)}; install Debian's {info['package']} "
        f"(apt-get install {info['package']}) or put the IDX files in {home / info['folder']}")


def _read_idx(path: Path) -> np.ndarray:
    """One IDX array (the MNIST format: magic 0x0000 0x08 <ndim>, big-endian int32 dimensions,
    unsigned bytes), read from a plain or gzipped file."""
    import gzip

    with _reading(path, "an IDX file"):
        with (gzip.open if path.suffix == ".gz" else open)(path, "rb") as fh:
            raw = fh.read()
        if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
            raise DataValidationError("not an IDX file of unsigned bytes (bad magic number)")
        ndim = raw[3]
        dims = np.frombuffer(raw, dtype=">i4", count=ndim, offset=4).astype(np.int64)
        data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
        if data.size != int(np.prod(dims)):
            raise DataValidationError(f"holds {data.size} values, its header says {int(np.prod(dims))}")
        return data.reshape(tuple(dims))


def load_idx(folder, name: str | None = None, classes=None) -> PLDataset:
    """An IDX image set (MNIST layout) from ``folder``: the training then the test images, one row
    of pixels / 255 each (70,000 x 784 for Fashion-MNIST), exact labels (a bag generator makes the
    candidate sets). ``meta["test_rows"]`` marks the official test part."""
    folder = Path(folder).expanduser()
    paths = [_idx_file(folder, stem) for stem in _IDX_PARTS]
    if not all(paths):
        missing = [stem for stem, p in zip(_IDX_PARTS, paths) if p is None]
        raise DatasetNotFoundError(f"{folder}: no IDX file {', '.join(missing)}[.gz]")
    Xtr, ytr, Xte, yte = (_read_idx(p) for p in paths)
    for X, y, p in ((Xtr, ytr, paths[0]), (Xte, yte, paths[2])):
        if X.shape[0] != y.shape[0]:
            raise DataValidationError(f"{p}: {X.shape[0]} images but {y.shape[0]} labels")
    X = np.concatenate([Xtr.reshape(len(Xtr), -1), Xte.reshape(len(Xte), -1)]).astype(np.float64) / 255.0
    y = np.concatenate([ytr, yte]).astype(np.int64)
    q = int(y.max()) + 1
    names = np.asarray(classes if classes is not None and len(classes) == q else [str(c) for c in range(q)])
    _check_classes(y, names)
    test_rows = np.zeros(len(y), dtype=bool)
    test_rows[len(ytr):] = True
    return PLDataset(X, None, y, classes=names, name=name or folder.name,
                     meta={"source": str(folder), "test_rows": test_rows, "image_shape": tuple(Xtr.shape[1:])})


def load_dataset(name_or_path, data_home=None, class_coverage=None, *, noisy: bool = False, label_column=None,
                 candidate_column=None, separator: str = ";", indicator_columns=None, id_column=None,
                 categorical: str = "error") -> PLDataset:
    """Load a data set by name (PALM, UCI, scikit-learn built-in, IDX images) or by path.

    Paths ending in ``.mat`` are read as PALM files, ``.arff`` as ARFF, ``.csv`` as CSV
    (:func:`load_csv`), ``.parquet`` as Parquet (:func:`load_parquet`) and ``.npz`` as NPZ (keys
    ``X``, optional ``S``, ``y``); a folder holding ``train-images-idx3-ubyte[.gz]`` and its
    companions as an IDX image set. ``label_column``, ``candidate_column``, ``separator`` and
    ``indicator_columns`` say how a CSV or Parquet file holds its labels (default: exact labels
    in the last column); ``id_column`` names a column of row ids, read as no feature and kept in
    ``ids`` (:class:`~plcore.data.RowIds`). A true label outside its candidate set is refused unless ``noisy``
    (noisy partial labels; ``meta["noisy"]``). ``categorical``: a CSV, Parquet or ARFF file's
    nominal feature columns are refused (``"error"``) or one-hot encoded (``"onehot"``).
    A file whose columns have names keeps them in ``meta["features"]``
    (:class:`~plcore.tables.FeatureColumns`), so that a model reads new rows by column name.
    ``class_coverage`` (e.g. 0.99, the deep-PLL recipe's rule): keep only the most frequent
    classes that hold that share of the true labels (:meth:`PLDataset.frequent_classes`).
    """
    table = {"label_column": label_column, "candidate_column": candidate_column, "separator": separator,
             "indicator_columns": indicator_columns, "id_column": id_column}
    if categorical not in CATEGORICAL:
        raise DataValidationError(f"categorical must be one of {', '.join(CATEGORICAL)}, got {categorical!r}")
    dataset = _load(name_or_path, data_home, bool(noisy), table, categorical)
    return dataset if class_coverage is None else dataset.frequent_classes(float(class_coverage))


_TABLE_DEFAULTS = {"label_column": None, "candidate_column": None, "separator": ";", "indicator_columns": None,
                   "id_column": None}


def _load(name_or_path, data_home, noisy, table, categorical="error") -> PLDataset:
    key = str(name_or_path)
    path = Path(key).expanduser()
    tables = {".csv": load_csv, ".parquet": load_parquet}
    given = [k for k, v in table.items() if v != _TABLE_DEFAULTS[k]]
    if given and path.suffix.lower() not in tables:
        raise DataValidationError(f"{', '.join(given)} apply to CSV and Parquet files only, not to {key!r}")
    if categorical != "error" and key not in UCI_DATASETS and path.suffix.lower() not in (*tables, ".arff"):
        raise DataValidationError(f"categorical={categorical} applies to CSV, Parquet and ARFF files only (and the UCI sets), not to "
                                  f"{key!r}")
    if key in SKLEARN_DATASETS:
        return load_sklearn(key)
    if key in PALM_DATASETS:
        return load_palm(find_dataset_file(key, data_home), name=key, noisy=noisy)
    if key in UCI_DATASETS:
        return load_arff(find_dataset_file(key, data_home), name=key, categorical=categorical)
    if key in IDX_DATASETS:
        return load_idx(find_idx_folder(key, data_home), name=key, classes=IDX_DATASETS[key]["classes"])
    if path.is_dir() and _idx_file(path, _IDX_PARTS[0]):
        return load_idx(path)
    suffix = path.suffix.lower()
    if suffix in tables:
        return tables[suffix](_existing_file(path), noisy=noisy, categorical=categorical, **table)
    loaders = {".mat": load_palm, ".npz": load_npz}
    if suffix in loaders:
        return loaders[suffix](_existing_file(path), noisy=noisy)
    if suffix == ".arff":
        return load_arff(_existing_file(path), categorical=categorical)
    raise DataValidationError(
        f"cannot load {key!r}: not a known data set name ({', '.join(known_names())}) "
        f"nor a path ending in .mat, .arff, .csv, .parquet or .npz nor a folder of IDX files; "
        f"{_data_home_contents(get_data_home(data_home))}"
    )


def _labels_from_onehot(T):
    """Ground-truth indices from a one-hot (n, q) ``target`` matrix."""
    T = T.toarray() if sp.issparse(T) else np.asarray(T)
    counts = (T != 0).sum(axis=1)
    bad = np.nonzero(counts != 1)[0]
    if bad.size:
        raise DataValidationError(
            f"'target' rows {_first(bad)} are not one-hot (each example needs exactly one true label)"
        )
    return np.argmax(T, axis=1)


def _orient(M, n, key="label matrix"):
    """PALM label matrices are q x n; return n x q (transposing when needed)."""
    if M.ndim == 2 and M.shape[0] == n and M.shape[1] != n:
        return M
    if M.ndim == 2 and M.shape[1] == n:
        return M.T
    raise DataValidationError(
        f"{key!r} has shape {M.shape} but 'data' has {n} rows (examples); "
        "a PALM label matrix is q x n (or n x q)"
    )


def _numeric_matrix(value, key):
    if sp.issparse(value):
        value = value.toarray()
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise DataValidationError(
            f"{key!r} is not a numeric matrix (dtype {np.asarray(value).dtype}); "
            "PALM files store it as a double or sparse matrix"
        ) from None


def load_palm(path, name: str | None = None, *, noisy: bool = False) -> PLDataset:
    """Load a PALM-format .mat file (keys ``data``, ``partial_target``, ``target``).

    Label matrices are stored q x n (sparse or dense) and returned n x q; a sparse
    ``partial_target`` stays sparse (CSR). Split masks ``train_idx``/``test_idx`` (cell
    arrays of 0/1 masks), when present, are returned in ``meta["splits"]`` as a list of
    ``(train_mask, test_mask)`` boolean arrays. Candidate rows must not be empty; a true label
    outside its candidate set is refused unless ``noisy``.
    """
    path = _existing_file(path)
    with _reading(path, "a MATLAB .mat file"):
        try:
            mat = scipy.io.loadmat(path)
        except NotImplementedError as err:  # MATLAB v7.3 (HDF5)
            raise DataValidationError(f"{path}: MATLAB v7.3 files are not supported; re-save with -v7") from err
        except Exception as err:  # noqa: BLE001 - truncated or corrupt: scipy raises OSError, ValueError, ...
            raise DataValidationError(
                f"{path}: not a readable MATLAB .mat file, truncated or corrupt? "
                f"({type(err).__name__}: {_one_line(err) or 'no detail'})"
            ) from err
        found = sorted(k for k in mat if not k.startswith("__"))
        missing = [k for k in ("data", "partial_target") if k not in mat]
        if missing:
            raise DataValidationError(
                f"{path}: missing key(s) {', '.join(missing)}; a PALM .mat file holds data (n x d) and "
                f"partial_target (q x n), optionally target, train_idx, test_idx; "
                f"found: {', '.join(found) or 'no variables'}"
            )
        X = _numeric_matrix(mat["data"], "data")
        if X.ndim != 2:
            raise DataValidationError(f"'data' must be an n x d matrix, got shape {X.shape}")
        n = X.shape[0]
        S = _orient(mat["partial_target"], n, "partial_target")
        S = sp.csr_matrix(S) if sp.issparse(S) else np.asarray(S)
        y = _labels_from_onehot(_orient(mat["target"], n, "target")) if "target" in mat else None
        meta = {"source": str(path)}
        if "train_idx" in mat and "test_idx" in mat:
            meta["splits"] = load_splits(mat)
        ds = PLDataset(X, S, y, None, name or path.stem, meta)
        ds.validate()
    return _accept_truth(ds, noisy, path)


def load_splits(source) -> list[tuple[np.ndarray, np.ndarray]]:
    """Predefined splits from a .mat file (or its loaded dict): ``train_idx``/``test_idx``.

    Each is a cell array of 0/1 masks (or of 1-based index vectors); returns a list of
    ``(train_mask, test_mask)`` boolean arrays.
    """
    if isinstance(source, (str, Path)):
        path = _existing_file(source)
        with _reading(path, "a MATLAB .mat file"):
            return load_splits(scipy.io.loadmat(path))
    mat = source
    for key in ("data", "train_idx", "test_idx"):
        if key not in mat:
            raise DataValidationError(f"missing key {key!r} needed for predefined splits")
    n = mat["data"].shape[0]

    def as_mask(v, key, i):
        v = np.asarray(v.toarray() if sp.issparse(v) else v).ravel()
        if v.size == n and set(np.unique(v)) <= {0, 1}:
            return v.astype(bool)
        try:
            idx = v.astype(np.int64)
        except (TypeError, ValueError):
            raise DataValidationError(f"{key!r} split {i} is neither a 0/1 mask nor index vector") from None
        if idx.size and (idx.min() < 1 or idx.max() > n or np.any(idx != v)):
            raise DataValidationError(f"{key!r} split {i} holds indices outside 1..{n} (MATLAB, 1-based)")
        mask = np.zeros(n, dtype=bool)
        mask[idx - 1] = True  # MATLAB 1-based indices
        return mask

    train, test = mat["train_idx"].ravel(), mat["test_idx"].ravel()
    if len(train) != len(test):
        raise DataValidationError(f"train_idx has {len(train)} splits but test_idx has {len(test)}")
    return [(as_mask(a, "train_idx", i), as_mask(b, "test_idx", i)) for i, (a, b) in enumerate(zip(train, test))]


def load_arff(path, name: str | None = None, *, categorical: str = "error") -> PLDataset:
    """Load an ARFF file: numeric features, the last attribute is the class.

    The class attribute must be nominal (or numeric with integer values and named
    class/label/target/y). Classes are the nominal values in declaration order
    (``classes``); ``y_true`` holds their indices. No candidate sets: generate them with a
    bag generator. Nominal feature attributes are refused, or one-hot encoded with
    ``categorical="onehot"`` (the categories those the rows hold); the attributes' names are
    kept (``meta["features"]``).
    """
    path = _existing_file(path)
    with _reading(path, "an ARFF file"):
        try:
            data, meta = arff.loadarff(path)
        except Exception as err:  # noqa: BLE001 - scipy's ARFF parser raises many kinds
            detail = _one_line(err) or "no valid @relation/@attribute/@data header"
            raise DataValidationError(f"{path}: not a valid ARFF file ({type(err).__name__}: {detail})"
                                      f"{_arff_bad_row(path)}") from err
        extra = _arff_bad_row(path, counts_only=True)
        if extra:
            raise DataValidationError(f"{path}: malformed ARFF data{extra}")
        names = meta.names()
        if len(names) < 2:
            raise DataValidationError(
                f"{path}: needs at least one feature attribute and a class attribute (the last one); "
                f"found {len(names)} attribute(s)"
            )
        cls_name = names[-1]
        kind, values = meta[cls_name]
        feats = names[:-1]
        if kind != "nominal" and not (kind == "numeric" and cls_name.lower() in _CLASS_NAMES):
            nominal = [f for f in feats if meta[f][0] == "nominal"]
            hint = f"; nominal attribute(s) {nominal} come earlier: put the class last" if nominal else ""
            raise DataValidationError(
                f"{path}: no class attribute: the last attribute {cls_name!r} is {kind}, but the class is "
                f"read from the last attribute and must be nominal (e.g. @attribute class {{a,b,c}}){hint}"
            )
        nominal = [f for f in feats if meta[f][0] == "nominal"]
        not_numeric = [f for f in feats if meta[f][0] not in ("numeric", "nominal")]
        if not_numeric or (nominal and categorical != "onehot"):
            hint = f"; {_NOMINAL_HINT}" if nominal and not not_numeric else ""
            raise DataValidationError(f"{path}: non-numeric feature attributes {(not_numeric or nominal)[:10]}{hint}")
        if data.shape[0] == 0:
            raise DataValidationError(f"{path}: the @data section holds no rows")
        if nominal:
            frame = _arff_features(path, data, meta, feats, nominal)
            features = FeatureColumns(categorical=categorical).fit(frame)
            X = features.transform(frame)
        else:  # missing values are refused by the data set's checks; the names kept afterwards
            X, features = np.column_stack([data[f].astype(np.float64) for f in feats]), None
        if kind == "nominal":
            raw = np.array([v.decode() if isinstance(v, bytes) else str(v) for v in data[cls_name]])
            classes = np.asarray(values)
            lookup = {v: i for i, v in enumerate(values)}
            missing = [i for i, v in enumerate(raw) if v not in lookup]
            if missing:
                raise DataValidationError(f"{path}: class value missing/unknown at rows {_first(missing)}")
            y = np.array([lookup[v] for v in raw], dtype=np.int64)
        else:
            raw = data[cls_name].astype(np.float64)
            bad = np.nonzero(~np.isfinite(raw) | (raw != np.round(raw)))[0]
            if bad.size:
                raise DataValidationError(
                    f"{path}: numeric class {cls_name!r} is missing or not an integer at rows {_first(bad)}"
                )
            classes, y = np.unique(raw.astype(np.int64), return_inverse=True)
        _check_classes(y, classes, f"the labels ({cls_name!r})")
        ds = PLDataset(X, None, y, classes, name or path.stem, {"source": str(path)})
        if features is None and len(set(feats)) == len(feats):
            import pandas as pd

            features = FeatureColumns().fit(pd.DataFrame(ds.X, columns=feats))
        if features is not None:
            ds.meta["features"] = features
    return ds


def _arff_frame(data, meta, names):
    """The attributes ``names`` of an ARFF file's rows as a DataFrame: nominal values as strings
    (a missing ``?`` as NaN), numeric ones as floats."""
    import pandas as pd

    columns = {}
    for f in names:
        if meta[f][0] == "nominal":
            values = np.array([v.decode() if isinstance(v, bytes) else str(v) for v in data[f]], dtype=object)
            columns[f] = np.where(missing_cells(values), np.nan, values)
        else:
            columns[f] = data[f].astype(np.float64)
    return pd.DataFrame(columns)


def _arff_features(path, data, meta, feats, nominal):
    """The feature attributes of an ARFF file's rows (:func:`_arff_frame`); a missing value
    (``?``) is refused naming its rows and attributes."""
    frame = _arff_frame(data, meta, feats)
    gone = frame.isna().to_numpy() | ~np.isfinite(np.column_stack(
        [np.zeros(len(frame)) if f in nominal else frame[f].to_numpy() for f in feats]))
    if gone.any():
        r, c = np.nonzero(gone)
        raise DataValidationError(f"{path}: missing or non-finite feature values at rows {_first(np.unique(r))}, "
                                  f"attributes {[feats[j] for j in np.unique(c)][:10]}; nothing is imputed: fill or "
                                  "drop them first")
    return frame


_ARFF_ATTRIBUTE = re.compile(r"""^@attribute\s+('[^']*'|"[^"]*"|\S+)\s+(.*)$""", re.IGNORECASE)


def _arff_bad_row(path, counts_only: bool = False) -> str:
    """Best effort: ``"; first bad data row i (file line L): ..."``, else ``""``.

    After scipy failed to parse ``path``, every check; after it succeeded (``counts_only``),
    only the number of values of plain rows (scipy silently drops values beyond the last
    attribute); rows with quotes or braces (sparse ARFF) are not checked then.
    """
    try:
        attrs, in_data, row = [], False, 0
        with open(path, encoding="utf-8", errors="replace") as fh:
            for lineno, line in enumerate(fh, start=1):
                line = line.strip()
                if not line or line.startswith("%"):
                    continue
                if not in_data:
                    m = _ARFF_ATTRIBUTE.match(line)
                    if m:
                        kind = m.group(2).strip()
                        if kind.startswith("{") and kind.endswith("}"):
                            attrs.append({v.strip().strip("'\"") for v in kind[1:-1].split(",")})
                        else:
                            attrs.append(kind.lower() in ("numeric", "real", "integer") or None)
                    in_data = line.lower().startswith("@data")
                    continue
                at = f"; first bad data row {row} (file line {lineno}): "
                if counts_only and any(ch in line for ch in "'\"{"):
                    row += 1
                    continue
                fields = [f.strip().strip("'\"") for f in line.split(",")]
                if len(fields) != len(attrs):
                    return f"{at}{len(fields)} values for {len(attrs)} attributes"
                if counts_only:
                    row += 1
                    continue
                for value, spec in zip(fields, attrs):
                    if value == "?" or spec is None:  # missing, or a type not checked here
                        continue
                    if isinstance(spec, set) and value not in spec:
                        return f"{at}{value!r} is not one of {sorted(spec)}"
                    if spec is True:
                        try:
                            float(value)
                        except ValueError:
                            return f"{at}{value!r} is not a number"
                row += 1
    except OSError:
        pass
    return ""


#: what a refusal of nominal features says
_NOMINAL_HINT = "nominal features are one-hot encoded with categorical=onehot (dataset.categorical=onehot)"


def _parse_cells(cells):
    """Float matrix of feature cells (missing tokens and ``None`` -> NaN) and the ``(row, column,
    value)`` of the cells that are not numbers."""
    X = np.empty(cells.shape)
    bad = []
    for (i, j), v in np.ndenumerate(cells):
        if v is None or (isinstance(v, str) and v.lower() in _MISSING):
            X[i, j] = np.nan
            continue
        try:
            X[i, j] = float(v)
        except (TypeError, ValueError):
            bad.append((i, j, v))
    return X, bad


def _csv_rows(path, delimiter, comments_after_header: bool = True):
    """Non-blank, non-comment rows of a CSV file as ``(file line, stripped fields)``; with
    ``comments_after_header=False`` a row starting with ``#`` is a comment only before the first
    row (new rows whose first field is ``#123`` are rows)."""
    rows = []
    with open(path, newline="", encoding="utf-8-sig") as fh:
        reader = csv.reader(fh, delimiter=delimiter)
        for fields in reader:
            fields = [f.strip() for f in fields]
            if not any(fields) or (fields[0].startswith("#") and (comments_after_header or not rows)):
                continue
            rows.append((reader.line_num, fields))
    return rows


def _check_width(path, rows, width: int) -> None:
    """Refuse, in one line naming the file lines, CSV rows (``(file line, fields)``) whose number of
    fields is not ``width``."""
    ragged = [(line, len(f)) for line, f in rows if len(f) != width]
    if ragged:
        shown = ", ".join(f"line {line} has {k}" for line, k in ragged[:5])
        more = f", ... ({len(ragged)} lines in total)" if len(ragged) > 5 else ""
        raise DataValidationError(f"{path}: rows have different numbers of fields: expected {width}, "
                                  f"but {shown}{more}")


def _typed_labels(labels):
    """Label strings as numbers where they all are (integers where whole, so that "2" sorts
    before "10"), else unchanged."""
    try:
        num = labels.astype(np.float64)
    except ValueError:
        return labels
    return num.astype(np.int64) if np.all(num == np.round(num)) else num


def _names_a_column(option) -> bool:
    """Whether a column option gives a column by name (then the file's first row names them)."""
    if isinstance(option, str):
        return True
    if option is None or isinstance(option, (int, np.integer)):
        return False
    return any(isinstance(o, str) for o in option)


def load_csv(path, name: str | None = None, label_column=None, delimiter: str = ",",
             skip_header: int | None = None, *, candidate_column=None, separator: str = ";",
             indicator_columns=None, id_column=None, noisy: bool = False, categorical: str = "error") -> PLDataset:
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
    """
    path = _existing_file(path)
    with _reading(path, "a CSV file"):
        rows = _csv_rows(path, delimiter)
        if not rows:
            raise DataValidationError(f"{path}: the file is empty (no data rows)")
        partial = candidate_column is not None or indicator_columns is not None
        if skip_header is None:
            if any(_names_a_column(c) for c in (label_column, candidate_column, indicator_columns, id_column)):
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
        ds = _table_dataset(path, name, header, cells, lines, label_column=label_column,
                            candidate_column=candidate_column, separator=separator,
                            indicator_columns=indicator_columns, id_column=id_column, categorical=categorical)
    _warn_sets_read_as_labels(ds, path, separator)
    return _accept_truth(ds, noisy, path)


def _read_parquet(path: Path):
    """A Parquet file's rows (pandas with pyarrow); a file pyarrow cannot read, or one of no
    rows, is one line naming it."""
    import pandas as pd

    with _reading(path, "a Parquet file"):
        try:
            frame = pd.read_parquet(path)
        except Exception as err:  # noqa: BLE001 - pyarrow raises many kinds for a bad file
            raise DataValidationError(f"{path}: not a readable Parquet file ({type(err).__name__}: "
                                      f"{_one_line(err) or 'no detail'})") from err
    if frame.shape[0] == 0:
        raise DataValidationError(f"{path}: the file holds no rows")
    return frame


def read_table(path, delimiter: str = ","):
    """The rows of a CSV file (its first row naming the columns; values as text, index the file
    lines, named ``line``), of a Parquet file or of an ARFF file (every attribute, its class too;
    index the rows from 0, named ``row``) as a pandas DataFrame, columns named as in the file: new
    rows for a model that reads its feature columns by name (:class:`~plcore.tables.FeatureColumns`).
    A file that cannot be read, is empty or has rows of another width is refused in one line
    naming it."""
    import pandas as pd

    path = _existing_file(path)
    if path.suffix.lower() == ".parquet":
        frame = _read_parquet(path)
        frame.index = pd.RangeIndex(frame.shape[0], name="row")
        frame.columns = [str(c) for c in frame.columns]
        return frame
    if path.suffix.lower() == ".arff":
        with _reading(path, "an ARFF file"):
            data, meta = arff.loadarff(path)
            frame = _arff_frame(data, meta, meta.names())
        frame.index = pd.RangeIndex(frame.shape[0], name="row")
        return frame
    with _reading(path, "a CSV file"):
        rows = _csv_rows(path, delimiter, comments_after_header=False)
    if len(rows) < 2:
        raise DataValidationError(f"{path}: needs a header row naming the columns and at least one data row")
    (_, header), rows = rows[0], rows[1:]
    _check_width(path, rows, len(header))
    return pd.DataFrame([f for _, f in rows], columns=header, dtype=object,
                        index=pd.Index([line for line, _ in rows], name="line"))


def load_parquet(path, name: str | None = None, label_column=None, *, candidate_column=None,
                 separator: str = ";", indicator_columns=None, id_column=None, noisy: bool = False,
                 categorical: str = "error") -> PLDataset:
    """Load a Parquet file (pandas with pyarrow) as :func:`load_csv` reads a CSV file with a
    header: numeric feature columns and exact labels or candidate sets given by the same
    options. A candidate column may also hold lists of labels (no separator then)."""
    path = _existing_file(path)
    with _reading(path, "a Parquet file"):
        frame = _read_parquet(path)
        header = [str(c) for c in frame.columns]
        cells = frame.astype(object).where(frame.notna(), None).to_numpy(dtype=object)
        ds = _table_dataset(path, name, header, cells, None, label_column=label_column,
                            candidate_column=candidate_column, separator=separator,
                            indicator_columns=indicator_columns, id_column=id_column, categorical=categorical)
    _warn_sets_read_as_labels(ds, path, separator)
    return _accept_truth(ds, noisy, path)


def _table_dataset(path, name, header, cells, lines, *, label_column, candidate_column, separator,
                   indicator_columns, id_column=None, categorical="error") -> PLDataset:
    """A data set from a table's cells (an object array, one row per example): the columns the
    options name, the features from all the others. ``lines`` (file lines of the rows, CSV) or
    ``None`` (Parquet) for the messages."""
    width = cells.shape[1]
    partial = candidate_column is not None or indicator_columns is not None
    if candidate_column is not None and indicator_columns is not None:
        raise DataValidationError(f"{path}: give candidate_column (one column of separated labels) or "
                                  "indicator_columns (0/1 columns), not both")

    def position(option, value):
        if isinstance(value, str):
            if header is None:
                raise DataValidationError(f"{path}: {option}={value!r} names a column, but the file has no header "
                                          "row naming its columns")
            if value not in header:
                shown = ", ".join(repr(h) for h in header[:20]) + (", ..." if len(header) > 20 else "")
                raise DataValidationError(f"{path}: {option}={value!r}: no such column; the columns are {shown}")
            return header.index(value)
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            if not -width <= value < width:
                raise DataValidationError(f"{path}: {option}={value} is out of range for {width} columns")
            return int(value) % width
        raise DataValidationError(f"{path}: {option} must be a column name or position, got {value!r}")

    def at(r):  # data rows (0-based) and, for a CSV file, their file lines
        r = np.asarray(r)
        return f"rows {_first(r)}" + (f" (file lines {_first(lines[r])})" if lines is not None else "")

    if label_column is None and not partial:
        label_column = -1
    lab = None if label_column is None else position("label_column", label_column)
    cand = None if candidate_column is None else position("candidate_column", candidate_column)
    ind, ind_names = _indicator_columns(path, header, indicator_columns, position)
    rid = None if id_column is None else position("id_column", id_column)
    used = [j for j in (lab, cand, *ind, rid) if j is not None]
    if len(set(used)) < len(used):
        raise DataValidationError(f"{path}: the label, candidate, indicator and id columns overlap "
                                  f"({', '.join(_column_name(header, j) for j in sorted(used))})")
    if width - len(used) < 1:
        what = "label column" if not partial else "label and candidate columns"
        raise DataValidationError(f"{path}: needs at least one feature column besides the {what}")
    feat_cols = [j for j in range(width) if j not in used]
    col_names = [header[j] for j in feat_cols] if header is not None else list(range(len(feat_cols)))

    def where(r, c):  # data rows, their file lines, and feature columns (names if a header)
        r, c = np.unique(r), np.unique(c)
        cols = ", ".join(repr(col_names[j]) if header is not None else str(j) for j in c[:10])
        more = f", ... ({c.size} in total)" if c.size > 10 else ""
        return f"{at(r)}, columns [{cols}{more}]"

    labels = None
    if lab is not None:
        labels = cells[:, lab].astype(str)
        missing_lab = np.nonzero(np.isin(np.char.lower(labels), _MISSING))[0]
        if missing_lab.size:
            what = "class labels" if not partial else f"true labels (column {_column_name(header, lab)})"
            raise DataValidationError(f"{path}: missing {what} at {at(missing_lab)}")
    try:  # fast path; cell by cell only to say which cells are missing or not numbers
        X = cells[:, feat_cols].astype(np.float64)
        bad = []
    except (TypeError, ValueError):
        X, bad = _parse_cells(cells[:, feat_cols])
    nominal = sorted({c for _, c, _ in bad}) if categorical == "onehot" else []
    if nominal and header is None:
        raise DataValidationError(f"{path}: categorical={categorical} needs a header row naming the columns "
                                  f"(column(s) {', '.join(str(j) for j in nominal[:10])} hold values other than numbers)")
    bad = [b for b in bad if b[1] not in nominal]
    if bad:
        r, c, v = zip(*bad)
        i0 = int(np.argmin(r))
        example = f"on line {lines[r[i0]]}" if lines is not None else f"in row {r[i0]}"
        raise DataValidationError(
            f"{path}: non-numeric feature values at {where(np.array(r), np.array(c))} "
            f"(e.g. {v[i0]!r} {example}); {_NOMINAL_HINT}"
        )
    for j in nominal:  # a nominal column's missing cells, where the numeric ones have NaN
        X[:, j] = np.where(missing_cells(cells[:, feat_cols[j]]), np.nan, 0.0)
    r, c = np.nonzero(~np.isfinite(X))
    if r.size:
        raise DataValidationError(
            f"{path}: missing or non-finite feature values (empty, NaN or inf) at {where(r, c)}; "
            "nothing is imputed: fill or drop them first"
        )
    meta = {"source": str(path)}
    ids = None  # row ids: no feature, carried to what is written per row (python -m plcore clean)
    if rid is not None:
        ids = RowIds.read(header[rid] if header is not None else rid, cells[:, rid])
    repeated = sorted({n for n in col_names if col_names.count(n) > 1}) if header is not None else []
    if nominal and repeated:
        raise DataValidationError(f"{path}: the header names the feature column(s) {repeated[:10]} more than once; "
                                  f"categorical={categorical} reads the columns by name: rename them")
    if header is not None and not repeated:  # the columns a model reads by name (repeated names: by position)
        import pandas as pd

        frame = pd.DataFrame({name: cells[:, feat_cols[j]].astype(str) if j in nominal else X[:, j]
                              for j, name in enumerate(col_names)})
        features = FeatureColumns(categorical=categorical).fit(frame)
        if nominal:
            X = features.transform(frame)
        meta["features"] = features
    if not partial:
        labels = _typed_labels(labels)
        classes, y = np.unique(labels, return_inverse=True)
        what = f"the labels (column {header[lab]!r})" if header is not None else "the labels"
        _check_classes(y, classes, what)
        return PLDataset(X, None, y, classes, name or path.stem, meta, ids)
    if cand is not None:
        S, classes, y = _separated_candidates(path, cells[:, cand], labels, separator, at,
                                              _column_name(header, cand))
    else:
        S, classes, y = _indicator_candidates(path, cells[:, ind], ind_names, labels, at, header, ind)
    ds = PLDataset(X, S, y, classes, name or path.stem, meta, ids)
    ds.validate()
    return ds


def _warn_sets_read_as_labels(ds: PLDataset, path, separator) -> None:
    """Exact labels that hold the separator look like candidate sets read as classes of their
    own (``a;b`` one class): say once how to read them as sets (nothing is guessed)."""
    if ds.S is not None or not isinstance(separator, str) or not separator or ds.classes.dtype.kind != "U":
        return
    joined = [c for c in ds.classes.tolist() if separator in c]
    if joined:
        warnings.warn(f"{path}: {len(joined)} of the {ds.n_classes} classes read from the label column hold "
                      f"{separator!r} (e.g. {joined[0]!r}), each read as an exact label; if the column holds "
                      "candidate sets, name it with candidate_column (dataset.candidate_column=NAME)")


def _column_name(header, j) -> str:
    return repr(header[j]) if header is not None else str(j)


def _indicator_columns(path, header, spec, position):
    """Positions and class names of the indicator columns: a list of columns (names: the class
    names), or a pattern with one ``*`` (the part it matches is the class name)."""
    if spec is None:
        return [], []
    if isinstance(spec, str):
        if spec.count("*") != 1:
            raise DataValidationError(f"{path}: indicator_columns={spec!r} must be a list of columns or a pattern "
                                      "with one '*' standing for the class name (e.g. 'cand_*')")
        if header is None:
            raise DataValidationError(f"{path}: indicator_columns={spec!r} names columns, but the file has no header "
                                      "row naming its columns")
        before, after = spec.split("*")
        pattern = re.compile(re.escape(before) + "(.+)" + re.escape(after) + r"\Z")
        hits = [(j, m.group(1)) for j, h in enumerate(header) if (m := pattern.match(h))]
        if not hits:
            raise DataValidationError(f"{path}: no column matches indicator_columns={spec!r}; the columns are "
                                      f"{', '.join(repr(h) for h in header[:20])}{', ...' if len(header) > 20 else ''}")
        positions, names = [j for j, _ in hits], [n for _, n in hits]
    else:
        positions = [position("indicator_columns", c) for c in list(spec)]
        names = [header[j] if header is not None else str(j) for j in positions]
    if len(positions) < 2:
        raise DataValidationError(f"{path}: indicator_columns selects {len(positions)} column; partial-label "
                                  "learning needs at least 2 classes")
    return positions, names


def _label_index(tokens_by_row, labels):
    """Classes (sorted as :func:`_typed_labels` types them) of every label token and true label,
    and a dict token -> column."""
    tokens = set().union(*tokens_by_row)
    if labels is not None:
        tokens |= set(labels.tolist())
    strings = np.array(sorted(tokens), dtype=str)
    typed = _typed_labels(strings)
    classes = np.unique(typed)
    return classes, dict(zip(strings.tolist(), np.searchsorted(classes, typed).tolist()))


def _split_labels(cell, separator) -> list[str]:
    """The labels of one candidate cell: a string of separated labels, or a list (Parquet)."""
    if cell is None:
        return []
    if isinstance(cell, str):
        if cell.strip().lower() in _MISSING:
            return []
        return [t.strip() for t in cell.split(separator) if t.strip()]
    if isinstance(cell, (list, tuple, np.ndarray)):
        return [str(t).strip() for t in cell if t is not None and str(t).strip()]
    return [str(cell)]


def _separated_candidates(path, column, labels, separator, at, name):
    """``(S, classes, y)`` from a column of separated labels (``b;d``)."""
    if not isinstance(separator, str) or not separator:
        raise DataValidationError(f"{path}: separator must be a non-empty string, got {separator!r}")
    parts = [_split_labels(v, separator) for v in column]
    empty = [i for i, p in enumerate(parts) if not p]
    if empty:
        raise DataValidationError(f"{path}: empty or missing candidate sets (column {name}) at {at(empty)}")
    classes, index = _label_index(parts, labels)
    S = np.zeros((len(parts), len(classes)), dtype=bool)
    for i, p in enumerate(parts):
        S[i, [index[t] for t in p]] = True
    y = None if labels is None else np.array([index[t] for t in labels.tolist()], dtype=np.int64)
    return S, classes, y


def _indicator_candidates(path, block, names, labels, at, header, positions):
    """``(S, classes, y)`` from 0/1 indicator columns (classes in the columns' order)."""
    try:
        V = block.astype(np.float64)
    except (TypeError, ValueError):
        V, _ = _parse_cells(block)
    bad = ~np.isin(V, (0.0, 1.0))  # NaN, missing, text and any other number
    if bad.any():
        r, c = np.nonzero(bad)
        cols = ", ".join(_column_name(header, positions[j]) for j in np.unique(c)[:10])
        raise DataValidationError(f"{path}: indicator columns must hold 0 or 1; other values at {at(np.unique(r))}, "
                                  f"columns [{cols}]")
    classes = _typed_labels(np.array(names, dtype=str))
    if len(np.unique(classes)) < len(classes):
        raise DataValidationError(f"{path}: the indicator columns name a class twice ({names})")
    y = None
    if labels is not None:
        lookup = {c: j for j, c in enumerate(classes.tolist())}
        typed = _typed_labels(labels)
        unknown = [i for i, v in enumerate(typed.tolist()) if v not in lookup]
        if unknown:
            raise DataValidationError(f"{path}: true labels not among the indicator columns' classes "
                                      f"{classes.tolist()[:20]} at {at(unknown)}")
        y = np.array([lookup[v] for v in typed.tolist()], dtype=np.int64)
    return V == 1.0, classes, y


def _accept_truth(ds: PLDataset, noisy: bool, source) -> PLDataset:
    """Refuse true labels outside their candidate sets (one line: how many rows, the first ones,
    and the option that accepts them); ``noisy=True`` accepts them as noisy partial labels and
    records it in ``meta["noisy"]``."""
    if noisy and ds.S is not None:
        ds.meta["noisy"] = True
        return ds
    outside = ds.rows_outside_candidates()
    if outside.size:
        raise DataValidationError(
            f"{source}: the true label is outside its candidate set in {outside.size} of {ds.n_samples} rows "
            f"(rows {_row_list(outside)}); if these are noisy partial labels, accept them with dataset.noisy=true "
            "(noisy=True in Python)")
    return ds


def load_npz(path, name: str | None = None, *, noisy: bool = False) -> PLDataset:
    """Load an NPZ file with keys ``X`` and optional ``S`` (n x q), ``y`` and ``classes``.

    Arrays are read with ``allow_pickle=False``: object arrays are refused, never
    unpickled. Candidate rows must not be empty; a true label outside its candidate set is
    refused unless ``noisy``.
    """
    path = _existing_file(path)
    with _reading(path, "an NPZ archive"):
        if not zipfile.is_zipfile(path):
            raise DataValidationError(f"{path}: not an NPZ archive (np.savez writes a zip of .npy arrays)")
        arrays = {}
        with np.load(path, allow_pickle=False) as z:
            keys = list(z.keys())
            if "X" not in keys:
                raise DataValidationError(f"{path}: NPZ must contain key 'X' (found {keys})")
            for key in ("X", "S", "y", "classes"):
                if key not in keys:
                    continue
                try:
                    arrays[key] = z[key]
                except ValueError as err:
                    if "pickle" not in str(err):
                        raise
                    raise DataValidationError(
                        f"{path}: array {key!r} holds Python objects (dtype=object), which would have to be "
                        "unpickled; plcore reads data files with allow_pickle=False and never unpickles: "
                        "save numeric arrays (e.g. np.savez(path, X=X.astype(float), S=S.astype(bool)))"
                    ) from None
        S, y, classes = arrays.get("S"), arrays.get("y"), arrays.get("classes")
        ds = PLDataset(arrays["X"], S, y, classes, name or path.stem, {"source": str(path)})
        ds.validate()
        if S is None and y is not None:
            _check_classes(ds.y_true, ds.classes)
    return _accept_truth(ds, noisy, path)


def load_sklearn(name: str) -> PLDataset:
    """One of scikit-learn's embedded data sets: iris, wine, breast_cancer, digits."""
    from sklearn import datasets

    if name not in SKLEARN_DATASETS:
        raise DataValidationError(f"unknown scikit-learn data set {name!r}; choose from {SKLEARN_DATASETS}")
    bunch = getattr(datasets, f"load_{name}")()
    classes = np.asarray(getattr(bunch, "target_names", np.unique(bunch.target)))
    return PLDataset(bunch.data, None, bunch.target, classes, name, {"source": f"sklearn.datasets.load_{name}"})
