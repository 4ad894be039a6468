"""PALM partial-label .mat files (``data``, ``partial_target``, ``target``) and their predefined splits."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp

from plcore.data import PLDataset, _first
from plcore.datasets.formats import TableOptions
from plcore.datasets.loaders.reading import _accept_truth, _existing_file, _reading
from plcore.exceptions import DataValidationError, one_line


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
                f"({type(err).__name__}: {one_line(str(err)) or 'no detail'})"
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


def read_dataset(path, *, name: str | None = None, noisy: bool = False, options: TableOptions = TableOptions()):
    """The suffix table's reader of ``.mat`` files (:data:`plcore.datasets.formats.FORMATS`)."""
    return load_palm(path, name, noisy=noisy)
