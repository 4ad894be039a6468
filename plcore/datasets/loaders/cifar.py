"""CIFAR-10, CIFAR-100 (the official python layout) and PLCIFAR10 (PLENCH's annotations), from a local
copy; nothing is downloaded.

The official files are Python pickles. They are read with an unpickler that builds plain
containers, bytes, numbers and NumPy arrays only and refuses any other global (the pickle
documentation's "restricting globals" recipe): a file that names any other callable is refused,
never run. Images become rows of ``3 * 32 * 32`` values in ``[0, 1]``, channel-major (the red
plane, then green, then blue, each row by row: the files' own order), as
:func:`plcore_deep`'s image networks read them; ``meta["image_shape"]`` is ``(3, 32, 32)``.
"""

from __future__ import annotations

import io
import pickle
from pathlib import Path

import numpy as np

from plcore.data import PLDataset
from plcore.datasets.catalog import CIFAR10_CLASSES, CIFAR100_SUPERCLASSES, CIFAR_DATASETS
from plcore.datasets.loaders.home import get_data_home
from plcore.datasets.loaders.reading import _accept_truth, _check_classes, _reading
from plcore.exceptions import DataValidationError, DatasetNotFoundError

__all__ = ["find_cifar_folder", "load_cifar", "load_image_npz", "is_image_npz", "cifar_kind",
           "cifar100_class_groups", "IMAGE_SHAPE"]

IMAGE_SHAPE = (3, 32, 32)
#: the globals a CIFAR or PLCIFAR10 pickle may name: NumPy's array and scalar reconstruction, and
#: the text-to-bytes codec with which pickle protocol 2 writes bytes from Python 3
_ALLOWED = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
            ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
            ("numpy", "ndarray"), ("numpy", "dtype"), ("_codecs", "encode")}


class _DataUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"names {module}.{name}, which a data file has no need of")


def _unpickle(path: Path):
    with _reading(path, "a CIFAR pickle"):
        try:
            return _DataUnpickler(io.BytesIO(path.read_bytes()), encoding="bytes").load()
        except (pickle.UnpicklingError, EOFError, ValueError, TypeError) as err:
            raise DataValidationError(f"not a data pickle ({err})") from None


def _key(d: dict, key: str, path: Path):
    for k in (key.encode(), key):
        if isinstance(d, dict) and k in d:
            return d[k]
    raise DataValidationError(f"{path}: no key {key!r} (found {sorted(map(str, d)) if isinstance(d, dict) else d!r})")


def cifar_kind(folder: Path) -> str | None:
    """``"cifar10"`` or ``"cifar100"`` for a folder in that set's official layout, else ``None``."""
    for name in ("cifar10", "cifar100"):
        if (folder / CIFAR_DATASETS[name]["train"][0]).is_file() and (folder / CIFAR_DATASETS[name]["meta"]).is_file():
            return name
    return None


def find_cifar_folder(name: str, data_home=None) -> Path:
    """The folder of ``name``'s official files: ``<data home>/<folder>``, or that folder one level
    down (``<data home>/cifar10/cifar-10-batches-py``); one line saying what to put where if none."""
    info = CIFAR_DATASETS[name]
    home = get_data_home(data_home)
    looked = [home / info["folder"]] + ([p / info["folder"] for p in sorted(home.iterdir()) if p.is_dir()]
                                         if home.is_dir() else [])
    for folder in looked:
        if folder.is_dir():
            return folder
    what = (f"PLENCH's {info['file']} in {home / info['folder']}, beside CIFAR-10's "
            f"{CIFAR_DATASETS['cifar10']['folder']}/" if "file" in info else
            f"the official python version's {info['folder']}/ (the folder its .tar.gz unpacks to) in {home}")
    raise DatasetNotFoundError(f"data set {name!r} not found: put {what}; or pass an .npz of x (n, 32, 32, 3) "
                               f"uint8 and y as dataset.name_or_path (nothing is downloaded)")


def cifar100_class_groups() -> np.ndarray:
    """``(100,)``: each CIFAR-100 class's superclass index (:data:`CIFAR100_SUPERCLASSES`), the
    classes in their official (alphabetical) order."""
    names = sorted(c for members in CIFAR100_SUPERCLASSES.values() for c in members)
    group = {c: g for g, members in enumerate(CIFAR100_SUPERCLASSES.values()) for c in members}
    return np.array([group[c] for c in names], dtype=np.int64)


def _rows(images: np.ndarray, path) -> np.ndarray:
    """``(n, 3072)`` float64 rows in ``[0, 1]``, channel-major, from ``(n, 3072)`` channel-major or
    ``(n, 32, 32, 3)`` channels-last unsigned bytes."""
    images = np.asarray(images)
    if images.dtype != np.uint8:
        raise DataValidationError(f"{path}: images must be unsigned bytes (uint8), got {images.dtype}")
    if images.ndim == 4 and images.shape[1:] == (32, 32, 3):
        images = images.transpose(0, 3, 1, 2).reshape(len(images), -1)
    if images.ndim != 2 or images.shape[1] != int(np.prod(IMAGE_SHAPE)):
        raise DataValidationError(f"{path}: images must be (n, 32, 32, 3) or (n, 3072), got {images.shape}")
    return images.astype(np.float64) / 255.0


def _official(folder: Path, name: str):
    """Images, labels and the test mask of an official CIFAR folder, and its class names."""
    info = CIFAR_DATASETS[name]
    parts, labels, test = [], [], []
    for part, files in (("train", info["train"]), ("test", info["test"])):
        for stem in files:
            path = folder / stem
            if not path.is_file():
                raise DatasetNotFoundError(f"{folder}: no file {stem} (the official python version has "
                                           f"{', '.join(info['train'] + info['test'])} and {info['meta']})")
            batch = _unpickle(path)
            parts.append(_rows(_key(batch, "data", path), path))
            labels.append(np.asarray(_key(batch, info["labels"], path), dtype=np.int64))
            test.append(np.full(len(labels[-1]), part == "test"))
            if name == "cifar100" and not np.array_equal(
                    cifar100_class_groups()[labels[-1]], np.asarray(_key(batch, "coarse_labels", path))):
                raise DataValidationError(f"{path}: its coarse labels are not CIFAR-100's superclasses of its "
                                          "fine labels (another class order?)")
    meta = _unpickle(folder / info["meta"]) if (folder / info["meta"]).is_file() else {}
    names = [n.decode() if isinstance(n, bytes) else str(n) for n in meta.get(info["names"].encode(), [])]
    return np.concatenate(parts), np.concatenate(labels), np.concatenate(test), names


def _default_names(q: int) -> list[str]:
    """CIFAR-100's class names for 100 classes, CIFAR-10's for 10, else the indices."""
    if q == 100:
        return sorted(c for members in CIFAR100_SUPERCLASSES.values() for c in members)
    return list(CIFAR10_CLASSES) if q == 10 else [str(c) for c in range(q)]


def is_image_npz(path) -> bool:
    """Whether ``path`` is an ``.npz`` of images (keys ``x`` and ``y``, no ``X``)."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as z:
            keys = {Path(n).stem for n in z.namelist()}
    except (OSError, zipfile.BadZipFile):
        return False
    return {"x", "y"} <= keys and "X" not in keys


def load_image_npz(path, name: str | None = None) -> PLDataset:
    """An ``.npz`` of images ``x`` ``(n, 32, 32, 3)`` uint8 (channels last, as ``np.savez`` of a
    torchvision data set's ``.data``) and labels ``y``; read without unpickling."""
    path = Path(path).expanduser()
    with _reading(path, "an NPZ archive of images"):
        with np.load(path, allow_pickle=False) as z:
            if "x" not in z or "y" not in z:
                raise DataValidationError(f"{path}: an image NPZ holds keys 'x' and 'y' (found {sorted(z.keys())})")
            X, y = _rows(z["x"], path), np.asarray(z["y"]).astype(np.int64).ravel()
    if len(X) != len(y):
        raise DataValidationError(f"{path}: {len(X)} images but {len(y)} labels")
    q = int(y.max()) + 1 if y.size else 0
    names = np.asarray(_default_names(100 if q > 10 else 10) if q <= 100 else _default_names(q))
    _check_classes(y, names)
    return PLDataset(X, None, y, classes=names, name=name or path.stem,
                     meta={"source": str(path), "image_shape": IMAGE_SHAPE})


def _annotations(path: Path, n: int, aggregation: str) -> np.ndarray:
    """PLENCH's PLCIFAR10 annotations (``{row: [candidate set of each annotator, ...]}``) as an
    ``(n, 10)`` boolean matrix: the union of the annotators' sets (``aggregate``) or the largest
    (``vaguest``, the first of the largest)."""
    found = _unpickle(path)
    if not isinstance(found, dict):
        raise DataValidationError(f"{path}: PLCIFAR10's file maps each image's index to its annotators' sets")
    S = np.zeros((n, 10), dtype=bool)
    for row, sets in found.items():
        row = int(row)
        if not 0 <= row < n:
            raise DataValidationError(f"{path}: image index {row} outside CIFAR-10's {n} training images")
        sets = [list(map(int, s)) for s in sets]
        chosen = [c for s in sets for c in s] if aggregation == "aggregate" else max(sets, key=len, default=[])
        S[row, chosen] = True
    return S


def load_cifar(name: str, folder=None, data_home=None, *, noisy: bool = False) -> PLDataset:
    """``name`` (:data:`CIFAR_DATASETS`) from ``folder`` (default: :func:`find_cifar_folder`). CIFAR-10
    and CIFAR-100: the training then the test images, exact labels (a bag generator makes the
    sets), ``meta["test_rows"]`` the official test part; CIFAR-100 adds ``meta["class_groups"]``,
    each class's superclass. PLCIFAR10: CIFAR-10's 50,000 training images with the annotators'
    candidate sets (aggregated as the variant says) and CIFAR-10's test images with their exact
    labels as one-label sets, ``meta["test_rows"]`` marking them (PLENCH tests on them); an
    annotator's set that misses the truth is refused unless ``noisy``."""
    info = CIFAR_DATASETS[name]
    if "file" in info:
        home = Path(folder) if folder is not None else find_cifar_folder(name, data_home)
        path = home / info["file"] if home.is_dir() else home
        if not path.is_file():
            raise DatasetNotFoundError(f"{home}: no {info['file']} (PLENCH's PLCIFAR10 annotations)")
        images = find_cifar_folder(info["images"], data_home if folder is None else Path(folder).parent)
        X, y, test, _ = _official(images, info["images"])
        S = np.zeros((len(y), 10), dtype=bool)
        S[~test] = _annotations(path, int((~test).sum()), info["aggregation"])
        S[np.flatnonzero(test), y[test]] = True
        ds = PLDataset(X, S, y, classes=np.asarray(CIFAR10_CLASSES), name=name,
                       meta={"source": str(path), "test_rows": test, "image_shape": IMAGE_SHAPE})
        return _accept_truth(ds, noisy, path)
    folder = Path(folder) if folder is not None else find_cifar_folder(name, data_home)
    X, y, test, names = _official(folder, name)
    names = np.asarray(names or _default_names(100 if name == "cifar100" else 10))
    _check_classes(y, names)
    meta = {"source": str(folder), "test_rows": test, "image_shape": IMAGE_SHAPE}
    if name == "cifar100":
        meta["class_groups"] = cifar100_class_groups()
    return PLDataset(X, None, y, classes=names, name=name, meta=meta)
