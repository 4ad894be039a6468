"""Split-conformal prediction sets (plcore.prediction_sets), their metrics in runs, and ``predict sets=true``."""

import csv
import warnings

import numpy as np
import pytest
from sklearn.model_selection import KFold

from plcore.prediction_sets import ConformalSetLearner, conformal_p_values
from plcore.data import PLDataset
from plcore.exceptions import ConfigError
from plcore.learners import PlKnnLearner
from plcore.run.protocols import kfold
from plcore.testing import make_pl_data


def _literal_p_values(a, P):
    """pi_j(x) = (#{i : a_i >= 1 - p_j(x)} + 1) / (n_cal + 1), one entry at a time."""
    out = np.zeros(P.shape)
    for r in range(P.shape[0]):
        for j in range(P.shape[1]):
            out[r, j] = (sum(1 for ai in a if ai >= 1 - P[r, j]) + 1) / (len(a) + 1)
    return out


def test_p_values_are_the_counting_rule_written_out_ties_included():
    rng = np.random.default_rng(0)
    a = np.sort(rng.choice([0.1, 0.25, 0.5, 0.75, 0.9], size=11))     # ties among the calibration scores
    P = rng.choice([0.1, 0.25, 0.5, 0.75, 0.9, 0.33], size=(7, 4))     # and between them and the test scores
    np.testing.assert_allclose(conformal_p_values(a, P), _literal_p_values(a, P))


def test_the_learner_calibrates_on_candidate_sets_of_held_out_rows_and_applies_the_rule():
    """Calibration rows: a seeded fifth of the rows, the clone fitted on the others (no
    calibration row refitted on); a_i = 1 - max over S_i of the clone's p(x_i); p-values and sets
    from the rule, written out; predictions are the clone's."""
    X, S, y = make_pl_data(n_samples=50, n_classes=4, r=2, cluster_std=3.0, random_state=3)
    m = ConformalSetLearner(PlKnnLearner(k=5), alpha=0.2, random_state=0).fit(X, S)
    cal = m.calibration_indices_
    assert len(cal) == 10 and len(set(cal)) == 10
    rest = np.setdiff1d(np.arange(50), cal)
    ref = PlKnnLearner(k=5).fit(X[rest], S[rest])
    np.testing.assert_allclose(m.estimator_.predict_proba(X), ref.predict_proba(X))
    P_cal = ref.predict_proba(X[cal])
    a = sorted(1 - max(P_cal[i, j] for j in range(4) if S[cal[i], j]) for i in range(len(cal)))
    np.testing.assert_allclose(m.calibration_scores_, a)
    pv = _literal_p_values(a, ref.predict_proba(X))
    np.testing.assert_allclose(m.p_values(X), pv)
    assert np.array_equal(m.predict_set(X), pv > 0.2)
    assert np.array_equal(m.predict_set(X, alpha=0.5), pv > 0.5)
    assert np.array_equal(m.predict(X), ref.predict(X))
    np.testing.assert_allclose(m.predict_proba(X), ref.predict_proba(X))
    again = ConformalSetLearner(PlKnnLearner(k=5), alpha=0.2, random_state=0).fit(X, S)
    assert np.array_equal(again.calibration_indices_, cal)           # seeded
    names = np.array(["d", "a", "c", "b"])                           # exact labels: sets in classes_ order
    lab = ConformalSetLearner(PlKnnLearner(k=5), random_state=0).fit(X, names[y])
    assert list(lab.classes_) == ["a", "b", "c", "d"] and lab.predict_set(X).shape == (50, 4)


def test_sets_shrink_as_alpha_grows():
    X, S, _ = make_pl_data(n_samples=200, n_classes=5, r=2, cluster_std=4.0, random_state=1)
    m = ConformalSetLearner(random_state=0).fit(X[:150], S[:150])
    sets = [m.predict_set(X[150:], alpha=a) for a in (0.02, 0.05, 0.1, 0.2, 0.4, 0.7, 0.95)]
    for wider, narrower in zip(sets, sets[1:]):
        assert not (narrower & ~wider).any()                         # nested
    sizes = [s.sum(axis=1).mean() for s in sets]
    assert sizes == sorted(sizes, reverse=True) and sizes[0] > sizes[-1]


def test_refusals_in_one_line():
    X, S, _ = make_pl_data(n_samples=20)
    with pytest.raises(ValueError, match="n_samples = 1"):
        ConformalSetLearner().fit(X[:1], S[:1])
    with pytest.raises(ValueError, match="alpha"):
        ConformalSetLearner(alpha=1.5).fit(X, S)
    m = ConformalSetLearner(PlKnnLearner(k=3), random_state=0).fit(X, S)
    with pytest.raises(ValueError, match="alpha must be in"):
        m.predict_set(X, alpha=0)


# ----------------------------------------------------------------------------- the guarantee, empirically
ALPHA, TRIALS, N = 0.1, 1000, 100


def _band(p, trials):
    """Three binomial standard errors of a frequency with success probability ``p``."""
    return 3 * np.sqrt(p * (1 - p) / trials)


def _trial_hits(seed, exact):
    """One exchangeable draw of N + 1 rows (4 overlapping blobs, one false positive per candidate
    set, or exact labels): fit on the first N, test the last; ``(top candidate in its set, set
    meets the candidate set, true label in its set)``."""
    X, S, y = make_pl_data(n_samples=N + 1, n_features=2, n_classes=4, r=1, cluster_std=4.0, random_state=seed)
    m = ConformalSetLearner(PlKnnLearner(k=7), alpha=ALPHA, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.fit(X[:N], y[:N] if exact else S[:N])
    C = m.predict_set(X[N:])[0]
    P = m.predict_proba(X[N:])[0]
    s = S[N] if not exact else np.eye(4, dtype=bool)[y[N]]
    top = np.flatnonzero(s)[np.argmax(P[s])]
    return C[top], (C & s).any(), C[y[N]]


def test_the_set_holds_the_models_top_candidate_with_probability_at_least_1_minus_alpha():
    """Over independent exchangeable draws the new row's set holds the label the model scores
    highest among the row's (unseen) candidate set w.p. >= 1 - alpha, and at most
    1 - alpha + 1/(n_cal + 1) (continuous scores: no ties); the event is the set meeting the
    candidate set. The true label is covered less often: nothing is guaranteed for it."""
    hits = np.array([_trial_hits(seed, exact=False) for seed in range(TRIALS)])
    assert np.array_equal(hits[:, 0], hits[:, 1])
    freq = hits[:, 0].mean()
    n_cal = int(0.2 * N)
    band = _band(1 - ALPHA, TRIALS)
    assert 1 - ALPHA - band <= freq <= 1 - ALPHA + 1 / (n_cal + 1) + band, (freq, band)
    assert hits[:, 2].mean() <= freq


def test_on_exact_labels_the_set_covers_the_true_label_with_probability_at_least_1_minus_alpha():
    hits = np.array([_trial_hits(seed, exact=True) for seed in range(TRIALS)])
    assert np.array_equal(hits[:, 0], hits[:, 2])                    # the top candidate of {y} is y
    freq = hits[:, 2].mean()
    band = _band(1 - ALPHA, TRIALS)
    assert 1 - ALPHA - band <= freq <= 1 - ALPHA + 1 / (int(0.2 * N) + 1) + band, (freq, band)


# ----------------------------------------------------------------------------- in runs
def test_kfold_logs_the_set_metrics_of_every_fold_as_a_literal_loop_computes_them():
    X, S, y = make_pl_data(n_samples=90, n_classes=4, r=2, cluster_std=3.0, random_state=2)
    learner = ConformalSetLearner(PlKnnLearner(k=5), alpha=0.2, random_state=0)
    res = kfold(learner, PLDataset(X, S, y), n_splits=3, random_state=0, progress=False, preprocessing="none",
                refit=False)
    for step, (train, test) in zip(res.steps, KFold(3, shuffle=True, random_state=0).split(X)):
        C = ConformalSetLearner(PlKnnLearner(k=5), alpha=0.2, random_state=0).fit(X[train], S[train]).predict_set(
            X[test])
        assert step["set_size"] == pytest.approx(np.mean([row.sum() for row in C]))
        assert step["set_coverage"] == pytest.approx(np.mean([C[i, y[t]] for i, t in enumerate(test)]))
        assert step["set_candidate_coverage"] == pytest.approx(np.mean([(C[i] & S[t]).any()
                                                                        for i, t in enumerate(test)]))
        assert step["set_empty_fraction"] == pytest.approx(np.mean([not row.any() for row in C]))
    for key in ("set_size", "set_coverage", "set_candidate_coverage", "set_empty_fraction"):
        assert res.summary[f"{key}_mean"] == pytest.approx(np.mean([s[key] for s in res.steps]))
        assert f"{key}_std" in res.summary
    scaled = kfold(learner, PLDataset(X, S, y), n_splits=3, random_state=0, progress=False, refit=False)
    assert "set_size_mean" in scaled.summary                        # through the standardising pipeline
    free = kfold(learner, PLDataset(X, S), n_splits=3, random_state=0, progress=False, refit=False)
    assert "set_size_mean" in free.summary and "set_coverage_mean" not in free.summary   # no true labels
    plain = kfold(PlKnnLearner(k=5), PLDataset(X, S, y), n_splits=3, random_state=0, progress=False, refit=False)
    assert not any(k.startswith("set_") for k in plain.summary)


def test_a_learner_name_as_estimator_is_resolved_through_the_registry():
    from omegaconf import OmegaConf

    from plcore.run.resolve import build_setup

    node = {"_target_": "plcore.prediction_sets.ConformalSetLearner", "estimator": "plknn", "alpha": 0.2,
            "calibration_fraction": 0.2, "random_state": None}
    setup = build_setup(OmegaConf.create({"seed": 3, "learner": node}))
    assert isinstance(setup.learner.estimator, PlKnnLearner) and setup.learner.random_state == 3
    assert setup.learner.estimator.get_params() == PlKnnLearner().get_params()
    with pytest.raises(ConfigError, match="unknown learner 'plknnn'"):
        build_setup(OmegaConf.create({"seed": 3, "learner": {**node, "estimator": "plknnn"}}))


def test_predict_writes_prediction_sets_and_refuses_a_model_without_them(tmp_path, plcore_cli):
    from plcore.run.predict import load_run_model
    from plcore.run.protocols._sets import predict_sets
    import mlflow
    from sklearn.datasets import load_iris

    from plcore.feature_columns import PredictionModel

    base = ["dataset=iris", "bags.r=1", "protocol.n_splits=2"]
    plcore_cli([*base, "+learner=conformal_sets", "learner.estimator=plknn", "learner.alpha=0.2"], tmp_path)
    plcore_cli([*base, "+learner=plknn"], tmp_path)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = mlflow.tracking.MlflowClient(tracking_uri=uri)
    runs = {r.info.run_name: r for r in client.search_runs([client.get_experiment_by_name("plcore").experiment_id])}
    run = runs["conformal_sets · iris · kfold"]
    assert {"set_size_mean", "set_coverage_mean", "set_candidate_coverage_mean"} <= set(run.data.metrics)
    assert run.data.params["learner.estimator"] == "plknn"
    plcore_cli(["predict", f"run={run.info.run_id}", "data=iris", "sets=true", "out=sets.csv"], tmp_path)
    with open(tmp_path / "sets.csv") as fh:
        rows = list(csv.DictReader(fh))
    model, _, _ = load_run_model(run, uri)
    assert isinstance(model, PredictionModel)
    sets = predict_sets(model.pipeline, model.encode(load_iris().data))   # the final step's predict_set
    names = [str(c) for c in model.classes_]
    assert len(rows) == 150 and list(rows[0])[-1] == "prediction_set"
    assert [r["prediction_set"] for r in rows] == ["|".join(n for n, b in zip(names, s) if b) for s in sets]
    bad = plcore_cli(["predict", f"run={runs['plknn · iris · kfold'].info.run_id}", "data=iris", "sets=true"],
                     tmp_path, check=False)
    err = bad.stderr.strip().splitlines()
    assert bad.returncode == 2 and len(err) == 1 and "gives no prediction sets" in err[0], bad.stderr
