"""Tests of plcore.datasets.loaders: PALM .mat, ARFF, CSV, NPZ, scikit-learn, data home."""

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from plcore.data import PLDataset
from plcore.datasets.loaders import (
    PALM_URL,
    UCI_URL,
    find_dataset_file,
    get_data_home,
    load_arff,
    load_csv,
    load_dataset,
    load_npz,
    load_palm,
    load_sklearn,
    load_splits,
)
from plcore.exceptions import DataValidationError, DatasetNotFoundError

# (relative file, n, d, q, average candidates)
PALM = {
    "lost": ("palm/lost.mat", 1122, 108, 16, 2.23),
    "msrc-v2": ("palm/msrc-v2.mat", 1758, 48, 23, 3.16),
    "msrc-v2-plc-splits": ("palm/msrc-v2-plc-splits.mat", 1758, 48, 23, 3.16),
}
# name -> (relative file, n, d, q)
UCI = {
    "ecoli": ("uci/ecoli.arff", 336, 7, 8),
    "satimage": ("uci/statlog-landsat-satellite.arff", 2859, 36, 6),
    "semeion": ("uci/semeion.arff", 1593, 256, 10),
}


def _need(data_home, rel):
    path = data_home / rel
    if not path.is_file():
        pytest.skip(f"data file {path} is absent (see the shared datasets README)")
    return path


# --------------------------------------------------------------------------- helpers: tiny files


def _tiny_palm(path, n=6, q=3, d=2, sparse=True, seed=0, extra=None):
    """Write a tiny PALM-format .mat (labels stored q x n, as the PALM lab does)."""
    rng = np.random.default_rng(seed)
    y = np.arange(n) % q
    S = rng.random((n, q)) < 0.4
    S[np.arange(n), y] = True
    T = np.zeros((n, q))
    T[np.arange(n), y] = 1
    X = rng.normal(size=(n, d))
    pt, tt = S.T.astype(float), T.T
    if sparse:
        pt, tt = sp.csc_matrix(pt), sp.csc_matrix(tt)
    mat = {"data": X, "partial_target": pt, "target": tt}
    mat.update(extra or {})
    scipy.io.savemat(path, mat)
    return X, S, y


_TOY_ARFF = """% a toy file
@relation toy
@attribute a numeric
@attribute b real
@attribute Class {zeta,alpha,mid}
@data
1.5,2,alpha
3,4,zeta
5,6,mid
7,8,alpha
"""


# --------------------------------------------------------------------------- PALM (real files)


@pytest.fixture(scope="module")
def palm_sets(data_home):
    cache = {}

    def get(name):
        if name not in cache:
            path = _need(data_home, PALM[name][0])
            cache[name] = (load_dataset(name, data_home=data_home), path)
        return cache[name]

    return get


@pytest.mark.data
@pytest.mark.parametrize("name", ["lost", "msrc-v2", "msrc-v2-plc-splits"])
def test_palm_shapes_and_candidates(palm_sets, name):
    _, n, d, q, avg = PALM[name]
    ds, path = palm_sets(name)
    assert isinstance(ds, PLDataset)
    assert ds.name == name
    assert (ds.n_samples, ds.n_features, ds.n_classes) == (n, d, q)
    assert ds.X.shape == (n, d) and ds.X.dtype == np.float64
    assert ds.S.shape == (n, q)
    assert sp.issparse(ds.S) and ds.S.format == "csr"
    assert round(ds.average_candidates(), 2) == avg
    assert ds.y_true.shape == (n,)
    assert ds.y_true.min() >= 0 and ds.y_true.max() < q
    # the true label is always inside its candidate set
    inside = np.asarray(ds.S[np.arange(n), ds.y_true]).ravel()
    assert np.all(inside == 1)
    ds.validate(require_true_in_candidates=True)
    assert ds.meta["source"] == str(path)


@pytest.mark.data
@pytest.mark.parametrize("name", ["lost", "msrc-v2"])
def test_palm_label_matrices_are_transposed(palm_sets, name):
    ds, path = palm_sets(name)
    raw = scipy.io.loadmat(path)
    assert raw["partial_target"].shape == (ds.n_classes, ds.n_samples)  # stored q x n
    expected = sp.csr_matrix(raw["partial_target"]).T.toarray() != 0
    np.testing.assert_array_equal(ds.S.toarray() != 0, expected)
    np.testing.assert_array_equal(ds.y_true, np.asarray(raw["target"].toarray().argmax(axis=0)).ravel())
    np.testing.assert_array_equal(ds.X, raw["data"])  # rows neither dropped nor reordered


@pytest.mark.data
def test_palm_splits_file(palm_sets, data_home):
    ds, path = palm_sets("msrc-v2-plc-splits")
    splits = ds.meta["splits"]
    assert len(splits) == 10
    for train, test in splits:
        assert train.dtype == bool and test.dtype == bool
        assert train.shape == test.shape == (1758,)
        assert train.sum() == 176
        assert test.sum() == 1582
        assert not np.any(train & test)
        assert np.all(train | test)
    # splits differ from one another
    assert len({tuple(np.nonzero(tr)[0]) for tr, _ in splits}) > 1
    # the standalone reader agrees
    again = load_splits(path)
    assert len(again) == 10
    for (a, b), (c, e) in zip(splits, again):
        np.testing.assert_array_equal(a, c)
        np.testing.assert_array_equal(b, e)
    # subsets drop the split masks but keep rows
    train0 = ds.subset(splits[0][0])
    assert train0.n_samples == 176 and "splits" not in train0.meta


@pytest.mark.data
def test_palm_without_splits_has_no_split_meta(palm_sets):
    ds, _ = palm_sets("lost")
    assert "splits" not in ds.meta


@pytest.mark.data
@pytest.mark.parametrize("name", ["lost", "msrc-v2"])
def test_palm_load_by_path(palm_sets, data_home, name):
    path = _need(data_home, PALM[name][0])
    by_path = load_dataset(path)
    by_name, _ = palm_sets(name)
    assert by_path.name == path.stem
    assert by_path.fingerprint() == by_name.fingerprint()
    assert load_dataset(str(path)).fingerprint() == by_name.fingerprint()


# --------------------------------------------------------------------------- PALM (tiny files)


def test_palm_tiny_sparse_roundtrip(tmp_path):
    X, S, y = _tiny_palm(tmp_path / "toy.mat", n=7, q=3, sparse=True)
    ds = load_palm(tmp_path / "toy.mat")
    assert ds.name == "toy"
    assert sp.issparse(ds.S) and ds.S.format == "csr" and ds.S.shape == (7, 3)
    np.testing.assert_array_equal(ds.S.toarray().astype(bool), S)
    np.testing.assert_array_equal(ds.y_true, y)
    np.testing.assert_allclose(ds.X, X)


def test_palm_tiny_dense_labels(tmp_path):
    X, S, y = _tiny_palm(tmp_path / "dense.mat", n=5, q=4, sparse=False)
    ds = load_palm(tmp_path / "dense.mat", name="custom")
    assert ds.name == "custom"
    assert not sp.issparse(ds.S) and ds.S.shape == (5, 4)
    np.testing.assert_array_equal(ds.S, S)
    np.testing.assert_array_equal(ds.y_true, y)


def test_palm_missing_keys_and_bad_target(tmp_path):
    scipy.io.savemat(tmp_path / "nokeys.mat", {"data": np.zeros((3, 2))})
    with pytest.raises(DataValidationError, match="partial_target"):
        load_palm(tmp_path / "nokeys.mat")
    S = np.array([[1, 1, 0], [0, 1, 1]], dtype=float).T  # q x n = 3 x 2
    T = np.array([[1, 1, 0], [0, 0, 0]], dtype=float).T  # row 0 has two ones, row 1 none
    scipy.io.savemat(tmp_path / "badtarget.mat", {"data": np.zeros((2, 2)), "partial_target": S, "target": T})
    with pytest.raises(DataValidationError, match=r"not one-hot"):
        load_palm(tmp_path / "badtarget.mat")


def test_splits_as_one_based_indices(tmp_path):
    n = 6
    train = np.empty((2, 1), dtype=object)
    test = np.empty((2, 1), dtype=object)
    train[0, 0], test[0, 0] = np.array([[1, 2]]), np.array([[3, 4, 5, 6]])
    train[1, 0], test[1, 0] = np.array([[6]]), np.array([[1, 2, 3, 4, 5]])
    _tiny_palm(tmp_path / "idx.mat", n=n, extra={"train_idx": train, "test_idx": test})
    splits = load_dataset(tmp_path / "idx.mat").meta["splits"]
    assert len(splits) == 2
    np.testing.assert_array_equal(splits[0][0], [1, 1, 0, 0, 0, 0])
    np.testing.assert_array_equal(splits[0][1], [0, 0, 1, 1, 1, 1])
    np.testing.assert_array_equal(splits[1][0], [0, 0, 0, 0, 0, 1])
    np.testing.assert_array_equal(splits[1][1], [1, 1, 1, 1, 1, 0])


# --------------------------------------------------------------------------- ARFF


@pytest.mark.data
@pytest.mark.parametrize("name", list(UCI))
def test_uci_arff(data_home, name):
    rel, n, d, q = UCI[name]
    path = _need(data_home, rel)
    ds = load_dataset(name, data_home=data_home)
    assert (ds.n_samples, ds.n_features, ds.n_classes) == (n, d, q)
    assert ds.S is None and not ds.is_partial
    # classes in declaration order: "1", "2", ..., str(q) (not string-sorted "1", "10", "2")
    assert list(ds.classes) == [str(i) for i in range(1, q + 1)]
    assert ds.y_true.shape == (n,)
    assert set(np.unique(ds.y_true)) <= set(range(q))
    assert ds.X.dtype == np.float64 and np.isfinite(ds.X).all()
    by_path = load_dataset(path)
    assert by_path.name == path.stem
    assert by_path.fingerprint() == ds.fingerprint()


@pytest.mark.data
def test_ecoli_first_rows_match_file(data_home):
    path = _need(data_home, UCI["ecoli"][0])
    data, meta = scipy.io.arff.loadarff(path)
    ds = load_arff(path)
    names = meta.names()
    np.testing.assert_allclose(ds.X[:5], np.array([[row[f] for f in names[:-1]] for row in data[:5]]))
    labels = [v.decode() for v in data[names[-1]]]
    np.testing.assert_array_equal(ds.classes[ds.y_true], labels)


def test_arff_declaration_order(tmp_path):
    path = tmp_path / "toy.arff"
    path.write_text(_TOY_ARFF)
    ds = load_arff(path)
    assert list(ds.classes) == ["zeta", "alpha", "mid"]
    np.testing.assert_array_equal(ds.y_true, [1, 0, 2, 1])
    np.testing.assert_array_equal(ds.X, [[1.5, 2], [3, 4], [5, 6], [7, 8]])
    assert ds.n_classes == 3 and ds.name == "toy"
    assert load_dataset(path).fingerprint() == ds.fingerprint()


def test_arff_missing_class_value(tmp_path):
    path = tmp_path / "missing.arff"
    path.write_text(_TOY_ARFF.replace("5,6,mid", "5,6,?"))
    with pytest.raises(DataValidationError, match=r"rows \[2\]"):
        load_arff(path)


def test_arff_non_numeric_feature(tmp_path):
    path = tmp_path / "nominal.arff"
    path.write_text(_TOY_ARFF.replace("@attribute b real", "@attribute b {x,y}")
                    .replace("1.5,2,", "1.5,x,").replace("3,4,", "3,y,")
                    .replace("5,6,", "5,x,").replace("7,8,", "7,y,"))
    with pytest.raises(DataValidationError, match="non-numeric"):
        load_arff(path)


# --------------------------------------------------------------------------- CSV / NPZ


def test_csv_with_header(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("f1,f2,label\n1.0,2.0,1\n3.0,4.0,0\n5.0,6.0,1\n")
    ds = load_csv(path)
    assert ds.n_samples == 3 and ds.n_features == 2
    np.testing.assert_array_equal(ds.X, [[1, 2], [3, 4], [5, 6]])
    np.testing.assert_array_equal(ds.classes[ds.y_true], [1, 0, 1])
    assert ds.name == "h" and ds.S is None


def test_csv_without_header_numeric(tmp_path):
    path = tmp_path / "n.csv"
    path.write_text("1,2,0\n3,4,1\n5,6,2\n")
    ds = load_dataset(path)
    assert ds.n_samples == 3  # first row not taken for a header
    np.testing.assert_array_equal(ds.X, [[1, 2], [3, 4], [5, 6]])
    np.testing.assert_array_equal(ds.y_true, [0, 1, 2])


def test_csv_without_header_string_labels_keeps_first_row(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("1.0,2.0,cat\n3.0,4.0,dog\n5.0,6.0,cat\n")
    ds = load_csv(path)
    assert ds.n_samples == 3
    assert list(ds.classes) == ["cat", "dog"]
    np.testing.assert_array_equal(ds.classes[ds.y_true], ["cat", "dog", "cat"])
    np.testing.assert_array_equal(ds.X[0], [1.0, 2.0])


def test_csv_numeric_labels_sort_numerically(tmp_path):
    path = tmp_path / "ten.csv"
    path.write_text("".join(f"{i}.0,{i % 3},{i}\n" for i in range(1, 12)))
    ds = load_csv(path)
    np.testing.assert_array_equal(ds.classes, np.arange(1, 12))
    np.testing.assert_array_equal(ds.y_true, np.arange(11))


def test_csv_label_column_delimiter_and_spaces(tmp_path):
    path = tmp_path / "semi.csv"
    path.write_text("b; 1.0; 2.0\na; 3.0; 4.0\n")
    ds = load_csv(path, label_column=0, delimiter=";")
    np.testing.assert_array_equal(ds.X, [[1, 2], [3, 4]])
    assert list(ds.classes) == ["a", "b"]
    np.testing.assert_array_equal(ds.y_true, [1, 0])


def test_csv_non_numeric_features(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("1.0,2.0,0\n3.0,oops,1\n")
    with pytest.raises(DataValidationError, match="non-numeric"):
        load_csv(path)


def test_npz_without_candidates(tmp_path):
    X = np.arange(12.0).reshape(4, 3)
    y = np.array([0, 2, 1, 2])
    np.savez(tmp_path / "exact.npz", X=X, y=y)
    ds = load_dataset(tmp_path / "exact.npz")
    assert ds.name == "exact" and ds.S is None
    np.testing.assert_array_equal(ds.X, X)
    np.testing.assert_array_equal(ds.y_true, y)
    assert ds.n_classes == 3


def test_npz_with_candidates_and_classes(tmp_path):
    X = np.arange(8.0).reshape(4, 2)
    S = np.array([[1, 1, 0], [0, 1, 0], [1, 0, 1], [0, 1, 1]], dtype=np.uint8)
    y = np.array([0, 1, 2, 1])
    np.savez(tmp_path / "pl.npz", X=X, S=S, y=y, classes=np.array(["a", "b", "c"]))
    ds = load_npz(tmp_path / "pl.npz", name="mine")
    assert ds.name == "mine" and ds.is_partial
    np.testing.assert_array_equal(ds.S, S.astype(bool))
    np.testing.assert_array_equal(ds.y_true, y)
    assert list(ds.classes) == ["a", "b", "c"]
    assert ds.average_candidates() == pytest.approx(7 / 4)
    ds.validate(require_true_in_candidates=True)


def test_npz_errors(tmp_path):
    np.savez(tmp_path / "nox.npz", features=np.zeros((2, 2)))
    with pytest.raises(DataValidationError, match="'X'"):
        load_npz(tmp_path / "nox.npz")
    np.savez(tmp_path / "badS.npz", X=np.zeros((3, 2)), S=np.ones((2, 2)))
    with pytest.raises(DataValidationError, match="X has 3 rows"):
        load_npz(tmp_path / "badS.npz")


# --------------------------------------------------------------------------- scikit-learn


@pytest.mark.parametrize(
    "name, n, d, q",
    [("iris", 150, 4, 3), ("wine", 178, 13, 3), ("breast_cancer", 569, 30, 2), ("digits", 1797, 64, 10)],
)
def test_sklearn_builtins(name, n, d, q):
    ds = load_dataset(name)
    assert ds.name == name
    assert (ds.n_samples, ds.n_features, ds.n_classes) == (n, d, q)
    assert ds.S is None
    assert ds.y_true.shape == (n,) and ds.y_true.max() == q - 1
    assert load_sklearn(name).fingerprint() == ds.fingerprint()


def test_sklearn_class_names():
    assert list(load_sklearn("iris").classes) == ["setosa", "versicolor", "virginica"]
    np.testing.assert_array_equal(load_sklearn("digits").classes, np.arange(10))
    with pytest.raises(DataValidationError, match="unknown scikit-learn"):
        load_sklearn("mnist")


# --------------------------------------------------------------------------- data home / names


@pytest.fixture
def tiny_home(tmp_path):
    """A data home with a subfolder and a differently-cased file name."""
    home = tmp_path / "home"
    (home / "palm").mkdir(parents=True)
    _, S, y = _tiny_palm(home / "palm" / "MSRCv2.mat", n=6, q=3)
    (home / "toy.ARFF").write_text(_TOY_ARFF)  # wrong name for any known set
    return home, S, y


def test_name_resolution_in_subfolder(tiny_home):
    home, S, y = tiny_home
    path = find_dataset_file("msrc-v2", data_home=home)
    assert path == home / "palm" / "MSRCv2.mat"
    ds = load_dataset("msrc-v2", data_home=home)
    assert ds.name == "msrc-v2"
    np.testing.assert_array_equal(ds.S.toarray().astype(bool), S)
    np.testing.assert_array_equal(ds.y_true, y)


def test_name_resolution_at_top_level_and_case(tmp_path):
    home = tmp_path / "flat"
    home.mkdir()
    _tiny_palm(home / "LOST.MAT")
    (home / "Ecoli.arff").write_text(_TOY_ARFF)
    assert find_dataset_file("lost", data_home=home) == home / "LOST.MAT"
    assert find_dataset_file("ecoli", data_home=home) == home / "Ecoli.arff"
    assert load_dataset("ecoli", data_home=home).name == "ecoli"


def test_only_immediate_subfolders_are_searched(tmp_path):
    home = tmp_path / "deep"
    (home / "a" / "b").mkdir(parents=True)
    _tiny_palm(home / "a" / "b" / "lost.mat")
    with pytest.raises(DatasetNotFoundError):
        find_dataset_file("lost", data_home=home)


def test_similar_names_are_not_confused(tmp_path):
    home = tmp_path / "similar"
    home.mkdir()
    _tiny_palm(home / "lost2.mat")
    _tiny_palm(home / "lost.txt.mat")
    (home / "lost.arff").write_text(_TOY_ARFF)
    with pytest.raises(DatasetNotFoundError):
        find_dataset_file("lost", data_home=home)


def test_data_home_env_variable(tiny_home, monkeypatch, tmp_path):
    home, S, _ = tiny_home
    monkeypatch.setenv("PLCORE_DATA_HOME", str(home))
    assert get_data_home() == home
    assert find_dataset_file("msrc-v2") == home / "palm" / "MSRCv2.mat"
    np.testing.assert_array_equal(load_dataset("msrc-v2").S.toarray().astype(bool), S)
    # an explicit argument wins over the environment
    other = tmp_path / "other"
    assert get_data_home(other) == other
    with pytest.raises(DatasetNotFoundError):
        load_dataset("msrc-v2", data_home=other)


def test_default_data_home(monkeypatch, tmp_path):
    monkeypatch.delenv("PLCORE_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert get_data_home() == tmp_path / "plcore_data"
    assert get_data_home("~/x") == tmp_path / "x"


def test_missing_palm_file_message(tiny_home):
    home, _, _ = tiny_home
    with pytest.raises(DatasetNotFoundError) as exc:
        load_dataset("lost", data_home=home)
    assert isinstance(exc.value, FileNotFoundError)
    msg = str(exc.value)
    assert "lost.mat" in msg  # expected file name
    assert str(home) in msg and str(home / "palm") in msg  # where it looked
    assert "PLCORE_DATA_HOME" in msg
    assert "palm.seu.edu.cn" in msg and PALM_URL in msg  # where to get a copy


def test_missing_uci_file_message_nonexistent_home(tmp_path):
    home = tmp_path / "nowhere"
    with pytest.raises(DatasetNotFoundError) as exc:
        load_dataset("semeion", data_home=home)
    msg = str(exc.value)
    assert "semeion.arff" in msg
    assert str(home) in msg and "does not exist" in msg
    assert UCI_URL in msg


def test_load_dataset_bad_names_and_paths(tmp_path):
    with pytest.raises(DatasetNotFoundError, match="does not exist"):
        load_dataset(tmp_path / "absent.mat")
    with pytest.raises(DataValidationError, match="not a known data set name"):
        load_dataset("no-such-set")
    with pytest.raises(DataValidationError, match="unknown data set name"):
        find_dataset_file("no-such-set", data_home=tmp_path)


# --------------------------------------------------------------------------- bad files: one line naming the file


def _one_line_naming(exc, path, *needles):
    msg = str(exc.value)
    assert "\n" not in msg and str(path) in msg, msg
    for needle in needles:
        assert needle in msg, f"{needle!r} not in {msg!r}"


def test_missing_file_by_path_names_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for loader in (load_palm, load_arff, load_csv, load_npz):
        with pytest.raises(DatasetNotFoundError) as exc:
            loader("absent.xyz")
        _one_line_naming(exc, "absent.xyz", "does not exist", f"relative to the current directory {tmp_path}")
    (tmp_path / "dir.mat").mkdir()
    with pytest.raises(DatasetNotFoundError, match="is not a file"):
        load_dataset(tmp_path / "dir.mat")


def test_unknown_name_lists_the_data_home(tiny_home, tmp_path):
    home, _, _ = tiny_home
    with pytest.raises(DataValidationError) as exc:
        load_dataset("lostt", data_home=home)
    _one_line_naming(exc, home, "not a known data set name", "holds palm/MSRCv2.mat, toy.ARFF")
    with pytest.raises(DataValidationError, match="does not exist"):
        find_dataset_file("lostt", data_home=tmp_path / "nowhere")
    with pytest.raises(DatasetNotFoundError) as exc:  # a known name absent from the data home
        load_dataset("lost", data_home=home)
    _one_line_naming(exc, home, "lost.mat", "holds palm/MSRCv2.mat")


def test_palm_truncated_or_corrupt(tmp_path):
    _tiny_palm(tmp_path / "good.mat")
    data = (tmp_path / "good.mat").read_bytes()
    for name, content in [("truncated.mat", data[: len(data) // 2]), ("garbage.mat", b"not a mat file" * 9),
                          ("empty.mat", b"")]:
        (tmp_path / name).write_bytes(content)
        with pytest.raises(DataValidationError) as exc:
            load_palm(tmp_path / name)
        _one_line_naming(exc, tmp_path / name, "not a readable MATLAB .mat file")


def test_palm_missing_keys_names_expected_and_found(tmp_path):
    path = tmp_path / "keys.mat"
    scipy.io.savemat(path, {"features": np.zeros((3, 2)), "partial_target": np.ones((2, 3))})
    with pytest.raises(DataValidationError) as exc:
        load_palm(path)
    _one_line_naming(exc, path, "missing key(s) data;", "partial_target (q x n)", "found: features, partial_target")


def test_palm_shape_mismatch_and_bad_values_name_file_and_rows(tmp_path):
    X, S, y = _tiny_palm(tmp_path / "ok.mat", n=6, q=3, sparse=False)
    T = np.eye(3)[y]
    train, test = np.empty((1, 1), dtype=object), np.empty((1, 1), dtype=object)
    train[0, 0], test[0, 0] = np.array([[1, 2, 9]]), np.array([[3]])  # 9 > n = 6 (1-based indices)
    cases = {
        "rows.mat": ({"data": X[:4], "partial_target": S.T.astype(float)}, "'partial_target' has shape (3, 6)"),
        "target.mat": ({"data": X, "partial_target": S.T.astype(float), "target": T[:5].T},
                       "'target' has shape (3, 5)"),
        "nonbin.mat": ({"data": X, "partial_target": np.where(np.arange(6) == 2, 3.0, S.T)},
                       "non-binary values in rows [2]"),
        "empty.mat": ({"data": X, "partial_target": np.where(np.arange(6) == 4, 0.0, S.T)},
                      "empty rows (no candidate label) at rows [4]"),
        "nan.mat": ({"data": np.where(np.arange(2) == 1, np.nan, X), "partial_target": S.T.astype(float)},
                    "NaN or inf values at rows [0, 1, 2, 3, 4, 5], columns [1]"),
        "cell.mat": ({"data": np.array([["a", "bc"]], dtype=object), "partial_target": S.T.astype(float)},
                     "'data' is not a numeric matrix"),
        "split.mat": ({"data": X, "partial_target": S.T.astype(float), "train_idx": train, "test_idx": test},
                      "'train_idx' split 0 holds indices outside 1..6"),
    }
    for name, (mat, needle) in cases.items():
        scipy.io.savemat(tmp_path / name, mat)
        with pytest.raises(DataValidationError) as exc:
            load_palm(tmp_path / name)
        _one_line_naming(exc, tmp_path / name, needle)


def test_npz_bad_files_name_file(tmp_path):
    X = np.arange(12.0).reshape(6, 2)
    S = np.eye(3, dtype=bool)[[0, 1, 2, 0, 1, 2]]
    np.savez(tmp_path / "objects.npz", X=X, S=np.array([None] * 6, dtype=object))
    with pytest.raises(DataValidationError) as exc:
        load_npz(tmp_path / "objects.npz")
    _one_line_naming(exc, tmp_path / "objects.npz", "array 'S' holds Python objects", "allow_pickle=False")
    (tmp_path / "text.npz").write_text("X,S\n1,2\n")
    with pytest.raises(DataValidationError) as exc:
        load_npz(tmp_path / "text.npz")
    _one_line_naming(exc, tmp_path / "text.npz", "not an NPZ archive")
    S_empty = S.copy()
    S_empty[[1, 5]] = False
    np.savez(tmp_path / "empty.npz", X=X, S=S_empty)
    with pytest.raises(DataValidationError) as exc:  # fails at load, not later at fit
        load_npz(tmp_path / "empty.npz")
    _one_line_naming(exc, tmp_path / "empty.npz", "empty rows", "rows [1, 5]")
    np.savez(tmp_path / "rows.npz", X=X, S=S[:4])
    with pytest.raises(DataValidationError) as exc:
        load_npz(tmp_path / "rows.npz")
    _one_line_naming(exc, tmp_path / "rows.npz", "X has 6 rows but the candidate matrix has 4 rows")
    np.savez(tmp_path / "one.npz", X=X, y=np.full(6, 2))
    with pytest.raises(DataValidationError) as exc:
        load_npz(tmp_path / "one.npz")
    _one_line_naming(exc, tmp_path / "one.npz", "only one class (2 in all 6 rows)", "at least 2 classes")


def test_csv_bad_files_name_file_rows_and_columns(tmp_path):
    cases = {
        "nan.csv": ("f1,f2,label\n1,2,a\n3,NaN,b\n,6,a\n7,8,b\n",
                    "missing or non-finite feature values (empty, NaN or inf) at rows [1, 2] (file lines [3, 4]), "
                    "columns ['f1', 'f2']"),
        "inf.csv": ("1,2,a\n3,inf,b\n", "non-finite feature values (empty, NaN or inf) at rows [1] (file lines [2]), "
                                        "columns [1]"),
        "text.csv": ("1,2,a\n3,oops,b\n", "non-numeric feature values at rows [1] (file lines [2]), columns [1] "
                                          "(e.g. 'oops' on line 2)"),
        "ragged.csv": ("f1,f2,label\n1,2,a\n3,4\n5,6,b\n", "expected 3, but line 3 has 2"),
        "nolabel.csv": ("1,2,a\n3,4,\n", "missing class labels at rows [1] (file lines [2])"),
        "one.csv": ("f1,label\n1,yes\n2,yes\n",
                    "the labels (column 'label') hold only one class ('yes' in all 2 rows)"),
        "empty.csv": ("\n\n", "the file is empty"),
        "header.csv": ("f1,f2,label\n", "no data rows after the header"),
        "onecol.csv": ("a\nb\n", "at least one feature column"),
        "latin1.csv": (None, "cannot read it as a CSV file (UnicodeDecodeError"),
    }
    cases = {name: (b"1,2,caf\xe9\n3,4,x\n" if text is None else text, needle) for name, (text, needle) in cases.items()}
    _assert_rejected(tmp_path, cases, load_csv)


def test_csv_comments_quotes_and_blank_lines(tmp_path):
    path = tmp_path / "ok.csv"
    path.write_text('# made by hand\nf1,f2,label\n\n1,2,"a, b"\n3,4,c\n')
    ds = load_csv(path)
    np.testing.assert_array_equal(ds.X, [[1, 2], [3, 4]])
    assert list(ds.classes) == ["a, b", "c"]


def test_arff_bad_files_name_file(tmp_path):
    header = "@relation r\n@attribute a numeric\n"
    cases = {
        "nocls.arff": (header + "@attribute b numeric\n@data\n1,2\n3,4\n",
                       "no class attribute: the last attribute 'b' is numeric"),
        "first.arff": ("@relation r\n@attribute class {x,y}\n@attribute a numeric\n@data\nx,1\ny,2\n",
                       "nominal attribute(s) ['class'] come earlier: put the class last"),
        "value.arff": (header + "@attribute class {x,y}\n@data\n1,x\n2,z\n",
                       "data row 1 (file line 6): 'z' is not one"),
        "fields.arff": (header + "@attribute class {x,y}\n@data\n1,x\n2,y,3\n",
                        "data row 1 (file line 6): 3 values for 2 attributes"),
        "number.arff": (header + "@attribute class {x,y}\n@data\n1,x\nfoo,y\n", "'foo' is not a number"),
        "junk.arff": ("this is no ARFF file\n", "not a valid ARFF file"),
        "one.arff": (header + "@attribute class {x,y}\n@data\n1,x\n2,x\n", "only one class ('x' in all 2 rows)"),
        "nan.arff": (header + "@attribute b numeric\n@attribute class {x,y}\n@data\n1,?,x\n2,3,y\n",
                     "NaN or inf values at rows [0], columns [1]"),
        "onlycls.arff": ("@relation r\n@attribute class {x,y}\n@data\nx\ny\n", "at least one feature attribute"),
    }
    _assert_rejected(tmp_path, cases, load_arff)


def _assert_rejected(tmp_path, cases, loader):
    """Each ``{file name: (text or bytes, needle)}`` fails to load in one line naming the file and ``needle``."""
    for name, (content, needle) in cases.items():
        path = tmp_path / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
        with pytest.raises(DataValidationError) as exc:
            loader(path)
        _one_line_naming(exc, path, needle)


def test_arff_numeric_class_named_class_is_accepted(tmp_path):
    path = tmp_path / "num.arff"
    path.write_text("@relation r\n@attribute a numeric\n@attribute Class numeric\n@data\n1,2\n3,10\n5,2\n")
    ds = load_arff(path)
    np.testing.assert_array_equal(ds.classes, [2, 10])
    np.testing.assert_array_equal(ds.y_true, [0, 1, 0])


# ----------------------------------------------------------------------------- IDX image sets
def _write_idx(path, array, gz=False):
    """An IDX file of unsigned bytes (the MNIST format), written literally."""
    import gzip
    import struct

    array = np.asarray(array, dtype=np.uint8)
    raw = bytes([0, 0, 0x08, array.ndim]) + struct.pack(f">{array.ndim}i", *array.shape) + array.tobytes()
    (gzip.open if gz else open)(path, "wb").write(raw)


def _idx_folder(tmp_path, gz=True, n_train=6, n_test=4):
    rng = np.random.RandomState(0)
    imgs = rng.randint(0, 256, size=(n_train + n_test, 3, 2))
    labels = np.arange(n_train + n_test) % 3
    suffix = ".gz" if gz else ""
    _write_idx(tmp_path / f"train-images-idx3-ubyte{suffix}", imgs[:n_train], gz)
    _write_idx(tmp_path / f"train-labels-idx1-ubyte{suffix}", labels[:n_train], gz)
    _write_idx(tmp_path / f"t10k-images-idx3-ubyte{suffix}", imgs[n_train:], gz)
    _write_idx(tmp_path / f"t10k-labels-idx1-ubyte{suffix}", labels[n_train:], gz)
    return imgs, labels


@pytest.mark.parametrize("gz", [True, False])
def test_idx_folder_loads_training_then_test_images_as_pixel_rows(tmp_path, gz):
    from plcore.datasets import load_dataset

    imgs, labels = _idx_folder(tmp_path, gz)
    ds = load_dataset(str(tmp_path))
    np.testing.assert_allclose(ds.X, imgs.reshape(10, 6) / 255.0)
    np.testing.assert_array_equal(ds.y_true, labels)
    assert ds.S is None and ds.meta["test_rows"].tolist() == [False] * 6 + [True] * 4
    assert ds.meta["image_shape"] == (3, 2)


def test_idx_errors_are_one_line_naming_the_file_or_the_package(tmp_path, monkeypatch):
    from plcore.datasets import load_dataset
    from plcore.datasets.catalog import IDX_DATASETS

    _idx_folder(tmp_path)
    (tmp_path / "t10k-labels-idx1-ubyte.gz").write_bytes(b"\x1f\x8b broken")
    with pytest.raises(DataValidationError, match=r"t10k-labels-idx1-ubyte\.gz: cannot read it as an IDX file") as err:
        load_dataset(str(tmp_path))
    assert "\n" not in str(err.value)
    _write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", np.zeros(3), gz=True)  # 3 labels for 4 images
    with pytest.raises(DataValidationError, match="4 images but 3 labels"):
        load_dataset(str(tmp_path))
    monkeypatch.setitem(IDX_DATASETS["fashion-mnist"], "system", str(tmp_path / "not-installed"))
    with pytest.raises(DatasetNotFoundError, match=r"install Debian's dataset-fashion-mnist \(apt-get install"):
        load_dataset("fashion-mnist", data_home=tmp_path / "empty")


@pytest.mark.skipif(not __import__("pathlib").Path("/usr/share/datasets/fashion-mnist").is_dir(),
                    reason="Debian's dataset-fashion-mnist is not installed (.ci/run installs it)")
def test_fashion_mnist_from_the_debian_package(tmp_path):
    from plcore.datasets import load_dataset

    ds = load_dataset("fashion-mnist", data_home=tmp_path)
    assert ds.X.shape == (70000, 784) and ds.n_classes == 10 and ds.classes[9] == "Ankle boot"
    assert ds.X.min() == 0.0 and ds.X.max() == 1.0 and ds.meta["test_rows"].sum() == 10000
    assert np.bincount(ds.y_true).tolist() == [7000] * 10


# ----------------------------------------------------------------------------- named and nominal columns (issue 55)
def test_a_header_names_the_feature_columns_a_model_reads(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("f1,f2,cands,f3\n1,2,a;b,3\n4,5,b,6\n7,8,a,9\n")
    ds = load_csv(path, candidate_column="cands")
    assert list(ds.meta["features"].feature_names_in_) == ["f1", "f2", "f3"]
    np.testing.assert_array_equal(ds.X, [[1, 2, 3], [4, 5, 6], [7, 8, 9]])
    headerless = tmp_path / "h.csv"
    headerless.write_text("1,2,a\n3,4,b\n")
    assert "features" not in load_csv(headerless).meta  # by position: nothing names the columns


def test_nominal_csv_columns_are_refused_or_one_hot_encoded(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("f1,kind,cands\n1,x,a;b\n2,y,b\n3,x,a\n4,?,b\n")
    with pytest.raises(DataValidationError) as exc:
        load_csv(path, candidate_column="cands")
    assert "columns ['kind']" in str(exc.value) and "dataset.categorical=onehot" in str(exc.value)
    with pytest.raises(DataValidationError, match=r"missing or non-finite .*file lines \[5\]\), columns \['kind'\]"):
        load_csv(path, candidate_column="cands", categorical="onehot")
    path.write_text("f1,kind,cands\n1,x,a;b\n2,y,b\n3,x,a\n4,y,b\n")
    ds = load_csv(path, candidate_column="cands", categorical="onehot")
    np.testing.assert_array_equal(ds.X, [[1, 1, 0], [2, 0, 1], [3, 1, 0], [4, 0, 1]])
    assert list(ds.meta["features"].get_feature_names_out()) == ["f1", "kind=x", "kind=y"]
    headerless = tmp_path / "h.csv"
    headerless.write_text("1,x,a\n2,y,b\n")
    with pytest.raises(DataValidationError, match="needs a header row"):
        load_csv(headerless, skip_header=0, categorical="onehot")
    with pytest.raises(DataValidationError, match="CSV, Parquet and ARFF files only"):
        load_dataset("digits", categorical="onehot")


@pytest.mark.data
def test_flare_nominal_attributes_one_hot_with_categorical_onehot(data_home):
    """``uci/flare.arff``: ``V1`` and ``V2`` are nominal; refused in one line by default."""
    path = data_home / "uci" / "flare.arff"
    with pytest.raises(DataValidationError) as exc:
        load_arff(path)
    assert "['V1', 'V2']" in str(exc.value) and "categorical=onehot" in str(exc.value)
    ds = load_arff(path, categorical="onehot")
    features = ds.meta["features"]
    assert features.nominal_ == ["V1", "V2"] and ds.n_features == len(features.get_feature_names_out())
    assert set(np.unique(ds.X[:, :len(features.categories_[0])].sum(axis=1))) == {1.0}  # one category per row


def test_onehot_refuses_a_repeated_feature_column_name(tmp_path):
    """Found in review: a repeated name left the nominal column as zeros."""
    path = tmp_path / "t.csv"
    path.write_text("f,f,kind,cands\n1,2,x,a;b\n3,4,y,b\n")
    with pytest.raises(DataValidationError, match=r"names the feature column\(s\) \['f'\] more than once"):
        load_csv(path, candidate_column="cands", categorical="onehot")
    path.write_text("f,f,cands\n1,2,a;b\n3,4,b\n")
    assert "features" not in load_csv(path, candidate_column="cands").meta  # numbers: read by position


def test_read_table_keeps_rows_whose_first_field_starts_with_a_hash(tmp_path):
    from plcore.datasets import read_table

    path = tmp_path / "new.csv"
    path.write_text("# new rows\nid,f1\n#12,0.5\n\n#13,1.5\n")
    frame = read_table(path)
    assert frame["id"].tolist() == ["#12", "#13"] and frame.index.tolist() == [3, 5] and frame.index.name == "line"


def test_an_id_column_is_the_data_sets_typed_row_ids_and_follows_its_rows(tmp_path):
    """Issue 70: ``id_column`` gives ``ds.ids`` (:class:`~plcore.data.RowIds`), no feature and no
    ``meta`` key; subsets and class coverage keep each row's id."""
    from plcore.data import RowIds

    path = tmp_path / "t.csv"
    path.write_text("rid,f1,f2,label\nr0,0.1,1,a\nr1,0.2,2,b\n,0.3,3,a\nr3,0.4,4,c\n")
    with pytest.warns(UserWarning, match=r"1 empty id\(s\) in column 'rid' at rows \[2\] \(file lines \[4\]\)"):
        ds = load_csv(path, id_column="rid")  # kept, as the file has it, and warned of (issue 71)
    assert ds.ids == RowIds("rid", ("r0", "r1", "", "r3")) and ds.X.shape == (4, 2)
    assert "ids" not in ds.meta and "id_column" not in ds.meta
    assert ds.subset([3, 0]).ids == RowIds("rid", ("r3", "r0"))
    assert ds.with_candidates(np.ones((4, 3), dtype=bool)).ids == ds.ids
    with pytest.warns(UserWarning, match="1 empty id"):
        assert load_dataset(path, id_column="rid", class_coverage=0.7).ids.values == ("r0", "r1", "")
    headerless = tmp_path / "n.csv"
    headerless.write_text("7,0.1,a\n8,0.2,b\n")
    assert load_csv(headerless, id_column=0).ids == RowIds("0", ("7", "8"))
    assert load_csv(headerless).ids is None
    with pytest.raises(DataValidationError, match="3 row ids for the 2 rows of X"):
        PLDataset(np.zeros((2, 1)), ids=RowIds.read("rid", [1, 2, 3]))


def test_the_table_options_defaults_are_written_once():
    """Issue 70: the defaults of load_dataset's, load_csv's and load_parquet's table options, and of
    the ``file`` data set's config node, are TableOptions' own."""
    import dataclasses
    import inspect

    from plcore.datasets import TableOptions, load_parquet
    from plcore.registry import get_registry

    defaults = {f.name: f.default for f in dataclasses.fields(TableOptions)}
    for fn in (load_dataset, load_csv, load_parquet):
        params = inspect.signature(fn).parameters
        assert {k: params[k].default for k in defaults} == defaults, fn.__name__
    node = get_registry().get("dataset", "file").config()
    assert {k: node[k] for k in defaults} == defaults
    assert TableOptions(separator="|", id_column="rid").given() == ["separator", "id_column"]


def _read_tsv(path, *, name=None, noisy=False, options=None):
    return load_csv(path, name, delimiter="\t", noisy=noisy)


def test_a_new_format_is_one_reader_and_one_entry_of_the_suffix_table(tmp_path, monkeypatch):
    """load_dataset dispatches through FORMATS, and the messages listing the suffixes are written
    from it (docs/writing_plugins.md, "Adding a data format")."""
    from plcore.datasets import formats

    path = tmp_path / "t.tsv"
    path.write_text("f1\tf2\tlabel\n0.1\t1\ta\n0.2\t2\tb\n")
    with pytest.raises(DataValidationError, match=r"nor a path ending in \.mat, \.arff, \.csv, \.parquet or \.npz "):
        load_dataset(path)
    with pytest.raises(DataValidationError, match="label_column apply to CSV and Parquet files only"):
        load_dataset(tmp_path / "t.npz", label_column="y")
    monkeypatch.setattr(formats, "FORMATS", (*formats.FORMATS, formats.Format(".tsv", "TSV", f"{__name__}:_read_tsv")))
    ds = load_dataset(path)
    assert ds.X.tolist() == [[0.1, 1.0], [0.2, 2.0]] and ds.classes.tolist() == ["a", "b"]
    with pytest.raises(DataValidationError, match=r"ending in \.mat, \.arff, \.csv, \.parquet, \.npz or \.tsv "):
        load_dataset(tmp_path / "t.txt")
