"""The table parser: a data set from a table's cells (CSV, Parquet), the columns
:class:`~plcore.datasets.formats.TableOptions` names read as labels, candidate sets or ids, all
the others as features."""

from __future__ import annotations

import re
import warnings

import numpy as np

from plcore.data import PLDataset, RowIds, _first
from plcore.datasets.formats import TableOptions
from plcore.datasets.loaders.reading import _check_classes
from plcore.exceptions import DataValidationError
from plcore.feature_columns import MISSING, FeatureColumns, missing_cells

#: CSV cells read as missing feature values (reported as such, never silently imputed)
_MISSING = MISSING

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


def _typed_labels(labels):
    """Label strings as numbers where they all are (integers where whole, so that "2" sorts
    before "10"), else unchanged."""
    try:
        num = labels.astype(np.float64)
    except ValueError:
        return labels
    return num.astype(np.int64) if np.all(num == np.round(num)) else num


def _table_dataset(path, name, header, cells, lines, options: TableOptions) -> PLDataset:
    """A data set from a table's cells (an object array, one row per example): the columns the
    ``options`` name, the features from all the others. ``lines`` (file lines of the rows, CSV) or
    ``None`` (Parquet) for the messages."""
    label_column, candidate_column, indicator_columns = options.label_column, options.candidate_column, \
        options.indicator_columns
    separator, id_column, categorical = options.separator, options.id_column, options.categorical
    width = cells.shape[1]
    partial = options.partial
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

    at = _rows_at(lines)
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
        ds = PLDataset(X, None, y, classes, name or path.stem, meta, ids)
    else:
        if cand is not None:
            S, classes, y = _separated_candidates(path, cells[:, cand], labels, separator, at,
                                                  _column_name(header, cand))
        else:
            S, classes, y = _indicator_candidates(path, cells[:, ind], ind_names, labels, at, header, ind)
        ds = PLDataset(X, S, y, classes, name or path.stem, meta, ids)
        ds.validate()
    return ds


def _rows_at(lines):
    """``at(rows)``: data rows (0-based) in words and, for a CSV file (``lines``: the rows' file
    lines), their file lines."""
    def at(r):
        r = np.asarray(r)
        return f"rows {_first(r)}" + (f" (file lines {_first(lines[r])})" if lines is not None else "")

    return at


def _labels_alike(classes) -> list:
    """The groups of class labels that differ only in case or surrounding spaces (``"Cat"``,
    ``"cat"``, ``" cat"``), each group in the classes' order."""
    groups: dict = {}
    for c in classes.tolist():
        if isinstance(c, str):
            groups.setdefault(c.strip().casefold(), []).append(c)
    return [g for g in groups.values() if len(g) > 1]


def _warn_of_faults(ds: PLDataset, path, strict: bool, lines=None) -> None:
    """Duplicated or empty ids (:meth:`RowIds.faults`) and class labels that differ only in case
    or surrounding spaces, in one line each kind naming the count and a few examples: a warning,
    or with ``strict`` a :class:`DataValidationError` (the first kind). Called after the file is
    read (its reading silences warnings); ``lines``: a CSV file's lines of the rows."""
    faults = [] if ds.ids is None else ds.ids.faults(_rows_at(lines))
    alike = _labels_alike(ds.classes)
    if alike:
        shown = "; ".join(", ".join(repr(c) for c in g) for g in alike[:3]) + ("; ..." if len(alike) > 3 else "")
        faults.append(f"{sum(len(g) for g in alike)} class labels differ only in case or surrounding spaces "
                      f"({shown}), each read as a class of its own; write each class one way")
    for fault in faults:
        if strict:
            raise DataValidationError(f"{path}: {fault} (refused: strict=true)")
        warnings.warn(f"{path}: {fault}", stacklevel=2)


def sets_read_as_labels(ds: PLDataset, separator) -> list:
    """The classes of an exact-label data set that hold the set separator (``a;b``): candidate
    sets read as classes of their own, most likely (empty where none, or where it has sets)."""
    if ds.S is not None or not isinstance(separator, str) or not separator or ds.classes.dtype.kind != "U":
        return []
    return [c for c in ds.classes.tolist() if separator in c]


def _warn_sets_read_as_labels(ds: PLDataset, path, separator) -> None:
    """Exact labels that hold the separator (:func:`sets_read_as_labels`): say once how to read
    them as sets (nothing is guessed)."""
    joined = sets_read_as_labels(ds, separator)
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
