"""Partial-label data: the :class:`PLDataset` container and input validation.

Conventions (DESIGN.md section 2):

* ``X`` is an ``(n, d)`` float64 feature matrix.
* ``S`` is the ``(n, q)`` 0/1 candidate matrix (dense or scipy sparse); row ``i``
  is the candidate set of example ``i``.
* ``y_true`` holds optional ground-truth labels ``0 .. q-1`` used only for evaluation.

Every public entry point validates through :func:`check_partial_labels` (or the
smaller helpers it is built from), so the same bad input always produces the same
message, naming the problem and the first offending rows/columns. Rows are never
dropped or reordered.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import column_or_1d

from plcore.exceptions import DataValidationError

__all__ = [
    "PLDataset",
    "RowIds",
    "check_features",
    "check_candidates",
    "check_partial_labels",
    "candidates_from_target",
    "candidate_classes",
    "labels_to_candidates",
    "CandidateAudit",
    "max_feature_magnitude",
]

_MAX_LISTED = 10


def _first(indices, limit=_MAX_LISTED) -> str:
    """Format the first offending indices as ``[i, j, ...] (N in total)``."""
    indices = np.asarray(indices).ravel()
    shown = ", ".join(str(int(i)) for i in indices[:limit])
    more = f", ... ({indices.size} in total)" if indices.size > limit else ""
    return f"[{shown}{more}]"


def _row_list(rows, limit: int = 5) -> str:
    """The first ``limit`` row indices as ``1, 2, 5, ...`` (the ellipsis where there are more)."""
    rows = np.asarray(rows).ravel()
    return ", ".join(str(int(i)) for i in rows[:limit]) + (", ..." if rows.size > limit else "")


def check_features(X, *, name: str = "X") -> np.ndarray:
    """Return ``X`` as a 2-D float64 array; reject NaN/inf naming the rows and columns, and
    values so large that squared distances or covariances would overflow
    (:func:`max_feature_magnitude`), saying to scale them."""
    X = np.asarray(X, dtype=np.float64) if not sp.issparse(X) else X
    if sp.issparse(X):
        raise DataValidationError(
            f"{name} is a scipy sparse matrix; plcore expects dense features (call .toarray())"
        )
    if X.ndim != 2:
        raise DataValidationError(f"{name} must be 2-D (n_samples, n_features), got shape {X.shape}")
    if X.shape[0] == 0:
        raise DataValidationError(f"{name} has 0 samples (shape {X.shape}); at least 1 is required")
    finite = np.isfinite(X)
    if not finite.all():
        rows, cols = np.nonzero(~finite)
        raise DataValidationError(
            f"{name} contains NaN or inf values at rows {_first(np.unique(rows))}, "
            f"columns {_first(np.unique(cols))}"
        )
    largest = float(np.max(np.abs(X))) if X.size else 0.0
    if largest > max_feature_magnitude(*X.shape):
        cols = np.nonzero(np.max(np.abs(X), axis=0) > max_feature_magnitude(*X.shape))[0]
        raise DataValidationError(
            f"{name} has values up to {largest:.3g} (columns {_first(cols)}): their squares and sums of products "
            "overflow float64 in distances and covariances; scale the features first (e.g. "
            "protocol.preprocessing=standardize, or sklearn.preprocessing.StandardScaler)"
        )
    return X


def max_feature_magnitude(n_samples: int, n_features: int) -> float:
    """The largest feature magnitude ``m`` for which every sum of ``n_samples * n_features``
    squared differences stays finite in float64: ``(2 m)^2 n d <= max``, i.e.
    ``m = sqrt(max) / (2 sqrt(n d))`` (about 1e149 for a million rows of a thousand features)."""
    return float(np.sqrt(np.finfo(np.float64).max) / (2.0 * np.sqrt(max(1, n_samples) * max(1, n_features))))


def check_candidates(S, *, n_samples: int | None = None, allow_empty_rows: bool = False):
    """Validate an ``(n, q)`` 0/1 candidate matrix.

    Returns a CSR matrix (float64 ones) for sparse input and a boolean array for dense
    input. Raises :class:`~plcore.exceptions.DataValidationError` on non-binary values,
    ``q < 2``, a row-count mismatch or (unless ``allow_empty_rows``) empty candidate rows.
    """
    if sp.issparse(S):
        S = sp.csr_matrix(S, dtype=np.float64, copy=True)
        S.sum_duplicates()
        S.eliminate_zeros()
        bad = np.nonzero(S.data != 1.0)[0]
        if bad.size:
            rows = np.repeat(np.arange(S.shape[0]), np.diff(S.indptr))[bad]
            raise DataValidationError(
                "candidate matrix must be binary (0/1); non-binary values in rows "
                f"{_first(np.unique(rows))}, columns {_first(np.unique(S.indices[bad]))}"
            )
        row_sizes = np.diff(S.indptr)
    else:
        S = np.asarray(S)
        if S.ndim != 2:
            raise DataValidationError(f"candidate matrix must be 2-D (n, q), got shape {S.shape}")
        if S.dtype != bool:
            if not np.issubdtype(S.dtype, np.number):
                raise DataValidationError(
                    f"candidate matrix must be numeric or boolean 0/1, got dtype {S.dtype}"
                )
            nonbinary = ~((S == 0) | (S == 1))
            if nonbinary.any():
                rows, cols = np.nonzero(nonbinary)
                raise DataValidationError(
                    "candidate matrix must be binary (0/1); non-binary values in rows "
                    f"{_first(np.unique(rows))}, columns {_first(np.unique(cols))}"
                )
            S = S.astype(bool)
        row_sizes = S.sum(axis=1)
    n, q = S.shape
    if q < 2:
        raise DataValidationError(
            f"partial-label learning needs at least 2 classes (q >= 2), got q={q} class column"
        )
    if n_samples is not None and n != n_samples:
        raise DataValidationError(
            f"X has {n_samples} rows but the candidate matrix has {n} rows; they must match"
        )
    if not allow_empty_rows:
        empty = np.nonzero(np.asarray(row_sizes).ravel() == 0)[0]
        if empty.size:
            raise DataValidationError(
                f"candidate matrix has empty rows (no candidate label) at rows {_first(empty)}"
            )
    return S


def labels_to_candidates(y, classes=None):
    """Encode 1-D exact labels as singleton candidate sets.

    Returns ``(S, classes)`` with ``S`` a boolean ``(n, q)`` array whose columns follow
    ``classes`` (sorted unique labels when not given).
    """
    y = np.asarray(y)
    if classes is None:
        classes, codes = np.unique(y, return_inverse=True)
    else:
        classes = np.asarray(classes)
        order = np.argsort(classes, kind="stable")  # classes need not be sorted
        pos = np.clip(np.searchsorted(classes[order], y), 0, len(classes) - 1)
        codes = order[pos]
        unknown = np.nonzero(classes[codes] != y)[0]
        if unknown.size:
            raise DataValidationError(f"labels not among classes {classes.tolist()} at rows {_first(unknown)}")
    S = np.zeros((y.shape[0], len(classes)), dtype=bool)
    S[np.arange(y.shape[0]), codes] = True
    return S, classes


def _is_frame(y) -> bool:
    """A pandas DataFrame (recognised without importing pandas)."""
    return hasattr(y, "columns") and hasattr(y, "to_numpy") and hasattr(y, "iloc") and np.ndim(y) == 2


def candidate_classes(y):
    """The class names a candidate matrix carries: a pandas DataFrame's columns (as an array);
    ``None`` for anything else (an array or sparse matrix names no class)."""
    if not _is_frame(y):
        return None
    classes = np.asarray(list(y.columns))
    unique, counts = np.unique(classes.astype(str), return_counts=True)
    if (counts > 1).any():
        raise DataValidationError(f"the candidate DataFrame's columns name a class twice: {unique[counts > 1].tolist()}")
    return classes


def _frame_matrix(y):
    """A candidate DataFrame's values: CSR when every column is sparse, else a dense array."""
    if len(y.columns) and all(str(t).startswith("Sparse") for t in y.dtypes):
        return y.sparse.to_coo().tocsr()
    return y.to_numpy()


def candidates_from_target(y, *, n_samples: int | None = None):
    """Interpret the ``y`` argument of ``fit``: 1-D labels or an ``(n, q)`` candidate matrix.

    Returns ``(S, classes, is_exact)``; ``classes`` are the sorted labels for 1-D input, the
    columns of a candidate DataFrame (:func:`candidate_classes`; e.g.
    :meth:`PLDataset.candidates_frame`) and ``arange(q)`` for any other candidate matrix. An
    ``(n, 1)`` array is read as labels (with scikit-learn's ``DataConversionWarning``).
    """
    if y is None:
        raise DataValidationError(
            "this estimator requires y to be passed, but the target y is None: give 1-D labels "
            "or an (n_samples, n_classes) candidate matrix"
        )
    names = candidate_classes(y)
    if names is not None and len(names) != 1:  # one column: labels, as for any (n, 1) array
        S = check_candidates(_frame_matrix(y), n_samples=n_samples)
        return S, names, False
    if not sp.issparse(y):
        y_arr = np.asarray(y)
        if y_arr.ndim == 2 and y_arr.shape[1] == 1:
            y_arr = column_or_1d(y_arr, warn=True)
        if y_arr.ndim == 1:
            if n_samples is not None and y_arr.shape[0] != n_samples:
                raise DataValidationError(
                    f"X has {n_samples} rows but y has {y_arr.shape[0]} labels; they must match"
                )
            check_classification_targets(y_arr)
            S, classes = labels_to_candidates(y_arr)
            if len(classes) < 2:
                raise DataValidationError(
                    f"y holds only one class (all {y_arr.shape[0]} labels are {classes[0].item()!r}); "
                    "partial-label learning needs at least 2 classes (q >= 2)"
                )
            return S, classes, True
        y = y_arr
    S = check_candidates(y, n_samples=n_samples)
    return S, np.arange(S.shape[1]), False


def _check_true_labels(y_true, S, n_samples, require_inside):
    y_true = np.asarray(y_true)
    if y_true.ndim != 1 or y_true.shape[0] != n_samples:
        raise DataValidationError(
            f"y_true must be 1-D with one label per row of X ({n_samples}), got shape {y_true.shape}"
        )
    if not np.issubdtype(y_true.dtype, np.integer):
        if np.issubdtype(y_true.dtype, np.floating) and np.all(np.mod(y_true, 1) == 0):
            y_true = y_true.astype(np.int64)
        else:
            raise DataValidationError(f"y_true must hold integer labels 0..q-1, got dtype {y_true.dtype}")
    if S is not None:
        q = S.shape[1]
        out = np.nonzero((y_true < 0) | (y_true >= q))[0]
        if out.size:
            raise DataValidationError(f"y_true has labels outside 0..{q - 1} at rows {_first(out)}")
        if require_inside:
            rows = np.arange(n_samples)
            inside = np.asarray(S[rows, y_true]).ravel().astype(bool)
            bad = np.nonzero(~inside)[0]
            if bad.size:
                raise DataValidationError(
                    f"true label is outside its candidate set at rows {_first(bad)}"
                )
    elif np.any(y_true < 0):
        raise DataValidationError(f"y_true has negative labels at rows {_first(np.nonzero(y_true < 0)[0])}")
    return y_true


def check_partial_labels(X, S=None, y_true=None, *, require_true_in_candidates=False,
                         allow_empty_rows=False):
    """Validate one partial-label data set; the single check used everywhere.

    Parameters
    ----------
    X : array-like of shape (n, d)
        Features; NaN/inf are rejected.
    S : array-like or sparse matrix of shape (n, q), optional
        Candidate matrix; must be 0/1 with no empty rows and ``q >= 2``.
    y_true : array-like of shape (n,), optional
        Ground-truth labels in ``0 .. q-1``.
    require_true_in_candidates : bool
        If True, every true label must be one of its candidates.
    allow_empty_rows : bool
        Accept empty candidate rows (e.g. after a noisy bag generator).

    Returns
    -------
    X, S, y_true : validated (and possibly converted) arrays; rows unchanged.
    """
    X = check_features(X)
    if S is not None:
        S = check_candidates(S, n_samples=X.shape[0], allow_empty_rows=allow_empty_rows)
    if y_true is not None:
        y_true = _check_true_labels(y_true, S, X.shape[0], require_true_in_candidates)
    return X, S, y_true


@dataclass(frozen=True)
class RowIds:
    """The ids of a data set's rows: the column they were read from (its name, or its position
    as text in a file without a header) and one value per row, as text (``None`` where a cell
    is missing). Ids are no feature: they follow their rows (:meth:`PLDataset.subset`) into what
    is written per row (``python -m plcore clean``, ``python -m plcore predict id_column=...``)."""

    column: str
    values: tuple

    @classmethod
    def read(cls, column, values) -> "RowIds":
        """Ids from the cells of ``column``: every value as text, a missing one (``None``) kept."""
        return cls(str(column), tuple(None if v is None else str(v) for v in values))

    def faults(self, at=None) -> list[str]:
        """What keeps these ids from naming one row each, one phrase a kind (empty, duplicated), each
        with its count and a few examples; ``at(rows)`` words data rows (default ``rows [i, ...]``).
        The loaders warn of them, or refuse them with ``strict``."""
        at = at or (lambda rows: f"rows {_first(rows)}")
        values = self.values
        empty = [i for i, v in enumerate(values) if v is None or not v.strip()]
        out = []
        if empty:
            out.append(f"{len(empty)} empty id(s) in column {self.column!r} at {at(empty)}; what is written per "
                       "row names them by no id")
        counts: dict = {}
        for v in values:
            if v is not None and v.strip():
                counts[v] = counts.get(v, 0) + 1
        repeated = [v for v, k in counts.items() if k > 1]  # in the order the rows first hold them
        if repeated:
            shown = ", ".join(repr(v) for v in repeated[:3]) + (", ..." if len(repeated) > 3 else "")
            out.append(f"{len(repeated)} duplicated id(s) in column {self.column!r} (e.g. {shown}; "
                       f"{sum(counts[v] for v in repeated)} rows hold them); rows that share an id cannot be told "
                       "apart in what is written per row")
        return out

    def take(self, index) -> "RowIds":
        """The ids of rows ``index`` (integer or boolean array), in the given order."""
        return RowIds(self.column, tuple(np.asarray(self.values, dtype=object)[np.asarray(index)].tolist()))

    def __len__(self) -> int:
        return len(self.values)


@dataclass
class PLDataset:
    """A partial-label data set: features, candidate sets, optional truth.

    ``S`` may be ``None`` for an exactly labelled data set (UCI, scikit-learn) whose
    candidate sets a bag generator will create. ``meta`` carries loader details
    (source path, predefined splits, ...). ``ids`` (:class:`RowIds`, optional) are the rows'
    ids, read from a table's id column.
    """

    X: np.ndarray
    S: Any = None
    y_true: np.ndarray | None = None
    classes: np.ndarray | None = None
    name: str = "unnamed"
    meta: dict = field(default_factory=dict)
    ids: RowIds | None = None

    def __post_init__(self):
        self.X, self.S, self.y_true = check_partial_labels(
            self.X, self.S, self.y_true, allow_empty_rows=True
        )
        if self.ids is not None and len(self.ids) != self.X.shape[0]:
            raise DataValidationError(f"ids: {len(self.ids)} row ids for the {self.X.shape[0]} rows of X; "
                                      "they must match")
        if self.classes is None:
            if self.S is not None:
                q = self.S.shape[1]
            elif self.y_true is not None:
                q = int(self.y_true.max()) + 1
            else:
                q = 0
            self.classes = np.arange(q)
        self.classes = np.asarray(self.classes)

    @property
    def n_samples(self) -> int:
        return self.X.shape[0]

    @property
    def n_features(self) -> int:
        return self.X.shape[1]

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    @property
    def is_partial(self) -> bool:
        """True when the data set carries candidate sets."""
        return self.S is not None

    def validate(self, *, require_true_in_candidates: bool = False) -> "PLDataset":
        """Run the full checks (no empty candidate rows); return self."""
        check_partial_labels(
            self.X, self.S, self.y_true,
            require_true_in_candidates=require_true_in_candidates,
        )
        return self

    def with_candidates(self, S, name: str | None = None) -> "PLDataset":
        """Return a copy carrying candidate matrix ``S`` (e.g. from a bag generator)."""
        return PLDataset(self.X, S, self.y_true, self.classes, name or self.name, dict(self.meta), self.ids)

    def subset(self, index) -> "PLDataset":
        """Rows ``index`` (integer or boolean array), in the given order."""
        index = np.asarray(index)
        S = None if self.S is None else self.S[index]
        y = None if self.y_true is None else self.y_true[index]
        meta = {k: v for k, v in self.meta.items() if k != "splits"}
        ids = None if self.ids is None else self.ids.take(index)  # row ids follow their rows
        return PLDataset(self.X[index], S, y, self.classes, self.name, meta, ids)

    def frequent_classes(self, coverage: float) -> "PLDataset":
        """The most frequent classes that together hold at least ``coverage`` of the rows' true
        labels (Fuchs & Kalinke's 99% rule: ``coverage=0.99``), counted in decreasing frequency
        (ties: lower column first); the rows of the other classes leave, and so do their label
        columns (from every candidate set). ``coverage >= 1`` keeps the classes with a row; the
        data's own column order is kept."""
        if self.y_true is None:
            raise DataValidationError(f"class_coverage needs the true labels of {self.name!r}")
        if not 0 < coverage:
            raise DataValidationError(f"class_coverage must be in (0, 1], got {coverage!r}")
        counts = np.bincount(self.y_true, minlength=self.n_classes)
        order = np.argsort(-counts, kind="stable")
        needed = min(coverage, 1.0) * counts.sum()
        n_keep = int(np.searchsorted(np.cumsum(counts[order]), needed - 1e-9 * counts.sum()) + 1)
        keep = np.sort(order[:n_keep])
        keep = keep[counts[keep] > 0]
        rows = np.isin(self.y_true, keep)
        remap = np.full(self.n_classes, -1)
        remap[keep] = np.arange(len(keep))
        S = None if self.S is None else self.S[rows][:, keep]
        meta = {k: (v[rows] if k == "test_rows" else v) for k, v in self.meta.items() if k != "splits"}
        meta["classes_left_out"] = [str(c) for c in np.setdiff1d(np.arange(self.n_classes), keep)]
        ids = None if self.ids is None else self.ids.take(rows)
        return PLDataset(self.X[rows], S, remap[self.y_true[rows]], self.classes[keep], self.name, meta, ids)

    def candidates_frame(self):
        """The candidate sets as a pandas DataFrame, one 0/1 column per class named by ``classes``
        (sparse columns for a sparse ``S``): ``fit(ds.X, ds.candidates_frame())`` learns these
        names, so that ``predict`` returns them (:func:`candidate_classes`)."""
        import pandas as pd

        if self.S is None:
            raise DataValidationError(f"data set {self.name!r} has no candidate sets (exact labels only)")
        columns = pd.Index(self.classes.tolist())
        if sp.issparse(self.S):
            return pd.DataFrame.sparse.from_spmatrix(self.S.astype(bool), columns=columns)
        return pd.DataFrame(np.asarray(self.S, dtype=bool), columns=columns)

    def true_labels(self):
        """The true labels as class names (``classes[y_true]``), as ``predict`` returns them after
        ``fit(X, ds.candidates_frame())``; ``None`` without true labels."""
        return None if self.y_true is None else self.classes[self.y_true]

    def rows_outside_candidates(self) -> np.ndarray:
        """Indices of the rows whose true label is not in their candidate set (empty without
        candidate sets or true labels)."""
        if self.S is None or self.y_true is None:
            return np.zeros(0, dtype=np.int64)
        inside = np.asarray(self.S[np.arange(self.n_samples), self.y_true]).ravel().astype(bool)
        return np.flatnonzero(~inside)

    def candidate_audit(self) -> "CandidateAudit":
        """Sizes of the candidate sets and how often they hold the true label
        (:class:`CandidateAudit`)."""
        if self.S is None:
            raise DataValidationError(f"data set {self.name!r} has no candidate sets to audit")
        sizes = np.asarray(self.S.sum(axis=1)).ravel()
        inside = None
        if self.y_true is not None:
            inside = 1.0 - self.rows_outside_candidates().size / self.n_samples
        return CandidateAudit(n_classes=self.n_classes, mean_size=float(sizes.mean()), min_size=int(sizes.min()),
                              max_size=int(sizes.max()),
                              share_all_labels=float(np.mean(sizes == self.n_classes)), share_true_inside=inside)

    def average_candidates(self) -> float:
        """Mean candidate-set size (``nan`` without candidate sets)."""
        if self.S is None:
            return float("nan")
        return float(np.asarray(self.S.sum(axis=1)).mean())

    def fingerprint(self) -> str:
        """Short SHA-256 of the features, candidates and labels (for run tags)."""
        h = hashlib.sha256()
        h.update(np.ascontiguousarray(self.X).tobytes())
        if self.S is not None:
            dense = self.S.toarray() if sp.issparse(self.S) else self.S
            h.update(np.ascontiguousarray(dense, dtype=np.uint8).tobytes())
        if self.y_true is not None:
            h.update(np.ascontiguousarray(self.y_true, dtype=np.int64).tobytes())
        return h.hexdigest()[:16]

    def __repr__(self) -> str:
        avg = self.average_candidates()
        return (
            f"PLDataset(name={self.name!r}, n={self.n_samples}, d={self.n_features}, "
            f"q={self.n_classes}, avg_candidates={avg:.2f})"
        )


@dataclass(frozen=True)
class CandidateAudit:
    """What a run's candidate sets carry (:meth:`PLDataset.candidate_audit`): the mean, least and
    largest set size ``|S|``, the share of rows whose set holds all ``q`` labels (they carry no
    information), and the share whose true label is in the set (``None`` without true labels).
    The noise rate of noisy partial labels is ``1 - share_true_inside``: printed, not a second
    metric."""

    n_classes: int
    mean_size: float
    min_size: int
    max_size: int
    share_all_labels: float
    share_true_inside: float | None = None

    def metrics(self) -> dict:
        """``{"candidates.mean_size": ..., ...}``: the audit as a run's metrics."""
        out = {"candidates.mean_size": self.mean_size, "candidates.min_size": self.min_size,
               "candidates.max_size": self.max_size, "candidates.share_all_labels": self.share_all_labels}
        if self.share_true_inside is not None:
            out["candidates.share_true_inside"] = self.share_true_inside
        return out

    def __str__(self) -> str:
        inside = ("" if self.share_true_inside is None
                  else f"; true label inside in {100 * self.share_true_inside:.1f}% of rows")
        if self.share_true_inside is not None and self.share_true_inside < 1.0:
            inside += f" (noise rate {100 * (1.0 - self.share_true_inside):.1f}%)"
        return (f"candidate sets: |S| mean {self.mean_size:.2f} (min {self.min_size}, max {self.max_size}) of "
                f"q={self.n_classes}; all labels in {100 * self.share_all_labels:.1f}% of rows{inside}")

    def require_informative(self, what: str) -> None:
        """Raise when every candidate set holds all ``q`` labels: ``what`` (e.g. the bag generator)
        gives nothing to learn from."""
        if self.share_all_labels >= 1.0:
            raise DataValidationError(
                f"{what} puts all {self.n_classes} labels in every candidate set: they carry no information "
                "(any method is at chance); choose candidate sets that leave labels out")
