"""Tests of plcore.data: validation helpers and the PLDataset container."""

import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import DataConversionWarning

from plcore.data import (
    PLDataset,
    candidates_from_target,
    check_candidates,
    check_features,
    check_partial_labels,
    labels_to_candidates,
)
from plcore.exceptions import DataValidationError


def _toy(n=8, d=3, q=4, seed=0):
    """Features, candidate sets (true label always inside) and truth."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = rng.integers(0, q, size=n)
    S = rng.random((n, q)) < 0.4
    S[np.arange(n), y] = True
    return X, S, y


# --------------------------------------------------------------------------- errors


def test_validation_error_is_value_error():
    assert issubclass(DataValidationError, ValueError)


@pytest.mark.parametrize("sparse", [False, True])
def test_empty_candidate_rows_named(sparse):
    X, S, _ = _toy()
    S[[2, 5]] = False
    S_in = sp.csr_matrix(S) if sparse else S
    with pytest.raises(ValueError, match=r"empty rows.*\[2, 5\]") as exc:
        check_partial_labels(X, S_in)
    assert isinstance(exc.value, DataValidationError)
    assert "candidate" in str(exc.value)
    with pytest.raises(DataValidationError, match=r"empty.*\[2, 5\]"):
        check_candidates(S_in)


def test_empty_rows_allowed_on_request_and_not_dropped():
    X, S, _ = _toy()
    S[3] = False
    X2, S2, _ = check_partial_labels(X, S, allow_empty_rows=True)
    assert X2.shape[0] == S2.shape[0] == 8
    assert not S2[3].any()
    np.testing.assert_array_equal(S2, S)


def test_many_offending_rows_are_truncated_with_total():
    X = np.zeros((30, 2))
    S = np.zeros((30, 3), dtype=bool)
    S[::2, 0] = True  # odd rows (15 of them) are empty
    with pytest.raises(DataValidationError) as exc:
        check_partial_labels(X, S)
    msg = str(exc.value)
    assert "[1, 3, 5, 7, 9, 11, 13, 15, 17, 19, ... (15 in total)]" in msg
    assert "21" not in msg


@pytest.mark.parametrize("sparse", [False, True])
def test_row_count_mismatch(sparse):
    X, S, _ = _toy(n=8)
    S_in = sp.csr_matrix(S[:6]) if sparse else S[:6]
    with pytest.raises(ValueError, match=r"X has 8 rows but the candidate matrix has 6 rows"):
        check_partial_labels(X, S_in)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nonfinite_features_name_rows_and_columns(bad):
    X, S, _ = _toy(n=8, d=4)
    X[1, 3] = bad
    X[6, 0] = bad
    X[6, 3] = bad
    with pytest.raises(ValueError) as exc:
        check_partial_labels(X, S)
    msg = str(exc.value)
    assert isinstance(exc.value, DataValidationError)
    assert "NaN or inf" in msg
    assert "rows [1, 6]" in msg
    assert "columns [0, 3]" in msg


def test_features_other_errors():
    with pytest.raises(DataValidationError, match="2-D"):
        check_features(np.arange(5.0))
    with pytest.raises(DataValidationError, match="0 samples"):
        check_features(np.zeros((0, 3)))
    with pytest.raises(DataValidationError, match="sparse"):
        check_features(sp.csr_matrix(np.eye(3)))
    X = check_features([[1, 2], [3, 4]])
    assert X.dtype == np.float64 and X.shape == (2, 2)


@pytest.mark.parametrize("sparse", [False, True])
def test_fewer_than_two_classes(sparse):
    X = np.zeros((4, 2))
    S = np.ones((4, 1), dtype=int)
    S_in = sp.csr_matrix(S) if sparse else S
    with pytest.raises(ValueError, match=r"at least 2 classes.*q=1"):
        check_partial_labels(X, S_in)


def test_one_class_labels_rejected():
    with pytest.raises(DataValidationError, match=r"only one class \(all 3 labels are 7\).*at least 2 classes"):
        candidates_from_target(np.array([7, 7, 7]))
    with pytest.raises(DataValidationError, match=r"^y holds only one class \(all 2 labels are True\)"):
        candidates_from_target(np.array([True, True]))


def test_non_binary_dense_names_rows_and_columns():
    X = np.zeros((5, 2))
    S = np.array([[1, 0, 0], [1, 2, 0], [0, 1, 1], [0, 1, 0.5], [1, 1, 1]])
    with pytest.raises(ValueError) as exc:
        check_partial_labels(X, S)
    msg = str(exc.value)
    assert "binary" in msg
    assert "rows [1, 3]" in msg
    assert "columns [1, 2]" in msg


def test_non_binary_sparse_names_rows_and_columns():
    S = sp.csr_matrix(np.array([[1, 0, 0], [1, 0, 0], [0, 1, 1], [0, -1, 0], [3, 0, 1]]))
    with pytest.raises(ValueError) as exc:
        check_partial_labels(np.zeros((5, 2)), S)
    msg = str(exc.value)
    assert isinstance(exc.value, DataValidationError)
    assert "binary" in msg
    assert "rows [3, 4]" in msg
    assert "columns [0, 1]" in msg


def test_sparse_explicit_zeros_are_not_non_binary():
    S = sp.csr_matrix((np.array([1.0, 0.0, 1.0]), np.array([0, 1, 1]), np.array([0, 2, 3])), shape=(2, 2))
    out = check_candidates(S)
    np.testing.assert_array_equal(out.toarray(), [[1, 0], [0, 1]])
    assert out.nnz == 2


def test_non_numeric_candidates_rejected():
    with pytest.raises(DataValidationError, match="dtype"):
        check_candidates(np.array([["a", "b"], ["c", "d"]]))
    with pytest.raises(DataValidationError, match="2-D"):
        check_candidates(np.array([1, 0, 1]))


@pytest.mark.parametrize("sparse", [False, True])
def test_true_label_outside_candidates(sparse):
    X, S, y = _toy(n=10, q=4)
    S[4] = False
    S[4, (y[4] + 1) % 4] = True
    S[7, y[7]] = False
    if not S[7].any():
        S[7, (y[7] + 1) % 4] = True
    S_in = sp.csr_matrix(S) if sparse else S
    with pytest.raises(ValueError, match=r"true label is outside its candidate set at rows \[4, 7\]"):
        check_partial_labels(X, S_in, y, require_true_in_candidates=True)
    # without the requirement, the same data is accepted and unchanged
    X2, S2, y2 = check_partial_labels(X, S_in, y)
    np.testing.assert_array_equal(y2, y)


def test_true_labels_out_of_range_and_shape():
    X, S, y = _toy(n=6, q=4)
    y = y.copy()
    y[2] = 4
    y[5] = -1
    with pytest.raises(DataValidationError, match=r"outside 0..3 at rows \[2, 5\]"):
        check_partial_labels(X, S, y)
    with pytest.raises(DataValidationError, match="one label per row"):
        check_partial_labels(X, S, y[:4])
    with pytest.raises(DataValidationError, match="integer labels"):
        check_partial_labels(X, S, np.full(6, 0.5))
    with pytest.raises(DataValidationError, match=r"negative labels at rows \[5\]"):
        check_partial_labels(X, None, y)
    # integral floats are accepted as integer labels
    _, _, y_ok = check_partial_labels(X, S, np.zeros(6) + 1.0)
    assert y_ok.dtype.kind == "i"


def test_true_label_inside_is_accepted():
    X, S, y = _toy(n=20, q=5)
    for S_in in (S, sp.csr_matrix(S)):
        X2, S2, y2 = check_partial_labels(X, S_in, y, require_true_in_candidates=True)
        np.testing.assert_array_equal(y2, y)


# --------------------------------------------------------------------------- conversions


def test_rows_never_dropped_or_reordered():
    X, S, y = _toy(n=12, q=4, seed=3)
    X2, S2, y2 = check_partial_labels(X, S.astype(int), y)
    np.testing.assert_array_equal(X2, X)
    np.testing.assert_array_equal(S2, S)
    np.testing.assert_array_equal(y2, y)
    assert S2.dtype == bool
    assert X2.dtype == np.float64


def test_sparse_input_stays_sparse():
    X, S, y = _toy(n=12, q=4)
    for fmt in (sp.csr_matrix, sp.csc_matrix, sp.coo_matrix, sp.lil_matrix):
        _, S2, _ = check_partial_labels(X, fmt(S.astype(float)), y)
        assert sp.issparse(S2) and S2.format == "csr"
        np.testing.assert_array_equal(S2.toarray().astype(bool), S)
    out, classes, exact = candidates_from_target(sp.csc_matrix(S.astype(int)), n_samples=12)
    assert sp.issparse(out) and not exact
    np.testing.assert_array_equal(classes, np.arange(4))


def test_check_candidates_does_not_modify_input():
    S = sp.csr_matrix(np.array([[1.0, 0.0], [1.0, 1.0]]))
    S.data[:] = 1.0
    out = check_candidates(S)
    out.data[:] = 0.0
    assert S.data.tolist() == [1.0, 1.0, 1.0]


def test_labels_become_singleton_candidates_with_sorted_classes():
    y = np.array([5, 2, 9, 2, 5])
    S, classes, exact = candidates_from_target(y)
    assert exact
    np.testing.assert_array_equal(classes, [2, 5, 9])
    assert S.dtype == bool and S.shape == (5, 3)
    np.testing.assert_array_equal(S.sum(axis=1), np.ones(5))
    np.testing.assert_array_equal(classes[S.argmax(axis=1)], y)


def test_string_labels_become_candidates():
    y = np.array(["cat", "ant", "dog", "cat"])
    S, classes, exact = candidates_from_target(y, n_samples=4)
    assert exact
    assert list(classes) == ["ant", "cat", "dog"]
    np.testing.assert_array_equal(classes[S.argmax(axis=1)], y)


def test_candidate_matrix_target_is_not_exact():
    _, S, _ = _toy(n=6, q=3)
    out, classes, exact = candidates_from_target(S.astype(float), n_samples=6)
    assert not exact
    np.testing.assert_array_equal(out, S)
    np.testing.assert_array_equal(classes, [0, 1, 2])


def test_column_vector_labels_warn():
    y = np.array([[1], [0], [1], [2]])
    with pytest.warns(DataConversionWarning):
        S, classes, exact = candidates_from_target(y)
    assert exact
    np.testing.assert_array_equal(classes, [0, 1, 2])
    np.testing.assert_array_equal(S.argmax(axis=1), [1, 0, 1, 2])


def test_1d_labels_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        candidates_from_target(np.array([0, 1, 1]))


def test_candidates_from_target_errors():
    with pytest.raises(DataValidationError, match="y is None"):
        candidates_from_target(None)
    with pytest.raises(DataValidationError, match=r"X has 5 rows but y has 3 labels"):
        candidates_from_target(np.array([0, 1, 0]), n_samples=5)
    with pytest.raises(ValueError):
        candidates_from_target(np.array([0.1, 0.7, 2.5]))  # continuous targets
    with pytest.raises(DataValidationError, match=r"empty rows.*\[1\]"):
        candidates_from_target(np.array([[1, 0], [0, 0]]))


def test_labels_to_candidates_with_given_classes():
    S, classes = labels_to_candidates(np.array([3, 1, 3]), classes=[1, 2, 3])
    np.testing.assert_array_equal(S, [[0, 0, 1], [1, 0, 0], [0, 0, 1]])
    np.testing.assert_array_equal(classes, [1, 2, 3])
    with pytest.raises(DataValidationError, match=r"not among classes.*rows \[1\]"):
        labels_to_candidates(np.array([1, 4, 2]), classes=[1, 2, 3])


def test_labels_to_candidates_respects_unsorted_classes():
    # declaration order (e.g. ARFF) need not be sorted; columns follow the given classes
    S, classes = labels_to_candidates(np.array(["b", "a", "c", "b"]), classes=["b", "c", "a"])
    np.testing.assert_array_equal(classes, ["b", "c", "a"])
    np.testing.assert_array_equal(S.argmax(axis=1), [0, 2, 1, 0])
    assert S.sum() == 4


# --------------------------------------------------------------------------- PLDataset


def test_pldataset_basic_properties():
    X, S, y = _toy(n=10, d=3, q=4)
    ds = PLDataset(X, S, y, name="toy")
    assert (ds.n_samples, ds.n_features, ds.n_classes) == (10, 3, 4)
    assert ds.is_partial
    np.testing.assert_array_equal(ds.classes, np.arange(4))
    assert ds.average_candidates() == pytest.approx(S.sum() / 10)
    assert "toy" in repr(ds) and "q=4" in repr(ds)
    assert ds.validate(require_true_in_candidates=True) is ds


def test_pldataset_without_candidates():
    X, _, y = _toy(n=10, q=4)
    ds = PLDataset(X, None, y)
    assert not ds.is_partial
    assert np.isnan(ds.average_candidates())
    assert ds.n_classes == y.max() + 1
    assert PLDataset(X).n_classes == 0


def test_pldataset_validates_input():
    X, S, y = _toy(n=10, q=4)
    Xbad = X.copy()
    Xbad[2, 1] = np.nan
    with pytest.raises(DataValidationError, match=r"rows \[2\], columns \[1\]"):
        PLDataset(Xbad, S, y)
    with pytest.raises(DataValidationError, match="X has 10 rows"):
        PLDataset(X, S[:9], y)
    # empty rows are tolerated in the container but rejected by validate()
    S2 = S.copy()
    S2[0] = False
    ds = PLDataset(X, S2, y)
    assert ds.n_samples == 10
    with pytest.raises(DataValidationError, match=r"empty rows.*\[0\]"):
        ds.validate()
    S3 = S.copy()
    S3[1] = False
    S3[1, (y[1] + 1) % 4] = True
    with pytest.raises(DataValidationError, match=r"outside its candidate set at rows \[1\]"):
        PLDataset(X, S3, y).validate(require_true_in_candidates=True)


def test_pldataset_keeps_sparse():
    X, S, y = _toy(n=10, q=4)
    ds = PLDataset(X, sp.csc_matrix(S.astype(float)), y)
    assert sp.issparse(ds.S)
    assert ds.average_candidates() == pytest.approx(S.sum() / 10)


@pytest.mark.parametrize("sparse", [False, True])
def test_pldataset_subset(sparse):
    X, S, y = _toy(n=10, q=4)
    ds = PLDataset(X, sp.csr_matrix(S) if sparse else S, y, classes=np.array(list("abcd")),
                   name="toy", meta={"splits": [1, 2], "source": "here"})
    idx = np.array([7, 2, 5])
    sub = ds.subset(idx)
    np.testing.assert_array_equal(sub.X, X[idx])
    dense = sub.S.toarray().astype(bool) if sparse else sub.S
    np.testing.assert_array_equal(dense, S[idx])
    assert sp.issparse(sub.S) == sparse
    np.testing.assert_array_equal(sub.y_true, y[idx])
    np.testing.assert_array_equal(sub.classes, list("abcd"))
    assert sub.name == "toy"
    assert "splits" not in sub.meta and sub.meta["source"] == "here"
    assert "splits" in ds.meta  # original untouched
    mask = np.zeros(10, dtype=bool)
    mask[[1, 4, 8]] = True
    sub2 = ds.subset(mask)
    np.testing.assert_array_equal(sub2.X, X[[1, 4, 8]])
    np.testing.assert_array_equal(sub2.y_true, y[[1, 4, 8]])


def test_pldataset_with_candidates():
    X, S, y = _toy(n=10, q=4)
    ds = PLDataset(X, None, y, classes=np.arange(4), name="exact", meta={"source": "s"})
    pl = ds.with_candidates(S, name="partial")
    assert pl is not ds
    assert ds.S is None and pl.is_partial
    assert pl.name == "partial" and ds.name == "exact"
    np.testing.assert_array_equal(pl.X, X)
    np.testing.assert_array_equal(pl.S, S)
    np.testing.assert_array_equal(pl.y_true, y)
    assert pl.meta == ds.meta and pl.meta is not ds.meta
    assert ds.with_candidates(S).name == "exact"
    with pytest.raises(DataValidationError, match="X has 10 rows"):
        ds.with_candidates(S[:5])


def test_pldataset_fingerprint():
    X, S, y = _toy(n=10, q=4)
    ds = PLDataset(X, S, y)
    fp = ds.fingerprint()
    assert isinstance(fp, str) and re.fullmatch(r"[0-9a-f]{16}", fp)
    assert PLDataset(X.copy(), S.copy(), y.copy(), name="other").fingerprint() == fp
    # dense and sparse candidate matrices with the same content agree
    assert PLDataset(X, sp.csr_matrix(S), y).fingerprint() == fp
    X2 = X.copy()
    X2[0, 0] += 1e-9
    assert PLDataset(X2, S, y).fingerprint() != fp
    S2 = S.copy()
    S2[0] = True
    assert PLDataset(X, S2, y).fingerprint() != fp
    y2 = y.copy()
    y2[0] = (y2[0] + 1) % 4
    assert PLDataset(X, S, y2).fingerprint() != fp
    assert PLDataset(X, None, y).fingerprint() != fp
    assert ds.subset(np.arange(10)[::-1]).fingerprint() != fp


def test_pldataset_average_candidates_values():
    X = np.zeros((4, 2))
    S = np.array([[1, 0, 0], [1, 1, 0], [1, 1, 1], [0, 1, 1]])
    assert PLDataset(X, S).average_candidates() == pytest.approx(2.0)
    assert PLDataset(X, sp.csr_matrix(S)).average_candidates() == pytest.approx(2.0)
    assert PLDataset(X, S[:, :2].copy()[[0, 1, 3, 2]]).average_candidates() == pytest.approx(1.5)


def test_frequent_classes_keeps_the_classes_that_cover_the_share_and_their_rows():
    # counts per class 0..4: 5, 1, 10, 0, 4 (20 rows); 99% needs 10 + 5 + 4 + 1 -> all four with rows
    y = np.repeat([0, 1, 2, 4], [5, 1, 10, 4])
    S = np.eye(5, dtype=bool)[y]
    S[:, 3] = True                                   # an empty class that appears in every candidate set
    ds = PLDataset(np.arange(20.0)[:, None], S, y, classes=np.array(list("abcde")))
    kept = ds.frequent_classes(0.99)
    assert list(kept.classes) == ["a", "b", "c", "e"] and kept.meta["classes_left_out"] == ["3"]
    # 90% of 20 = 18: 10 + 5 + 4 = 19 -> class 1 (one row) leaves with its row; column order kept
    kept = ds.frequent_classes(0.9)
    assert list(kept.classes) == ["a", "c", "e"] and kept.n_samples == 19
    np.testing.assert_array_equal(kept.y_true, np.repeat([0, 1, 2], [5, 10, 4]))
    np.testing.assert_array_equal(kept.X[:, 0], np.delete(np.arange(20.0), 5))
    assert kept.S.shape == (19, 3) and kept.S[np.arange(19), kept.y_true].all()
    # exactly 75% = 15 of 20: classes 2 and 0 suffice
    assert list(ds.frequent_classes(0.75).classes) == ["a", "c"]
    with pytest.raises(DataValidationError, match="class_coverage"):
        ds.frequent_classes(0)
