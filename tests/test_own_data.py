"""A user's own data (issue 42, "Your own data"): candidate sets from CSV and Parquet files by
explicit options, true labels outside the candidate sets refused unless declared noisy, the
audit of a run's candidate sets, and class names learned from a candidate DataFrame.

The command-line cases that must fail in one line are in tests/test_errors.py.
"""

import numpy as np
import pandas as pd
import pytest
import scipy.io
import scipy.sparse as sp
from sklearn.exceptions import DataConversionWarning

from plcore.data import CandidateAudit, PLDataset, candidates_from_target
from plcore.datasets import PALM_DATASETS, NoisyBags, load_csv, load_dataset, load_npz, load_palm, load_parquet
from plcore.datasets.loaders import find_dataset_file
from plcore.exceptions import DataValidationError
from plcore.learners import PlKnnLearner

#: 8 rows, 2 features, candidate sets over a, b, c, d; the true label of every row is in its set
ROWS = [
    ("0.1", "0.2", "b;d", "b"), ("1.1", "1.0", "a;b;c", "a"), ("0.3", "0.1", "d", "d"),
    ("2.0", "2.1", "c; a", "c"), ("0.2", "0.0", "b", "b"), ("1.3", "1.2", "a;d", "a"),
    ("2.2", "1.9", "c", "c"), ("0.5", "0.6", "d;b", "d"),
]
SETS = np.array([[0, 1, 0, 1], [1, 1, 1, 0], [0, 0, 0, 1], [1, 0, 1, 0], [0, 1, 0, 0], [1, 0, 0, 1], [0, 0, 1, 0],
                 [0, 1, 0, 1]], dtype=bool)
TRUTH = np.array([1, 0, 3, 2, 1, 0, 2, 3])


def _write_csv(path, rows=ROWS, header="f1,f2,cands,truth"):
    path.write_text(header + "\n" + "".join(",".join(r) + "\n" for r in rows))
    return path


def _indicator_csv(path, truth=True):
    head = "f1,f2,cand_a,cand_b,cand_c,cand_d" + (",truth" if truth else "")
    body = "".join(f"{r[0]},{r[1]},{','.join(str(int(v)) for v in s)}" + (f",{r[3]}" if truth else "") + "\n"
                   for r, s in zip(ROWS, SETS))
    path.write_text(head + "\n" + body)
    return path


def _one_line(exc, *needles):
    msg = str(exc.value)
    assert "\n" not in msg, msg
    for needle in needles:
        assert needle in msg, f"{needle!r} not in {msg!r}"


# ----------------------------------------------------------------------------- CSV and Parquet
def test_csv_candidate_column_gives_the_sets_the_classes_and_the_truth(tmp_path):
    """Issue 42: a column of sets (``b;d``) was read as one class per distinct string (15 on a
    4-class file); named explicitly, it gives the 4 classes and the candidate matrix."""
    ds = load_csv(_write_csv(tmp_path / "sets.csv"), candidate_column="cands", label_column="truth")
    assert ds.classes.tolist() == ["a", "b", "c", "d"]
    np.testing.assert_array_equal(ds.S, SETS)
    np.testing.assert_array_equal(ds.y_true, TRUTH)
    np.testing.assert_array_equal(ds.X, [[float(r[0]), float(r[1])] for r in ROWS])
    _write_csv(tmp_path / "no_truth.csv", [r[:3] for r in ROWS], "f1,f2,cands")
    no_truth = load_dataset(tmp_path / "no_truth.csv", candidate_column="cands")  # no label_column: no truth
    assert no_truth.y_true is None and no_truth.n_features == 2
    np.testing.assert_array_equal(no_truth.S, SETS)


def test_sets_read_as_exact_labels_are_pointed_out(tmp_path):
    """Without the option the column is read as exact labels, as before (nothing is guessed), and
    a warning says that its values look like candidate sets and which option reads them so."""
    path = _write_csv(tmp_path / "sets.csv", [r[:3] for r in ROWS], "f1,f2,cands")
    with pytest.warns(UserWarning, match=r"5 of the 8 classes read from the label column hold ';' "
                                         r"\(e.g. 'a;b;c'\).*dataset.candidate_column=NAME"):
        ds = load_csv(path)
    assert ds.S is None and ds.n_classes == 8


def test_csv_separator_and_numeric_labels(tmp_path):
    rows = [("0.1", "3|10", "10"), ("0.2", "2 | 3", "2"), ("0.3", "10", "10")]
    ds = load_csv(_write_csv(tmp_path / "num.csv", rows, "f,cands,truth"), candidate_column=1, label_column=-1,
                  separator="|")
    assert ds.classes.tolist() == [2, 3, 10]  # numbers sort numerically
    np.testing.assert_array_equal(ds.S, [[0, 1, 1], [1, 1, 0], [0, 0, 1]])
    np.testing.assert_array_equal(ds.y_true, [2, 0, 2])


def test_indicator_columns_by_list_and_by_pattern(tmp_path):
    path = _indicator_csv(tmp_path / "ind.csv")
    by_pattern = load_dataset(path, indicator_columns="cand_*", label_column="truth")
    plain = _indicator_csv(tmp_path / "plain.csv", truth=False)
    by_list = load_dataset(plain, indicator_columns=["cand_a", "cand_b", "cand_c", "cand_d"])
    assert by_pattern.classes.tolist() == ["a", "b", "c", "d"]
    assert by_list.classes.tolist() == ["cand_a", "cand_b", "cand_c", "cand_d"]
    for ds in (by_pattern, by_list):
        np.testing.assert_array_equal(ds.S, SETS)
        assert ds.n_features == 2
    np.testing.assert_array_equal(by_pattern.y_true, TRUTH)
    with pytest.raises(DataValidationError, match="true labels not among the indicator columns' classes"):
        load_dataset(path, indicator_columns=["cand_a", "cand_b", "cand_c", "cand_d"], label_column="truth")
    swapped = load_dataset(plain, indicator_columns=["cand_d", "cand_a", "cand_b", "cand_c"])
    np.testing.assert_array_equal(swapped.S, SETS[:, [3, 0, 1, 2]])


def test_parquet_reads_as_the_csv_and_takes_list_columns(tmp_path):
    csv_ds = load_csv(_write_csv(tmp_path / "sets.csv"), candidate_column="cands", label_column="truth")
    frame = pd.read_csv(tmp_path / "sets.csv")
    frame.to_parquet(tmp_path / "sets.parquet")
    pq = load_dataset(tmp_path / "sets.parquet", candidate_column="cands", label_column="truth")
    assert pq.fingerprint() == csv_ds.fingerprint() and pq.classes.tolist() == csv_ds.classes.tolist()
    frame["cands"] = [[t.strip() for t in c.split(";")] for c in frame["cands"]]  # a list<string> column
    frame.to_parquet(tmp_path / "lists.parquet")
    assert load_parquet(tmp_path / "lists.parquet", candidate_column="cands",
                        label_column="truth").fingerprint() == csv_ds.fingerprint()
    exact = frame.drop(columns=["cands"])
    exact.to_parquet(tmp_path / "exact.parquet")
    ds = load_dataset(tmp_path / "exact.parquet")  # exact labels in the last column, as a CSV file
    assert ds.S is None and ds.classes.tolist() == ["a", "b", "c", "d"]
    np.testing.assert_array_equal(ds.y_true, TRUTH)


def test_a_parquet_files_ids_and_labels_alike_are_warned_of_or_refused_when_strict(tmp_path):
    """Issue 71, item 6, in a Parquet file (its cells keep spaces; a missing id is None): one
    warning each kind, a refusal with ``strict``; a file without them warns nothing."""
    import warnings

    frame = pd.read_csv(_write_csv(tmp_path / "sets.csv")).drop(columns=["cands"])
    frame.insert(0, "rid", [f"r{i}" for i in range(8)])
    frame.to_parquet(tmp_path / "fine.parquet")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        load_dataset(tmp_path / "fine.parquet", id_column="rid", strict=True)
    assert seen == []
    frame.loc[[2, 5], "rid"] = None
    frame.loc[[1, 3], "truth"] = [" b", "B"]
    frame.to_parquet(tmp_path / "x.parquet")
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        ds = load_dataset(tmp_path / "x.parquet", id_column="rid")
    assert [str(w.message) for w in seen] == [
        f"{tmp_path / 'x.parquet'}: 2 empty id(s) in column 'rid' at rows [2, 5]; what is written per row names "
        "them by no id",
        f"{tmp_path / 'x.parquet'}: 3 class labels differ only in case or surrounding spaces (' b', 'B', 'b'), "
        "each read as a class of its own; write each class one way"]
    assert ds.n_classes == 6
    with pytest.raises(DataValidationError) as exc:
        load_dataset(tmp_path / "x.parquet", id_column="rid", strict=True)
    _one_line(exc, "2 empty id(s)", "(refused: strict=true)")
    frame.drop(columns=["rid"]).to_parquet(tmp_path / "labels.parquet")
    with pytest.raises(DataValidationError) as exc:
        load_dataset(tmp_path / "labels.parquet", strict=True)  # no ids: the labels alone
    _one_line(exc, "3 class labels differ only in case")


@pytest.mark.parametrize("options, needles", [
    ({"candidate_column": "labels"}, ["candidate_column='labels': no such column", "'cands'"]),
    ({"candidate_column": "cands", "indicator_columns": "cand_*"}, ["not both"]),
    ({"indicator_columns": "cand_"}, ["pattern with one '*'"]),
    ({"indicator_columns": "x_*"}, ["no column matches indicator_columns='x_*'"]),
    ({"candidate_column": "cands", "label_column": "cands"}, ["overlap"]),
])
def test_bad_column_options_are_one_line_naming_the_file(tmp_path, options, needles):
    path = _write_csv(tmp_path / "sets.csv")
    with pytest.raises(DataValidationError) as exc:
        load_csv(path, **options)
    _one_line(exc, str(path), *needles)


def test_bad_candidate_cells_name_rows_lines_and_columns(tmp_path):
    rows = list(ROWS)
    rows[2] = ("0.3", "0.1", "", "d")
    path = _write_csv(tmp_path / "empty.csv", rows)
    with pytest.raises(DataValidationError) as exc:
        load_csv(path, candidate_column="cands", label_column="truth")
    _one_line(exc, str(path), "empty or missing candidate sets (column 'cands') at rows [2] (file lines [4])")
    path = _indicator_csv(tmp_path / "ind.csv")
    path.write_text(path.read_text().replace("0.3,0.1,0,0,0,1", "0.3,0.1,0,2,0,1"))
    with pytest.raises(DataValidationError) as exc:
        load_csv(path, indicator_columns="cand_*", label_column="truth")
    _one_line(exc, "indicator columns must hold 0 or 1", "rows [2] (file lines [4])", "columns ['cand_b']")
    path.write_text(path.read_text().replace("0.3,0.1,0,2,0,1,d", "0.3,0.1,0,0,0,1,e"))
    with pytest.raises(DataValidationError) as exc:
        load_csv(path, indicator_columns="cand_*", label_column="truth")
    _one_line(exc, "true labels not among the indicator columns' classes", "rows [2]")
    (tmp_path / "plain.csv").write_text("0.1,0.2,a;b\n0.3,0.4,b\n")  # no header: columns by position
    with pytest.raises(DataValidationError) as exc:
        load_csv(tmp_path / "plain.csv", candidate_column="cands")  # a name: the first row is the header
    _one_line(exc, "candidate_column='cands': no such column; the columns are '0.1', '0.2', 'a;b'")
    ds = load_csv(tmp_path / "plain.csv", candidate_column=2)
    assert ds.n_samples == 2 and ds.classes.tolist() == ["a", "b"]
    np.testing.assert_array_equal(ds.S, [[1, 1], [0, 1]])


def test_table_options_apply_to_csv_and_parquet_only(tmp_path):
    np.savez(tmp_path / "x.npz", X=np.zeros((3, 2)), S=np.eye(3, dtype=bool), y=np.arange(3))
    with pytest.raises(DataValidationError) as exc:
        load_dataset(tmp_path / "x.npz", candidate_column="cands")
    _one_line(exc, "candidate_column apply to CSV and Parquet files only")
    with pytest.raises(DataValidationError) as exc:
        load_dataset(tmp_path / "x.npz", strict=True)
    _one_line(exc, "strict apply to CSV and Parquet files only")


# ----------------------------------------------------------------------------- true labels outside
def _noisy_arrays():
    S = SETS.copy()
    S[[1, 4], TRUTH[[1, 4]]] = False
    S[4, 0] = True  # row 4 would be empty
    return np.arange(16.0).reshape(8, 2), S, TRUTH


def test_true_label_outside_its_set_is_refused_in_mat_npz_and_csv(tmp_path):
    """Issue 42: a .mat/.npz whose true label is outside its candidate set ran FINISHED without a
    word; now one line with the count, the first rows and the option that accepts it."""
    X, S, y = _noisy_arrays()
    scipy.io.savemat(tmp_path / "n.mat", {"data": X, "partial_target": sp.csc_matrix(S.T.astype(float)),
                                          "target": np.eye(4)[y].T})
    np.savez(tmp_path / "n.npz", X=X, S=S, y=y)
    rows = list(ROWS)
    rows[1], rows[4] = ("1.1", "1.0", "b;c", "a"), ("0.2", "0.0", "a", "b")
    csv = _write_csv(tmp_path / "n.csv", rows)
    for load in (lambda: load_palm(tmp_path / "n.mat"), lambda: load_dataset(tmp_path / "n.npz"),
                 lambda: load_dataset(csv, candidate_column="cands", label_column="truth")):
        with pytest.raises(DataValidationError) as exc:
            load()
        _one_line(exc, "the true label is outside its candidate set in 2 of 8 rows (rows 1, 4)", "dataset.noisy=true")
    accepted = load_npz(tmp_path / "n.npz", noisy=True)
    assert accepted.meta["noisy"] is True and accepted.rows_outside_candidates().tolist() == [1, 4]
    assert load_dataset(tmp_path / "n.mat", noisy=True).candidate_audit().share_true_inside == 0.75


def test_the_palm_sets_in_the_data_home_hold_every_true_label(data_home):
    """The real PALM sets load without ``noisy``: their true labels are all in the candidate sets."""
    present = [name for name in PALM_DATASETS if _findable(name, data_home)]
    if not present:
        pytest.skip(f"no PALM .mat file in {data_home}")
    for name in present:
        ds = load_dataset(name, data_home=data_home)
        assert ds.rows_outside_candidates().size == 0 and "noisy" not in ds.meta


def _findable(name, home):
    try:
        find_dataset_file(name, home)
    except Exception:  # noqa: BLE001 - absent here
        return False
    return True


# ----------------------------------------------------------------------------- audit
def test_candidate_audit_figures_line_and_refusal():
    ds = PLDataset(np.zeros((8, 1)), SETS, TRUTH, classes=np.array(list("abcd")))
    audit = ds.candidate_audit()
    assert audit == CandidateAudit(n_classes=4, mean_size=SETS.sum() / 8, min_size=1, max_size=3,
                                   share_all_labels=0.0, share_true_inside=1.0)
    assert audit.metrics() == {"candidates.mean_size": 1.75, "candidates.min_size": 1, "candidates.max_size": 3,
                               "candidates.share_all_labels": 0.0, "candidates.share_true_inside": 1.0}
    assert str(audit) == ("candidate sets: |S| mean 1.75 (min 1, max 3) of q=4; all labels in 0.0% of rows; "
                          "true label inside in 100.0% of rows")
    audit.require_informative("this")
    full = PLDataset(np.zeros((3, 1)), np.ones((3, 4), bool), None).candidate_audit()
    assert full.share_true_inside is None and full.share_all_labels == 1.0
    with pytest.raises(DataValidationError, match="UniformBags.r=3. puts all 4 labels in every candidate set"):
        full.require_informative("UniformBags(r=3)")


def test_candidate_audit_prints_the_noise_rate_of_noisy_sets():
    """Issue 43: the line names the noise rate (1 - share_true_inside) where true labels are out;
    the metrics stay one per fact."""
    X, S, y = _noisy_arrays()
    audit = PLDataset(X, S, y).candidate_audit()
    assert str(audit).endswith("true label inside in 75.0% of rows (noise rate 25.0%)")
    assert audit.metrics()["candidates.share_true_inside"] == 0.75 and "candidates.noise_rate" not in audit.metrics()


# ----------------------------------------------------------------------------- class names in fit
def test_fit_on_a_candidate_frame_predicts_class_names(tmp_path):
    """Issue 42: ``PlKnnLearner().fit(X, ds.S).predict(X)`` gave column indices; fitted on the
    data set's candidate DataFrame it gives the class names, as scikit-learn classifiers do."""
    ds = load_csv(_write_csv(tmp_path / "sets.csv"), candidate_column="cands", label_column="truth")
    frame = ds.candidates_frame()
    assert frame.columns.tolist() == ["a", "b", "c", "d"]
    by_index = PlKnnLearner(k=3).fit(ds.X, ds.S)
    named = PlKnnLearner(k=3).fit(ds.X, frame)
    assert named.classes_.tolist() == ["a", "b", "c", "d"]
    np.testing.assert_array_equal(named.predict(ds.X), ds.classes[by_index.predict(ds.X)])
    np.testing.assert_array_equal(named.predict_proba(ds.X), by_index.predict_proba(ds.X))
    assert named.score(ds.X, ds.true_labels()) == by_index.score(ds.X, ds.y_true)
    sparse = PLDataset(ds.X, sp.csr_matrix(ds.S), ds.y_true, ds.classes).candidates_frame()
    np.testing.assert_array_equal(PlKnnLearner(k=3).fit(ds.X, sparse).predict(ds.X), named.predict(ds.X))


def test_candidate_frame_columns_follow_their_order_and_must_be_distinct():
    S = pd.DataFrame(SETS, columns=["owl", "cat", "fox", "dog"])
    _, classes, exact = candidates_from_target(S, n_samples=8)
    assert classes.tolist() == ["owl", "cat", "fox", "dog"] and not exact
    with pytest.raises(DataValidationError, match="name a class twice"):
        candidates_from_target(pd.DataFrame(SETS, columns=["a", "b", "a", "c"]))
    with pytest.warns(DataConversionWarning):  # one column: labels, as any (n, 1) array
        labels = candidates_from_target(pd.DataFrame({"y": list("abab")}))
    assert labels[1].tolist() == ["a", "b"] and labels[2]


# ----------------------------------------------------------------------------- the command line
def _runs(cwd):
    """The runs of the store in ``cwd``, oldest first."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"sqlite:///{cwd / 'mlflow.db'}")
    return client.search_runs([client.get_experiment_by_name("plcore").experiment_id],
                              order_by=["attributes.start_time ASC"])


def test_runs_on_own_files_print_and_log_the_audit_and_the_noisy_tag(tmp_path, plcore_cli):
    """The file of issue 42's second case, now with the option that names its candidate column:
    4 classes (not 15), the audit printed and logged as metrics; then a file with true labels
    outside their sets, accepted with ``dataset.noisy=true``: tagged, its share logged."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, size=60)
    S = (rng.random((60, 4)) < 0.3) | (np.arange(4) == y[:, None])
    names = np.array(list("abcd"))
    frame = pd.DataFrame(rng.normal(size=(60, 2)) + 3.0 * y[:, None], columns=["f1", "f2"])
    frame["cands"] = [";".join(names[row]) for row in S]
    frame["truth"] = names[y]
    frame.to_csv(tmp_path / "own.csv", index=False)
    fast = ["protocol.n_splits=2", "protocol.refit=false", "tracking.log_plots=false", "progress=false"]
    proc = plcore_cli(["dataset=file", "dataset.name_or_path=own.csv", "dataset.candidate_column=cands",
                       "dataset.label_column=truth", *fast], tmp_path)
    ds = load_csv(tmp_path / "own.csv", candidate_column="cands", label_column="truth")
    assert "own: n=60 d=2 q=4, its own candidate sets" in proc.stdout
    assert str(ds.candidate_audit()) in proc.stdout.splitlines()

    S[:15, :] = np.eye(4, dtype=bool)[(y[:15] + 1) % 4]  # 15 of 60 rows: one wrong label
    np.savez(tmp_path / "noisy.npz", X=ds.X, S=S, y=y)
    proc = plcore_cli(["dataset=file", "dataset.name_or_path=noisy.npz", "dataset.noisy=true", *fast], tmp_path)
    assert "true label inside in 75.0% of rows" in proc.stdout

    own, noisy = _runs(tmp_path)
    logged = {k: v for k, v in own.data.metrics.items() if k.startswith("candidates.")}
    assert logged == pytest.approx(ds.candidate_audit().metrics())
    assert "dataset.noisy" not in own.data.tags
    assert noisy.info.status == "FINISHED" and noisy.data.tags["dataset.noisy"] == "true"
    assert noisy.data.metrics["candidates.share_true_inside"] == 0.75


def test_generated_noisy_bags_still_run_and_are_audited(tmp_path, plcore_cli):
    """drop_true removes true labels on purpose: not refused; the audit records the share."""
    rng = np.random.default_rng(2)
    y = np.arange(40) % 4
    frame = pd.DataFrame(rng.normal(size=(40, 2)) + y[:, None], columns=["f1", "f2"])
    frame["label"] = y
    frame.to_csv(tmp_path / "exact.csv", index=False)
    proc = plcore_cli(["dataset=file", "dataset.name_or_path=exact.csv", "bags=drop_true", "bags.eta=0.5",
                       "protocol.n_splits=2", "progress=false", "tracking=none"], tmp_path)
    line = next(ln for ln in proc.stdout.splitlines() if ln.startswith("candidate sets:"))
    assert "all labels in 0.0% of rows; true label inside in" in line and "100.0%" not in line


def test_bags_noisy_runs_on_exact_labels_and_prints_the_noise_rate(tmp_path, plcore_cli):
    """Issue 43: ``bags=noisy`` (PiCO+'s rule) declares its noise, so a run on exact labels is not
    refused and needs no dataset.noisy; the audit prints the share inside and the noise rate."""
    rng = np.random.default_rng(3)
    y = np.arange(80) % 4
    frame = pd.DataFrame(rng.normal(size=(80, 2)) + 3.0 * y[:, None], columns=["f1", "f2"])
    frame["label"] = y
    frame.to_csv(tmp_path / "exact.csv", index=False)
    proc = plcore_cli(["dataset=file", "dataset.name_or_path=exact.csv", "bags=noisy", "bags.q=0.3", "bags.eta=0.4",
                       "protocol.n_splits=2", "progress=false", "tracking=none"], tmp_path)
    ds = load_dataset(tmp_path / "exact.csv")
    drawn = ds.with_candidates(NoisyBags(q=0.3, eta=0.4).generate(ds.y_true, random_state=0, n_classes=4))
    inside = drawn.candidate_audit().share_true_inside
    assert 0 < inside < 1
    assert (f"true label inside in {100 * inside:.1f}% of rows (noise rate {100 * (1 - inside):.1f}%)"
            in proc.stdout)
    assert "candidate sets from NoisyBags(eta=0.4, q=0.3, random_state=0)" in proc.stdout


def test_bags_noisy_does_not_lift_the_refusal_of_a_file_with_noisy_rows(tmp_path, plcore_cli):
    """A file whose own candidate sets miss true labels is still refused without dataset.noisy,
    whatever the bag generator (it does not apply to data with candidate sets)."""
    X, S, y = _noisy_arrays()
    np.savez(tmp_path / "n.npz", X=X, S=S, y=y)
    proc = plcore_cli(["dataset=file", "dataset.name_or_path=n.npz", "bags=noisy", "tracking=none"], tmp_path,
                      check=False)
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("error: ") and "the true label is outside its candidate set in 2 of 8 rows (rows 1, 4)" in line
