"""protocol=plench (PLENCH's tabular protocol): split, z-score, draws, checkpoints, steps and
summary, the report writer ``plench_table`` and one-line errors (the selection rule itself:
tests/test_checkpoints.py)."""

import hashlib

import numpy as np
import pytest

from plcore.base import BaseLearner, BaseReducer
from plcore.data import PLDataset
from plcore.exceptions import ConfigError, DataValidationError, InvalidParameterError
from plcore.learners import PlKnnLearner
from plcore.run.checkpoints import CRITERIA
from plcore.run.plench_report import plench_table
from plcore.run.protocols import PROTOCOLS, Setup, plench, plench_split, zscored
from plcore.run.protocols import _plench
from plcore.run.runs import RunRecord
from plcore.testing import make_pl_data


def _dataset(n=120, seed=0):
    X, S, y = make_pl_data(n_samples=n, random_state=seed)
    X = X * np.array([1.0, 10.0, 0.1, 3.0]) + np.array([5.0, -2.0, 0.0, 40.0])   # unequal means and scales
    return PLDataset(X, S, y, name="blobs")


def _plench_seed(*parts):
    """PLENCH's ``seed_hash``, written out here: md5 of the tuple's text, modulo 2**31."""
    return int(hashlib.md5(str(parts).encode("utf-8")).hexdigest(), 16) % (2 ** 31)


class _Log:
    fits = []     # (trial marker, params, X_fit, X predicted at each checkpoint)


class EpochLearner(BaseLearner):
    """A learner with per-epoch checkpoints (tag ``epoch_checkpoints``): nearest class mean, its
    means moved a step per epoch; it logs what it was fitted and asked on."""

    def __init__(self, alpha=0.5, beta=1, n_epochs=3, random_state=None):
        self.alpha, self.beta, self.n_epochs, self.random_state = alpha, beta, n_epochs, random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.pll_tags.epoch_checkpoints = True
        return tags

    def fit(self, X, y, *, on_epoch=None):
        X, S = self._validate_fit(X, y)
        self._asked = []
        _Log.fits.append({"params": self.get_params(), "X_fit": X.copy(), "asked": self._asked})
        W = S / S.sum(axis=1, keepdims=True)
        self.means_ = np.zeros((S.shape[1], X.shape[1]))
        target = (W.T @ X) / np.maximum(W.sum(axis=0)[:, None], 1e-12)
        for epoch in range(self.n_epochs):
            self.means_ += (target - self.means_) / (self.n_epochs - epoch)
            if on_epoch is not None:
                on_epoch(epoch, self)
        return self

    def _fit(self, X, S):  # pragma: no cover - fit does the work
        raise NotImplementedError

    def _scores(self, X):
        self._asked.append(X.copy())
        return -((X[:, None, :] - self.means_[None]) ** 2).sum(axis=2)

    def predict_proba(self, X):
        s = self._scores(self._validate_predict(X))
        e = np.exp(s - s.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)


class _Identity(BaseReducer):
    def _fit(self, X, S):
        self.n_components_ = X.shape[1]

    def _transform(self, X):
        return X


SPACE = {"alpha": {"log10_uniform": [-3, -1]}, "beta": [2, 3, 4]}


@pytest.fixture
def space(monkeypatch):
    """The fake learner's declared space (a registered learner's comes from its ComponentSpec)."""
    declared = _plench._declared_space
    monkeypatch.setattr(_plench, "_declared_space",
                        lambda learner: dict(SPACE) if isinstance(learner, EpochLearner) else declared(learner))
    _Log.fits = []
    yield SPACE
    _Log.fits = []


# --------------------------------------------------------------------------------------------- split
def test_split_sizes_disjoint_and_plench_rule():
    n = 101
    fit, val, test = plench_split(n, trial_seed=2, test_size=0.1, validation_size=0.1)
    assert (len(fit), len(val), len(test)) == (81, 9, 11)      # int(101 * 0.9) = 90 train; int(90 * 0.1) = 9
    assert not (set(fit) & set(val) or set(fit) & set(test) or set(val) & set(test))
    assert sorted(np.concatenate([fit, val, test])) == list(range(n))
    # PLENCH's rule, literally: shuffle the rows with seed_hash(trial seed), 90% / 10%; shuffle the
    # training part's positions with the same seed, the first 10% validation
    keys = list(range(n))
    np.random.RandomState(_plench_seed(2)).shuffle(keys)
    train, test_ref = keys[:90], keys[90:]
    pos = list(range(90))
    np.random.RandomState(_plench_seed(2)).shuffle(pos)
    assert test.tolist() == test_ref
    assert val.tolist() == [train[p] for p in pos[:9]] and fit.tolist() == [train[p] for p in pos[9:]]
    other = plench_split(n, trial_seed=3, test_size=0.1, validation_size=0.1)
    assert not np.array_equal(other[2], test)


def test_every_draw_and_learner_of_a_trial_sees_the_same_rows(space):
    ds = _dataset()
    for learner in (EpochLearner(), EpochLearner(beta=4, n_epochs=2)):
        plench(learner, ds, n_trials=2, n_draws=3, random_state=5, progress=False)
    fits = _Log.fits
    assert len(fits) == 2 * 2 * 3
    for trial in range(2):
        fit, val, test = plench_split(ds.n_samples, 5 + trial, 0.1, 0.1)
        Z = zscored(ds.X, fit, "all_rows")
        mine = [f for k, f in enumerate(fits) if (k % 6) // 3 == trial]    # learner-major, then trial, then draw
        for f in mine:
            assert np.array_equal(f["X_fit"], Z[fit])
            assert all(np.array_equal(a, Z[np.concatenate([val, test])]) for a in f["asked"])


# -------------------------------------------------------------------------------------------- z-score
def test_zscore_all_rows_and_train_rows_use_the_documented_rows():
    ds = _dataset()
    X = ds.X
    fit, _, _ = plench_split(ds.n_samples, 0, 0.1, 0.1)
    all_rows = zscored(X, fit, "all_rows")
    assert np.allclose(all_rows, (X - X.mean(axis=0)) / (X.std(axis=0) + 1e-6), rtol=0, atol=1e-12)
    train_rows = zscored(X, fit, "train_rows")
    assert np.allclose(train_rows, (X - X[fit].mean(axis=0)) / X[fit].std(axis=0), rtol=0, atol=1e-12)
    assert np.allclose(train_rows[fit].mean(axis=0), 0) and not np.allclose(all_rows[fit].mean(axis=0), 0)
    assert np.abs(all_rows - train_rows).max() > 1e-3


def test_the_protocol_scales_by_its_zscore_option(space):
    ds = _dataset()
    fit, _, _ = plench_split(ds.n_samples, 0, 0.1, 0.1)
    for how in ("all_rows", "train_rows"):
        _Log.fits = []
        plench(EpochLearner(), ds, n_trials=1, n_draws=1, zscore=how, progress=False)
        assert np.array_equal(_Log.fits[0]["X_fit"], zscored(ds.X, fit, how)[fit])


# --------------------------------------------------------------------------------- draws, checkpoints
def test_draw_zero_is_the_configured_learner_and_draws_repeat_per_seed(space):
    ds = _dataset()
    plench(EpochLearner(alpha=0.5, beta=1), ds, n_trials=2, n_draws=4, random_state=0, progress=False)
    first = [f["params"] for f in _Log.fits]
    _Log.fits = []
    plench(EpochLearner(alpha=0.5, beta=1), ds, n_trials=2, n_draws=4, random_state=0, progress=False)
    assert [f["params"] for f in _Log.fits] == first                      # reproducible
    for trial in range(2):
        draws = first[4 * trial:4 * trial + 4]
        assert (draws[0]["alpha"], draws[0]["beta"]) == (0.5, 1)           # the configured parameters
        for d, p in enumerate(draws[1:], start=1):
            assert 1e-3 <= p["alpha"] <= 1e-1 and p["beta"] in (2, 3, 4)    # drawn from the declared space
            assert p["random_state"] == _plench_seed("fit", d, trial)        # each fit seeded by (draw, trial)
    assert first[1]["alpha"] != first[5]["alpha"]                           # trials draw their own points
    _Log.fits = []
    plench(EpochLearner(alpha=0.5, beta=1), ds, n_trials=1, n_draws=4, random_state=1, progress=False)
    assert [f["params"] for f in _Log.fits] == first[4:]                     # seed 1's trial 0 = seed 0's trial 1


def test_a_registered_learner_draws_from_its_declared_grid():
    assert _plench._declared_space(PlKnnLearner()) == {"k": [3, 5, 10, 20]}   # no distributions: the grid


def test_checkpoints_per_epoch_or_one_for_a_classic_learner(space):
    ds = _dataset()
    res = plench(EpochLearner(n_epochs=4), ds, n_trials=2, n_draws=3, progress=False)
    assert [s["n_checkpoints"] for s in res.steps] == [12, 12]
    assert all(len(f["asked"]) == 2 * 4 for f in _Log.fits)   # predict and predict_proba after every epoch
    knn = plench(PlKnnLearner(k=3), ds, n_trials=2, n_draws=3, progress=False)
    assert [s["n_checkpoints"] for s in knn.steps] == [3, 3]
    assert all(1 <= s[f"{c}_epoch"] <= 4 for s in res.steps for c in CRITERIA)
    assert all(s[f"{c}_epoch"] == 1 for s in knn.steps for c in CRITERIA)


def test_steps_and_summary(space):
    ds = _dataset()
    res = plench(EpochLearner(), ds, n_trials=3, n_draws=2, progress=False)
    assert [s["step"] for s in res.steps] == [0, 1, 2]
    for c in CRITERIA:
        values = [s[f"{c}_accuracy"] for s in res.steps]
        assert res.summary[f"{c}_accuracy_mean"] == pytest.approx(np.mean(values))
        assert res.summary[f"{c}_accuracy_sem"] == pytest.approx(np.std(values) / np.sqrt(3))
    assert res.tags["training_labels"] == "candidates"
    # the CR choice's drawn parameters are logged (numbers only)
    assert {"selected.learner.alpha", "selected.learner.beta"} <= set(res.steps[0])
    spec = PROTOCOLS["plench"]
    assert spec.summary_keys[0] == "cr_accuracy_mean" and spec.step_name == "trial"


def test_exact_label_data_take_candidate_sets_from_the_bag_generator(space):
    from plcore.datasets import UniformBags

    X, _, y = make_pl_data(n_samples=120)
    ds = PLDataset(X, None, y, name="exact")
    res = plench(Setup(learner=EpochLearner(), bags=UniformBags(r=1)), ds, n_trials=2, n_draws=1, progress=False)
    assert len(res.steps) == 2
    with pytest.raises(DataValidationError, match="exact labels only"):
        plench(EpochLearner(), ds, n_trials=1, n_draws=1, progress=False)


# ---------------------------------------------------------------------------------------------- errors
def test_bad_parameters_and_setups_raise_one_line():
    ds = _dataset(n=30)
    for kwargs, match in (({"zscore": "all"}, "zscore"), ({"n_draws": 0}, "n_draws"),
                          ({"test_size": 1.0}, "test_size"), ({"validation_size": 0}, "validation_size")):
        with pytest.raises(InvalidParameterError, match=match):
            plench(PlKnnLearner(k=3), ds, progress=False, **kwargs)
    with pytest.raises(DataValidationError, match="0 validation row"):
        plench(PlKnnLearner(k=3), ds, validation_size=0.02, n_draws=1, progress=False)
    with pytest.raises(ConfigError, match="declares no search_distributions or search_space"):
        plench(EpochLearner(), ds, n_draws=2, progress=False)       # not registered: nothing to draw from
    with pytest.raises(ConfigError, match="integer seed"):
        plench(PlKnnLearner(k=3), ds, n_draws=1, random_state=None, progress=False)
    with pytest.raises(ConfigError, match="takes no reducer"):
        plench(Setup(learner=PlKnnLearner(k=3), reducer=_Identity()), ds, n_draws=1, progress=False)


@pytest.mark.parametrize("args, needle", [
    (["protocol.zscore=everything"], "zscore"),
    (["protocol.n_draws=0"], "n_draws"),
    (["protocol.test_size=0.999"], "test and 0 validation row(s)"),
    (["+learner=perceptron", "protocol.n_draws=2"], "declares no search_distributions"),
])
def test_bad_parameters_are_one_line_before_any_run(tmp_path, plcore_cli, args, needle):
    proc = plcore_cli(["protocol=plench", "dataset=iris", "bags.r=1", "tracking=mlflow", *args], tmp_path,
                      check=False)
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and needle in err[0], proc.stderr
    assert not (tmp_path / "mlflow.db").exists()          # refused before the run was created


def test_a_run_through_the_app(tmp_path, plcore_cli):
    proc = plcore_cli(["+learner=plknn", "protocol=plench", "protocol.n_draws=2", "protocol.n_trials=2",
                       "dataset=iris", "bags.r=1", "tracking=none"], tmp_path)
    assert "[plench iris] trial 1 (2 of 2 done) cr_accuracy=" in proc.stderr
    last = proc.stdout.strip().splitlines()[-1].split()
    assert [kv.split("=")[0] for kv in last] == list(PROTOCOLS["plench"].summary_keys)
    assert 0.5 < float(last[0].split("=")[1]) <= 1.0           # iris, one false positive: far above chance


# ---------------------------------------------------------------------------------------- report writer
def _run(run_id, learner, dataset, means, sems, start, protocol="plench", epochs=50):
    metrics = {}
    for c, m, s in zip(CRITERIA, means, sems):
        metrics[f"{c}_accuracy_mean"], metrics[f"{c}_accuracy_sem"] = m, s
    params = {"learner._target_": {"plknn": "plcore.learners.plknn.PlKnnLearner"}.get(learner, learner),
              "protocol.n_trials": "3", "protocol.n_draws": "10", "protocol.zscore": "all_rows",
              "protocol.test_size": "0.1", "protocol.validation_size": "0.1", "learner.n_epochs": str(epochs)}
    return RunRecord(run_id=run_id, name=f"{learner} · {dataset} · {protocol}", params=params, metrics=metrics,
                     tags={"protocol": protocol, "dataset": dataset}, start_time=start)


def test_plench_table_from_fake_runs():
    runs = [_run("a", "plknn", "lost", [0.7, 0.71, 0.8, 0.82], [0.01, 0.02, 0.0, 0.005], 1),
            _run("b", "plknn", "msrc-v2", [0.4, 0.41, 0.45, 0.5], [0.011, 0.0, 0.02, 0.03], 2),
            _run("c", "plknn", "lost", [0.7793, 0.7801, 0.8, 0.8123], [0.0052, 0.004, 0.001, 0.0], 3),  # latest
            _run("k", "plknn", "lost", [0.1, 0.1, 0.1, 0.1], [0, 0, 0, 0], 4, protocol="kfold")]
    text = plench_table(runs)
    lines = text.splitlines()
    lost = lines.index("## lost")
    assert lines[lost + 2:lost + 5] == ["| algorithm | CR | AA | Oracle | Oracle w/ ES |", "|---|---|---|---|---|",
                                        "| PL-KNN | 77.93 ± 0.52 | 78.01 ± 0.40 | 80.00 ± 0.10 | 81.23 ± 0.00 |"]
    msrc = lines.index("## msrc-v2")
    assert lines[msrc + 4] == "| PL-KNN | 40.00 ± 1.10 | 41.00 ± 0.00 | 45.00 ± 2.00 | 50.00 ± 3.00 |"
    assert lost < msrc and "3 trials, 10 hyperparameter draws" in text and "50 epochs" in text
    assert plench_table([runs[-1]]) == ""      # no plench run: nothing to write


def test_plench_table_is_a_registered_writer_and_sweeps_show_the_headline():
    from plcore.registry import get_registry
    from plcore.run.report import sweep_table

    assert get_registry().report_writer("plench_table") is plench_table
    run = _run("a", "plknn", "lost", [0.7793, 0.78, 0.8, 0.81], [0.01] * 4, 1)
    assert "cr_accuracy_mean=0.7793" in sweep_table([run])


def test_every_checkpoint_record_is_what_the_model_predicts(space, monkeypatch):
    """The four numbers of a checkpoint, computed again from the model's predictions there."""
    ds = _dataset()
    records = []
    orig = _plench._checkpoint

    def spy(est, trial):
        rec = orig(est, trial)
        records.append((rec, est.predict(trial.X_eval), est.predict_proba(trial.X_eval), trial))
        return rec

    monkeypatch.setattr(_plench, "_checkpoint", spy)
    plench(EpochLearner(n_epochs=2), ds, n_trials=1, n_draws=2, progress=False)
    assert len(records) == 4
    for rec, pred, proba, trial in records:
        v = trial.n_val
        cr = np.mean(trial.S_val[np.arange(v), pred[:v]])
        conf = np.where(trial.S_val, proba[:v], 0)
        conf = conf / conf.sum(axis=1, keepdims=True)
        aa = np.mean(conf[np.arange(v), proba[:v].argmax(axis=1)])
        assert rec == pytest.approx((cr, aa, np.mean(pred[:v] == trial.y_val), np.mean(pred[v:] == trial.y_test)))

