"""Tables in, class names out (issue 55): :class:`plcore.feature_columns.FeatureColumns` reads a table's
feature columns by name and one-hot encodes nominal ones; :class:`plcore.feature_columns.PredictionModel`
(what a run logs) answers class names; both survive skops and MLflow's pyfunc."""

import numpy as np
import pandas as pd
import pytest
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from plcore.exceptions import DataValidationError
from plcore.learners import PlKnnLearner
from plcore.feature_columns import FeatureColumns, PredictionModel, missing_cells

RNG = np.random.default_rng(0)
N = 60
FRAME = pd.DataFrame({"a": RNG.normal(size=N), "colour": RNG.choice(["red", "blue", "green"], N),
                      "b": RNG.normal(size=N), "size": RNG.choice(["S", "M"], N)})


def _onehot_by_hand(frame):
    """The textbook encoding: numeric columns as they are, each nominal column replaced in place
    by one 0/1 column per category (sorted)."""
    cols = []
    for name in frame.columns:
        values = frame[name].to_numpy()
        if values.dtype == object:
            cols += [(values == c).astype(float) for c in sorted(set(values))]
        else:
            cols.append(values.astype(float))
    return np.column_stack(cols)


def test_onehot_equals_the_textbook_encoding_and_names_its_columns():
    enc = FeatureColumns(categorical="onehot").fit(FRAME)
    np.testing.assert_array_equal(enc.transform(FRAME), _onehot_by_hand(FRAME))
    assert enc.nominal_ == ["colour", "size"] and enc.categories_ == [["blue", "green", "red"], ["M", "S"]]
    assert list(enc.get_feature_names_out()) == ["a", "colour=blue", "colour=green", "colour=red", "b", "size=M",
                                                 "size=S"]


def test_columns_are_read_by_name_in_any_order_and_others_ignored():
    enc = FeatureColumns(categorical="onehot").fit(FRAME)
    shuffled = FRAME[["size", "b", "colour", "a"]].assign(id=np.arange(N), truth="x")
    np.testing.assert_array_equal(enc.transform(shuffled), enc.transform(FRAME))


def test_numbers_written_as_text_are_numbers():
    numeric = FRAME[["a", "b"]]
    enc = FeatureColumns().fit(numeric)
    as_text = numeric.astype(str).astype(object)
    np.testing.assert_allclose(enc.transform(as_text), numeric.to_numpy())


@pytest.mark.parametrize("frame, needle", [
    (FRAME.drop(columns=["b"]), "the data lack the feature column(s) 'b' (the model reads the columns 'a', "
                                "'colour', 'b', 'size' by name)"),
    (FRAME.assign(b=["1.5"] * (N - 1) + ["oops"]), "non-numeric value 'oops' in feature column 'b' at row 59"),
    (FRAME.assign(colour=["red"] * (N - 2) + ["purple", "red"]),
     "unknown category 'purple' in nominal feature column 'colour' at row 58; the model knows 'blue', 'green', "
     "'red'"),
    (FRAME.assign(a=[np.nan] + [0.0] * (N - 1)), "missing value in feature column 'a' at row 0"),
    (FRAME.assign(a=[np.inf] + [0.0] * (N - 1)), "non-finite value 'inf' in feature column 'a' at row 0"),
])
def test_bad_new_rows_are_one_line_naming_column_and_row(frame, needle):
    enc = FeatureColumns(categorical="onehot").fit(FRAME)
    with pytest.raises(DataValidationError) as exc:
        enc.transform(frame)
    msg = str(exc.value)
    assert "\n" not in msg and needle in msg, msg


def test_the_index_names_where_a_row_is():
    """A CSV read by ``predict`` is indexed by its file lines (index name ``line``)."""
    enc = FeatureColumns().fit(FRAME[["a", "b"]])
    new = FRAME[["a", "b"]].head(3).astype(object)
    new.iloc[2, 1] = "x"
    new.index = pd.Index([2, 3, 7], name="line")
    with pytest.raises(DataValidationError, match="at line 7"):
        enc.transform(new)


def test_nominal_columns_are_refused_by_default_in_one_line():
    with pytest.raises(DataValidationError) as exc:
        FeatureColumns().fit(FRAME)
    msg = str(exc.value)
    assert "\n" not in msg and "'colour', 'size'" in msg and "categorical=onehot" in msg, msg


def test_rows_without_names_are_read_in_the_fitted_order_only_for_numeric_columns():
    numeric = FRAME[["a", "b"]]
    enc = FeatureColumns().fit(numeric)
    np.testing.assert_array_equal(enc.transform(numeric.to_numpy()), numeric.to_numpy())
    with pytest.raises(DataValidationError, match="by name"):
        FeatureColumns(categorical="onehot").fit(FRAME).transform(FRAME.to_numpy())


def test_missing_cells_are_the_loaders_missing_tokens():
    cells = np.array(["1", "", " NA ", "?", None, "nan", "x", "none", "null", float("nan")], dtype=object)
    assert missing_cells(cells).tolist() == [False, True, True, True, True, True, False, True, True, True]
    assert missing_cells(np.array([1.0, np.nan])).tolist() == [False, True]


def _model():
    enc = FeatureColumns(categorical="onehot").fit(FRAME)
    S = np.zeros((N, 3), dtype=bool)
    y = (FRAME["a"].to_numpy() > 0).astype(int) + (FRAME["colour"] == "red").to_numpy()
    S[np.arange(N), y] = True
    S[np.arange(N), (y + 1) % 3] |= RNG.random(N) < 0.3
    pipe = make_pipeline(StandardScaler(), PlKnnLearner(k=3)).fit(enc.transform(FRAME), S)
    return PredictionModel(pipe, np.array(["cat", "dog", "fox"]), enc), pipe, enc


def test_prediction_model_answers_the_class_names_of_the_pipelines_indices():
    model, pipe, enc = _model()
    index = pipe.predict(enc.transform(FRAME))
    np.testing.assert_array_equal(model.predict(FRAME), np.array(["cat", "dog", "fox"])[index])
    np.testing.assert_array_equal(model.predict(FRAME.iloc[::-1][["size", "b", "a", "colour"]]),
                                  np.array(["cat", "dog", "fox"])[index][::-1])  # the rows' order kept
    np.testing.assert_allclose(model.predict_proba(FRAME), pipe.predict_proba(enc.transform(FRAME)))
    assert list(model.feature_names_in_) == ["a", "colour", "b", "size"] and model.n_features_in_ == 4


def test_prediction_model_without_names_reads_by_position_and_checks_the_width():
    X = FRAME[["a", "b"]].to_numpy()
    pipe = make_pipeline(StandardScaler(), PlKnnLearner(k=3)).fit(X, np.eye(3, dtype=bool)[np.arange(N) % 3])
    model = PredictionModel(pipe, np.array([10, 20, 30]))
    assert set(model.predict(X)) <= {10, 20, 30} and model.feature_names_in_ is None
    with pytest.raises(DataValidationError, match="the data have 3 features but the model was fitted on 2"):
        model.predict(np.zeros((2, 3)))


def test_prediction_model_survives_skops_with_the_types_plcore_trusts():
    from plcore.registry import model_packages
    from plcore.tracking.models import choose_format, skops_io

    model, _, _ = _model()
    fmt, types, why = choose_format(model, model_packages())
    assert fmt == "skops" and why is None, why
    back = skops_io().loads(skops_io().dumps(model), trusted=types)
    np.testing.assert_array_equal(back.predict(FRAME), model.predict(FRAME))


def test_mlflow_pyfunc_reads_columns_by_name_and_answers_class_names(tmp_path):
    """The saved model through MLflow's pyfunc (what ``mlflow models serve`` calls): columns in
    another order and an extra column, integers for doubles; a missing column is refused."""
    import mlflow.pyfunc

    from plcore.registry import model_packages, pip_requirements
    from plcore.tracking.models import save_model

    model, pipe, enc = _model()
    save_model({"pipeline": pipe, "X_example": enc.transform(FRAME)[:5], "classes": ["cat", "dog", "fox"],
                "features": enc, "requirements": pip_requirements(), "packages": model_packages()}, tmp_path / "m")
    loaded = mlflow.pyfunc.load_model(str(tmp_path / "m"))
    new = FRAME[["size", "b", "colour", "a"]].head(5).assign(id=np.arange(5))
    new["b"] = new["b"].round().astype(int)
    got = loaded.predict(new)
    assert list(np.asarray(got)) == list(model.predict(new)) and set(np.asarray(got)) <= {"cat", "dog", "fox"}
    with pytest.raises(Exception, match="missing inputs"):
        loaded.predict(new.drop(columns=["a"]))


def test_column_names_that_are_numbers_and_nominal_numbers_read_back():
    """Columns named 0, 1 (a frame without names) fit; a category ``"1"`` met as ``1.0`` in a
    numeric column of new rows is the same category; a table of no rows is one line."""
    frame = pd.DataFrame({0: [0.5, 1.5, 2.5, 3.5], 1: ["1", "x", "1", "x"]})
    enc = FeatureColumns(categorical="onehot").fit(frame)
    assert list(enc.feature_names_in_) == ["0", "1"] and enc.categories_ == [["1", "x"]]
    new = pd.DataFrame({"1": [1.0, 1.0], "0": [0.0, 1.0]})  # the category "1" as a float column holds it
    np.testing.assert_array_equal(enc.transform(new), [[0, 1, 0], [1, 1, 0]])
    with pytest.raises(DataValidationError, match="no rows"):
        enc.transform(new.iloc[:0])
    with pytest.raises(DataValidationError, match="twice"):
        FeatureColumns().fit(pd.DataFrame([[1, 2]], columns=["a", "a"]))
