"""NPZ archives (``X``, optional ``S``, ``y``, ``classes``), read without unpickling."""

from __future__ import annotations

import zipfile

import numpy as np

from plcore.data import PLDataset
from plcore.datasets.formats import TableOptions
from plcore.datasets.loaders.reading import _accept_truth, _check_classes, _existing_file, _reading
from plcore.exceptions import DataValidationError


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
                raise DataValidationError(f"{path}: NPZ must contain key 'X' (features; or 'x' and 'y' for images), "
                                          f"found {keys}")
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


def read_dataset(path, *, name: str | None = None, noisy: bool = False, options: TableOptions = TableOptions()):
    """The suffix table's reader of ``.npz`` files (:data:`plcore.datasets.formats.FORMATS`): an
    archive of images (keys ``x``, ``y``: :func:`~plcore.datasets.loaders.cifar.load_image_npz`) or of
    features (``X``, optional ``S``, ``y``: :func:`load_npz`)."""
    from plcore.datasets.loaders.cifar import is_image_npz, load_image_npz

    return load_image_npz(path, name) if is_image_npz(path) else load_npz(path, name, noisy=noisy)
