"""What every reader shares: a file that exists, errors as one line naming the file, at least two
classes, and true labels inside their candidate sets (unless noisy)."""

from __future__ import annotations

import contextlib
import warnings
from pathlib import Path

import numpy as np

from plcore.data import PLDataset, _row_list
from plcore.exceptions import DataValidationError, DatasetNotFoundError, PlcoreError, one_line


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
        msg = one_line(str(err))
        if str(path) in msg:
            raise
        raise type(err)(f"{path}: {msg}") from err
    except PlcoreError:
        raise
    except Exception as err:  # noqa: BLE001 - whatever a reader raises, say which file and why
        detail = one_line(str(err)) or "unexpected end of file"
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
