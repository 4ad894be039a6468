"""k-fold protocol and the default command."""

import numpy as np
import pytest
from sklearn.preprocessing import StandardScaler

from plcore.__main__ import main
from plcore.data import PLDataset
from plcore.datasets import UniformBags
from plcore.learners import PlKnnLearner
from plcore.protocols import build_pipeline, kfold, make_preprocessor
from plcore.testing import make_pl_data


def small_dataset():
    X, S, y = make_pl_data(n_samples=60)
    return PLDataset(X, S, y, name="blobs")


def test_kfold_partitions_and_records_every_fold():
    ds = small_dataset()
    res = kfold(PlKnnLearner(k=3), ds, n_splits=5, random_state=0, progress=False)
    assert len(res.folds) == 5
    test_rows = np.concatenate([f.test_index for f in res.folds])
    assert np.array_equal(np.sort(test_rows), np.arange(ds.n_samples))  # each row tested once
    for f in res.folds:
        assert f.accuracy == pytest.approx(np.mean(f.y_pred == ds.y_true[f.test_index]))
    s = res.summary()
    assert s["accuracy_mean"] == pytest.approx(np.mean([f.accuracy for f in res.folds]))
    assert {"accuracy_std", "transductive_accuracy_mean", "fit_time_mean"} <= set(s)


def test_kfold_is_seeded():
    ds = small_dataset()
    a = kfold(PlKnnLearner(k=3), ds, n_splits=3, random_state=7, progress=False)
    b = kfold(PlKnnLearner(k=3), ds, n_splits=3, random_state=7, progress=False)
    assert [f.accuracy for f in a.folds] == [f.accuracy for f in b.folds]


def test_preprocessing_is_fitted_on_training_part_only():
    ds = small_dataset()
    pipe = build_pipeline(PlKnnLearner(k=3), "standardize")
    assert isinstance(pipe.steps[0][1], StandardScaler)
    train = np.arange(30)
    pipe.fit(ds.X[train], ds.S[train])
    np.testing.assert_allclose(pipe.steps[0][1].mean_, ds.X[train].mean(axis=0))
    assert len(build_pipeline(PlKnnLearner(), "none").steps) == 1
    with pytest.raises(ValueError, match="preprocessing must be one of"):
        make_preprocessor("zscore")


def test_kfold_needs_candidates_and_truth():
    X, S, y = make_pl_data(n_samples=30)
    with pytest.raises(ValueError, match="no candidate sets"):
        kfold(PlKnnLearner(), PLDataset(X, None, y), progress=False)
    with pytest.raises(ValueError, match="no true labels"):
        kfold(PlKnnLearner(), PLDataset(X, S), progress=False)


def test_default_command_prints_summary_line(capsys):
    assert main(["--folds", "3"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("accuracy_mean=") and " accuracy_std=" in last
    assert float(last.split()[0].split("=")[1]) > 0.85  # digits, r=3: far above chance 0.1


def test_default_command_reports_missing_dataset(capsys, tmp_path):
    assert main(["--dataset", "lost", "--data-home", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "lost.mat" in err and str(tmp_path) in err


def test_uniform_bags_default_experiment_data():
    # the embedded default: digits with r = 3 gives bags of size 4
    from plcore.datasets import load_sklearn

    ds = load_sklearn("digits")
    S = UniformBags(r=3, random_state=0).generate(ds.y_true)
    assert S.shape == (1797, 10) and (S.sum(1) == 4).all()
