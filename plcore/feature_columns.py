"""Tables in, class names out: the feature columns of a table read by name
(:class:`FeatureColumns`, nominal columns one-hot encoded) and the model a run logs
(:class:`PredictionModel`: those columns, the fitted pipeline and the class names).

A loader that reads a table with named columns (CSV or Parquet with a header, ARFF) fits a
:class:`FeatureColumns` to its feature columns; the data set's ``X`` is its output and the
data set keeps it (``meta["features"]``). The run's refitted pipeline is logged wrapped in a
:class:`PredictionModel` with it, so that ``python -m plcore predict``,
``mlflow.pyfunc.load_model(uri).predict(frame)`` and ``mlflow models serve`` read new rows by
column name, in any order, encode nominal columns as the training rows were, and answer class
names. Every refusal is one :class:`~plcore.exceptions.DataValidationError` line naming the
column and the row (the frame's index: a CSV read by ``python -m plcore predict`` is indexed by
its file lines).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from plcore.data import max_feature_magnitude
from plcore.exceptions import DataValidationError
from plcore.validation import StrOptions, validate_params

__all__ = ["CATEGORICAL", "MISSING", "FeatureColumns", "PredictionModel", "is_frame", "missing_cells"]

#: how nominal (non-numeric) feature columns are treated: refused, or one-hot encoded
CATEGORICAL = ("error", "onehot")

_SHOWN = 10


def is_frame(X) -> bool:
    """Whether ``X`` is a pandas DataFrame (pandas is imported only where it already is)."""
    import sys

    pd = sys.modules.get("pandas")
    return pd is not None and isinstance(X, pd.DataFrame)


#: cell values read as missing (compared lower-case, spaces stripped): the loaders' and the model's
MISSING = ("", "?", "na", "nan", "null", "none")


def missing_cells(values: np.ndarray) -> np.ndarray:
    """Mask of the cells of a 1-D array that hold no value: NaN, None, or a :data:`MISSING`
    string (what the loaders refuse as missing)."""
    values = np.asarray(values)
    if values.dtype.kind in "fc":
        return np.isnan(values)
    if values.dtype.kind in "iub":
        return np.zeros(values.shape, dtype=bool)
    text = np.char.lower(np.char.strip(values.astype(str)))  # None -> "none", NaN -> "nan"
    return np.isin(text, MISSING)


def _category(value) -> str:
    """A nominal value as text; a whole number read as a float (``1.0`` from a numeric column of
    new rows) is written as the integer it is (``"1"``)."""
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def _listed(names, limit: int = _SHOWN) -> str:
    names = [str(n) for n in names]
    return ", ".join(repr(n) for n in names[:limit]) + (f", ... ({len(names)} in total)" if len(names) > limit else "")


def _where(frame, rows) -> str:
    """``line 7`` / ``row 3`` (the frame's index, named by its name) for the first of ``rows``."""
    rows = np.asarray(rows)
    word = frame.index.name if isinstance(frame.index.name, str) else "row"
    more = f" ({rows.size} rows in total)" if rows.size > 1 else ""
    return f"{word} {frame.index[int(rows[0])]}{more}"


def _other_separator(columns, wanted) -> tuple[str, str] | None:
    """``(column, separator)`` where a column's name is several of the ``wanted`` names joined by
    another separator than ',' (a file written with ';' or tabs, read as one column); else None."""
    for column in map(str, columns):
        for sep in (";", "\t", "|", " "):
            parts = [p.strip().strip('"') for p in column.split(sep)]
            if len(parts) > 1 and set(parts) & set(wanted):
                return column, sep
    return None


def _as_numbers(values: np.ndarray):
    """``(floats, bad mask)``: each cell as a float64, and where a cell is not a number."""
    try:
        return values.astype(np.float64), np.zeros(values.shape, dtype=bool)
    except (TypeError, ValueError):
        pass
    out = np.full(values.shape, np.nan)
    bad = np.zeros(values.shape, dtype=bool)
    for i, v in enumerate(values):
        try:
            out[i] = float(v)
        except (TypeError, ValueError):
            bad[i] = True
    return out, bad


class FeatureColumns(TransformerMixin, BaseEstimator):
    """The feature columns of a table, by name: numeric columns as float64, nominal columns (any
    value not a number) refused (``categorical="error"``) or one-hot encoded
    (``categorical="onehot"``: one 0/1 column per category of the fitted rows, sorted).

    ``fit(frame)`` learns the columns (``feature_names_in_``, their order), which are nominal
    (``nominal_``) and their categories (``categories_``); ``transform(frame)`` reads those columns
    by name, in any order, ignoring the others, and refuses in one line a missing column, a missing
    value, a non-numeric value in a numeric column and a category the fitted rows did not have. The
    output keeps the columns' order, each nominal column replaced by its indicator columns
    (``get_feature_names_out``: ``V1=a``).
    """

    _parameter_constraints: dict = {"categorical": [StrOptions(set(CATEGORICAL))]}

    def __init__(self, categorical: str = "error"):
        self.categorical = categorical

    def fit(self, X, y=None):
        """Learn the feature columns of the DataFrame ``X``; return self."""
        validate_params(self)
        frame = self._frame(X)
        self.feature_names_in_ = np.asarray(list(frame.columns), dtype=object)
        self.n_features_in_ = len(self.feature_names_in_)
        not_numbers = {}
        for name in self.feature_names_in_:
            values = frame[name].to_numpy()
            self._check_present(frame, name, values)
            bad = _as_numbers(values)[1]
            if bad.any():
                not_numbers[name] = np.nonzero(bad)[0]
        self.nominal_ = list(not_numbers)
        if self.nominal_ and self.categorical == "error":
            first, rows = next(iter(not_numbers.items()))
            raise DataValidationError(
                f"non-numeric feature values in column(s) {_listed(self.nominal_)} (e.g. "
                f"{frame[first].iloc[rows[0]]!r} at {_where(frame, rows)}): nominal features are "
                "one-hot encoded with categorical=onehot (dataset.categorical=onehot on the command line)")
        self.categories_ = [sorted({_category(v) for v in frame[n]}) for n in self.nominal_]
        return self

    def transform(self, X):
        """The feature matrix (float64) of the rows of ``X``, its columns read by name."""
        check_is_fitted(self)
        frame = self._frame(X, reading=True)
        codes = dict(zip(self.nominal_, self.categories_))
        columns = []
        for name in self.feature_names_in_:
            values = frame[name].to_numpy()
            self._check_present(frame, name, values)
            if name in codes:
                cells = np.asarray([_category(v) for v in values], dtype=object)
                known = np.asarray(codes[name], dtype=object)
                unknown = np.nonzero(~np.isin(cells, known))[0]
                if unknown.size:
                    raise DataValidationError(
                        f"unknown category {cells[unknown[0]]!r} in nominal feature column {name!r} at "
                        f"{_where(frame, unknown)}; the model knows {_listed(codes[name])}")
                columns.append((cells[:, None] == known[None, :]).astype(np.float64))  # one-hot
                continue
            numbers, bad = _as_numbers(values)
            if bad.any():
                rows = np.nonzero(bad)[0]
                raise DataValidationError(f"non-numeric value {values[rows[0]]!r} in feature column {name!r} at "
                                          f"{_where(frame, rows)}")
            inf = np.nonzero(~np.isfinite(numbers))[0]
            if inf.size:
                raise DataValidationError(f"non-finite value {str(values[inf[0]])!r} in feature column {name!r} "
                                          f"at {_where(frame, inf)}")
            bound = max_feature_magnitude(frame.shape[0], len(self.feature_names_in_))
            huge = np.nonzero(np.abs(numbers) > bound)[0]
            if huge.size:  # named as the file has it, before any scaling
                raise DataValidationError(f"value {str(values[huge[0]])!r} in feature column {name!r} at "
                                          f"{_where(frame, huge)} is too large: sums of its squares overflow float64 "
                                          f"in distances and covariances (at most {bound:.3g} for these rows)")
            columns.append(numbers[:, None])
        return np.hstack(columns) if columns else np.empty((frame.shape[0], 0))

    def get_feature_names_out(self, input_features=None):
        """The output's column names: a numeric column's own, ``name=category`` for a nominal one."""
        check_is_fitted(self)
        codes = dict(zip(self.nominal_, self.categories_))
        out = []
        for name in self.feature_names_in_:
            out.extend([f"{name}={c}" for c in codes[name]] if name in codes else [name])
        return np.asarray(out, dtype=object)

    def example(self, n: int = 1):
        """A DataFrame of ``n`` rows of the fitted columns (0.0, or a nominal column's first
        category), with their types: the input example of a model's signature."""
        import pandas as pd

        check_is_fitted(self)
        codes = dict(zip(self.nominal_, self.categories_))
        return pd.DataFrame({name: [codes[name][0]] * n if name in codes else np.zeros(n)
                             for name in self.feature_names_in_})

    def _frame(self, X, reading: bool = False):
        """``X`` as a DataFrame with string column names; rows without names only when reading
        numeric columns in the fitted order."""
        if not is_frame(X):
            if reading and not self.nominal_:
                X = np.asarray(X, dtype=object)
                if X.ndim == 2 and X.shape[1] == self.n_features_in_:
                    import pandas as pd

                    return pd.DataFrame(X, columns=list(self.feature_names_in_))
            what = "the model reads" if reading else "FeatureColumns reads"
            raise DataValidationError(f"{what} the feature columns of a table by name: give a pandas DataFrame "
                                      f"with the columns {_listed(getattr(self, 'feature_names_in_', []))}")
        if X.shape[0] == 0:
            raise DataValidationError("the table has no rows")
        X = X.rename(columns=str)
        twice = list(dict.fromkeys(X.columns[X.columns.duplicated()]))
        if reading:
            missing = [n for n in self.feature_names_in_ if n not in set(X.columns)]
            if missing:
                joined = _other_separator(X.columns, missing)
                if joined is not None:
                    column, sep = joined
                    raise DataValidationError(
                        f"the data lack the feature column(s) {_listed(missing)}: the header (line 1) reads as the "
                        f"column {column!r}, its names separated by {sep!r}; the file is read with ',' between "
                        "values: write it with ',' (or as Parquet)")
                raise DataValidationError(f"the data lack the feature column(s) {_listed(missing)} (the model reads "
                                          f"the columns {_listed(self.feature_names_in_)} by name)")
            twice = [c for c in twice if c in set(self.feature_names_in_)]  # other columns are ignored
        if twice:
            raise DataValidationError(f"the table names the column(s) {_listed(twice)} twice")
        return X

    @staticmethod
    def _check_present(frame, name, values):
        gone = np.nonzero(missing_cells(values))[0]
        if gone.size:
            raise DataValidationError(f"missing value in feature column {name!r} at {_where(frame, gone)}; nothing "
                                      "is imputed: fill or drop it first")


def _pipeline_has(method: str):
    return lambda self: hasattr(self.pipeline, method)


class PredictionModel(BaseEstimator):
    """What a run logs as its MLflow model: a fitted pipeline that predicts class indices, read
    through the training table's feature columns (``features``, a fitted :class:`FeatureColumns`;
    None: rows given by position, as the training data had no column names) and answering the
    class names ``classes``.

    ``predict(X)`` gives class names; ``predict_proba(X)`` one column per class of ``classes_``
    where the pipeline gives scores.
    """

    def __init__(self, pipeline=None, classes=None, features=None):
        self.pipeline = pipeline
        self.classes = classes
        self.features = features

    @property
    def classes_(self) -> np.ndarray:
        return np.asarray(self.classes)

    @property
    def feature_names_in_(self):
        """The feature columns read by name (None: by position)."""
        return None if self.features is None else self.features.feature_names_in_

    @property
    def n_features_in_(self) -> int | None:
        """How many columns (by name, or by position) the model reads."""
        if self.features is not None:
            return int(self.features.n_features_in_)
        return getattr(self.pipeline, "n_features_in_", None)

    def fit(self, X, y):
        """Fit ``features`` (where given) and ``pipeline`` on the table ``X`` and candidate sets ``y``."""
        Z = X if self.features is None else self.features.fit(X).transform(X)
        self.pipeline.fit(Z, y)
        return self

    def encode(self, X) -> np.ndarray:
        """The feature matrix the pipeline reads: ``X``'s feature columns by name (numbers as
        float64, nominal columns one-hot), or ``X`` by position where the model has no names."""
        if self.features is not None:
            return self.features.transform(X)
        X = np.asarray(X, dtype=np.float64)
        n_in = self.n_features_in_
        if n_in is not None and X.ndim == 2 and X.shape[1] != n_in:
            raise DataValidationError(f"the data have {X.shape[1]} features but the model was fitted on {n_in}")
        return X

    def predict(self, X) -> np.ndarray:
        """The class name predicted for each row of ``X``."""
        index = np.asarray(self.pipeline.predict(self.encode(X)))
        return self.classes_[index.astype(np.intp)]

    @available_if(_pipeline_has("predict_proba"))
    def predict_proba(self, X) -> np.ndarray:
        """One score per class of ``classes_`` for each row of ``X``."""
        return self.pipeline.predict_proba(self.encode(X))
