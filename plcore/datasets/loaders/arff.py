"""UCI ARFF files: numeric (or, one-hot encoded, nominal) features, the last attribute the class."""

from __future__ import annotations

import re

import numpy as np
from scipy.io import arff

from plcore.data import PLDataset, _first
from plcore.datasets.formats import TableOptions
from plcore.datasets.loaders.reading import _check_classes, _existing_file, _reading
from plcore.datasets.loaders.table import _NOMINAL_HINT
from plcore.exceptions import DataValidationError, one_line
from plcore.feature_columns import FeatureColumns, missing_cells

#: ARFF: a numeric last attribute is read as the class only under one of these names
_CLASS_NAMES = ("class", "label", "target", "y")


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
            detail = one_line(str(err)) or "no valid @relation/@attribute/@data header"
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


def read_frame(path, *, delimiter: str = ","):
    """An ARFF file's rows (every attribute, its class too) as a DataFrame, index the rows from 0
    (named ``row``); the suffix table's reader of new rows (``delimiter`` is for CSV only)."""
    import pandas as pd

    with _reading(path, "an ARFF file"):
        data, meta = arff.loadarff(path)
        frame = _arff_frame(data, meta, meta.names())
    frame.index = pd.RangeIndex(frame.shape[0], name="row")
    return frame


def read_dataset(path, *, name: str | None = None, noisy: bool = False, options: TableOptions = TableOptions()):
    """The suffix table's reader of ``.arff`` files (exact labels: ``noisy`` does not apply)."""
    return load_arff(path, name, categorical=options.categorical)
