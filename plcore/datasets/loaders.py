"""Data-set loaders: PALM .mat, UCI ARFF, CSV/NPZ and scikit-learn built-ins.

Named data sets are looked up in a *data home*: the ``data_home`` argument, else the
``PLCORE_DATA_HOME`` environment variable, else ``~/plcore_data``. The data home and
its immediate subfolders are searched (so ``datasets/palm/lost.mat`` is found from
``datasets/``). Anything else is loaded by path.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp
from scipy.io import arff

from plcore.data import PLDataset
from plcore.exceptions import DataValidationError, DatasetNotFoundError

__all__ = [
    "PALM_DATASETS",
    "UCI_DATASETS",
    "SKLEARN_DATASETS",
    "get_data_home",
    "find_dataset_file",
    "load_dataset",
    "load_palm",
    "load_arff",
    "load_csv",
    "load_npz",
    "load_sklearn",
    "load_splits",
]

PALM_URL = "https://palm.seu.edu.cn/zhangml/Resources.htm#partial_data (Min-Ling Zhang's PALM lab)"
UCI_URL = "https://archive.ics.uci.edu/ (UCI repository; ARFF copies in the UCI++ collection)"

#: PALM partial-label sets: name -> accepted file stems (compared case- and punctuation-insensitively)
PALM_DATASETS = {
    "lost": ("lost",),
    "msrc-v2": ("msrcv2", "msrc-v2"),
    "msrc-v2-plc-splits": ("msrc-v2-plc-splits", "msrcv2plcsplits"),
    "bird-song": ("birdsong", "bird-song"),
    "soccer": ("soccer", "soccerplayer"),
    "yahoo-news": ("yahoonews", "yahoo!news", "yahoo-news"),
    "fg-net": ("fgnet", "fg-net"),
    "mir-flickr": ("mirflickr", "mir-flickr"),
}
#: UCI ARFF sets: name -> accepted file stems
UCI_DATASETS = {
    "ecoli": ("ecoli",),
    "satimage": ("statlog-landsat-satellite", "satimage"),
    "semeion": ("semeion",),
}
SKLEARN_DATASETS = ("iris", "wine", "breast_cancer", "digits")


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


def find_dataset_file(name: str, data_home=None) -> Path:
    """Locate the file of a named PALM/UCI data set; raise a helpful error if absent."""
    if name in PALM_DATASETS:
        stems, suffix, source = PALM_DATASETS[name], ".mat", PALM_URL
    elif name in UCI_DATASETS:
        stems, suffix, source = UCI_DATASETS[name], ".arff", UCI_URL
    else:
        raise DataValidationError(f"unknown data set name {name!r}; known: {sorted(known_names())}")
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
    raise DatasetNotFoundError(
        f"data set {name!r} not found: looked for {stems[0]}{suffix} in {looked}. "
        f"Set PLCORE_DATA_HOME (or pass data_home) to the folder holding it; "
        f"a public copy is at {source}"
    )


def known_names() -> list[str]:
    return list(PALM_DATASETS) + list(UCI_DATASETS) + list(SKLEARN_DATASETS)


def load_dataset(name_or_path, data_home=None) -> PLDataset:
    """Load a data set by name (PALM, UCI, scikit-learn built-in) or by file path.

    Paths ending in ``.mat`` are read as PALM files, ``.arff`` as ARFF, ``.csv`` as CSV
    (last column the label) and ``.npz`` as NPZ (keys ``X``, optional ``S``, ``y``).
    """
    key = str(name_or_path)
    if key in SKLEARN_DATASETS:
        return load_sklearn(key)
    if key in PALM_DATASETS:
        return load_palm(find_dataset_file(key, data_home), name=key)
    if key in UCI_DATASETS:
        return load_arff(find_dataset_file(key, data_home), name=key)
    path = Path(key).expanduser()
    loaders = {".mat": load_palm, ".arff": load_arff, ".csv": load_csv, ".npz": load_npz}
    if path.suffix.lower() in loaders:
        if not path.is_file():
            raise DatasetNotFoundError(f"data file {str(path)!r} does not exist")
        return loaders[path.suffix.lower()](path)
    raise DataValidationError(
        f"cannot load {key!r}: not a known data set name ({', '.join(known_names())}) "
        "nor a path ending in .mat, .arff, .csv or .npz"
    )


def _labels_from_onehot(T, name):
    """Ground-truth indices from a one-hot (n, q) matrix; -1 where a row is not one-hot."""
    T = T.toarray() if sp.issparse(T) else np.asarray(T)
    counts = (T != 0).sum(axis=1)
    if np.any(counts != 1):
        bad = np.nonzero(counts != 1)[0][:10]
        raise DataValidationError(f"{name}: 'target' rows {list(bad)} are not one-hot")
    return np.argmax(T, axis=1)


def _orient(M, n):
    """PALM label matrices are q x n; return n x q (transposing when needed)."""
    if M.shape[0] == n and M.shape[1] != n:
        return M
    if M.shape[1] == n:
        return M.T
    raise DataValidationError(f"label matrix of shape {M.shape} does not match n={n} examples")


def load_palm(path, name: str | None = None) -> PLDataset:
    """Load a PALM-format .mat file (keys ``data``, ``partial_target``, ``target``).

    Label matrices are stored q x n (sparse or dense) and returned n x q; a sparse
    ``partial_target`` stays sparse (CSR). Split masks ``train_idx``/``test_idx`` (cell
    arrays of 0/1 masks), when present, are returned in ``meta["splits"]`` as a list of
    ``(train_mask, test_mask)`` boolean arrays.
    """
    path = Path(path)
    try:
        mat = scipy.io.loadmat(path)
    except NotImplementedError as err:  # MATLAB v7.3 (HDF5)
        raise DataValidationError(f"{path}: MATLAB v7.3 files are not supported; re-save with -v7") from err
    missing = [k for k in ("data", "partial_target") if k not in mat]
    if missing:
        raise DataValidationError(f"{path}: missing key(s) {missing}; PALM files hold data, partial_target, target")
    X = np.asarray(mat["data"].toarray() if sp.issparse(mat["data"]) else mat["data"], dtype=np.float64)
    n = X.shape[0]
    S = _orient(mat["partial_target"], n)
    S = sp.csr_matrix(S) if sp.issparse(S) else np.asarray(S)
    y = _labels_from_onehot(_orient(mat["target"], n), path.name) if "target" in mat else None
    meta = {"source": str(path)}
    if "train_idx" in mat and "test_idx" in mat:
        meta["splits"] = load_splits(mat)
    ds = PLDataset(X, S, y, None, name or path.stem, meta)
    ds.validate()
    return ds


def load_splits(source) -> list[tuple[np.ndarray, np.ndarray]]:
    """Predefined splits from a .mat file (or its loaded dict): ``train_idx``/``test_idx``.

    Each is a cell array of 0/1 masks (or of 1-based index vectors); returns a list of
    ``(train_mask, test_mask)`` boolean arrays.
    """
    mat = scipy.io.loadmat(source) if isinstance(source, (str, Path)) else source
    n = mat["data"].shape[0]

    def as_mask(v):
        v = np.asarray(v.toarray() if sp.issparse(v) else v).ravel()
        if v.size == n and set(np.unique(v)) <= {0, 1}:
            return v.astype(bool)
        mask = np.zeros(n, dtype=bool)
        mask[v.astype(np.int64) - 1] = True  # MATLAB 1-based indices
        return mask

    train, test = mat["train_idx"].ravel(), mat["test_idx"].ravel()
    if len(train) != len(test):
        raise DataValidationError(f"train_idx has {len(train)} splits but test_idx has {len(test)}")
    return [(as_mask(a), as_mask(b)) for a, b in zip(train, test)]


def load_arff(path, name: str | None = None) -> PLDataset:
    """Load an ARFF file: numeric features, the last attribute is the class.

    Classes are the nominal values in declaration order (``classes``); ``y_true`` holds
    their indices. No candidate sets: generate them with a bag generator.
    """
    path = Path(path)
    data, meta = arff.loadarff(path)
    names = meta.names()
    cls_name = names[-1]
    kind, values = meta[cls_name]
    feats = names[:-1]
    not_numeric = [f for f in feats if meta[f][0] != "numeric"]
    if not_numeric:
        raise DataValidationError(f"{path}: non-numeric feature attributes {not_numeric[:10]}")
    X = np.column_stack([data[f].astype(np.float64) for f in feats])
    raw = np.array([v.decode() if isinstance(v, bytes) else str(v) for v in data[cls_name]])
    if kind == "nominal":
        classes = np.asarray(values)
        lookup = {v: i for i, v in enumerate(values)}
        missing = [i for i, v in enumerate(raw) if v not in lookup]
        if missing:
            raise DataValidationError(f"{path}: class value missing/unknown at rows {missing[:10]}")
        y = np.array([lookup[v] for v in raw], dtype=np.int64)
    else:
        classes, y = np.unique(raw, return_inverse=True)
    return PLDataset(X, None, y, classes, name or path.stem, {"source": str(path)})


def load_csv(path, name: str | None = None, label_column: int = -1, delimiter: str = ",",
             skip_header: int | None = None) -> PLDataset:
    """Load a CSV file of numeric features with one label column (default: the last)."""
    path = Path(path)
    if skip_header is None:
        with open(path) as fh:
            first = fh.readline().rstrip("\r\n").split(delimiter)
        if -len(first) <= label_column < len(first):
            del first[label_column]  # the label may be a string: a header has non-numeric features
        try:
            [float(x) for x in first if x.strip()]
            skip_header = 0
        except ValueError:
            skip_header = 1
    raw = np.genfromtxt(path, delimiter=delimiter, skip_header=skip_header, dtype=str, autostrip=True)
    raw = np.atleast_2d(raw)
    labels = raw[:, label_column]
    X = np.delete(raw, label_column if label_column >= 0 else raw.shape[1] + label_column, axis=1)
    try:
        X = X.astype(np.float64)
    except ValueError as err:
        raise DataValidationError(f"{path}: non-numeric feature values ({err})") from err
    try:  # numeric labels sort numerically ("2" before "10"), others as strings
        num = labels.astype(np.float64)
        labels = num.astype(np.int64) if np.all(num == np.round(num)) else num
    except ValueError:
        pass
    classes, y = np.unique(labels, return_inverse=True)
    return PLDataset(X, None, y, classes, name or path.stem, {"source": str(path)})


def load_npz(path, name: str | None = None) -> PLDataset:
    """Load an NPZ file with keys ``X`` and optional ``S`` (n x q), ``y`` and ``classes``."""
    path = Path(path)
    with np.load(path, allow_pickle=False) as z:
        if "X" not in z:
            raise DataValidationError(f"{path}: NPZ must contain key 'X' (found {list(z.keys())})")
        X = z["X"]
        S = z["S"] if "S" in z else None
        y = z["y"] if "y" in z else None
        classes = z["classes"] if "classes" in z else None
    return PLDataset(X, S, y, classes, name or path.stem, {"source": str(path)})


def load_sklearn(name: str) -> PLDataset:
    """One of scikit-learn's embedded data sets: iris, wine, breast_cancer, digits."""
    from sklearn import datasets

    if name not in SKLEARN_DATASETS:
        raise DataValidationError(f"unknown scikit-learn data set {name!r}; choose from {SKLEARN_DATASETS}")
    bunch = getattr(datasets, f"load_{name}")()
    classes = np.asarray(getattr(bunch, "target_names", np.unique(bunch.target)))
    return PLDataset(bunch.data, None, bunch.target, classes, name, {"source": f"sklearn.datasets.load_{name}"})
