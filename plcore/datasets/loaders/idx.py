"""IDX image sets (the MNIST layout: Fashion-MNIST, MNIST), from the data home or Debian's packages."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from plcore.data import PLDataset
from plcore.datasets.catalog import IDX_DATASETS
from plcore.datasets.loaders.home import get_data_home
from plcore.datasets.loaders.reading import _check_classes, _reading
from plcore.exceptions import DataValidationError, DatasetNotFoundError


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
