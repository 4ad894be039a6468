"""DST-PLL with a reject option (Fuchs, Kalinke & Boehm, TMLR 2025): Yager's rule against a literal
textbook combination, a prediction and reject score worked out by hand, learning, the reject
option's value, seeding; the reject metrics of a kfold run and ``predict abstain=true``
(conformance: test_conformance.py)."""

import csv
import itertools
import os
import subprocess
import sys

import numpy as np
import pytest

from plcore.data import PLDataset
from plcore.exceptions import ConfigError
from plcore.run.protocols import kfold
from plcore.testing import make_pl_data
from plcore_baselines._dstpll import masks_from_candidates, masks_to_matrix, yager_combine
from plcore_baselines.dstpll import DstPllLearner


# ----------------------------------------------------------------------------- Yager's rule
def textbook_yager(masses, universe, prune=1e-10):
    """Yager's rule written out on frozensets: every tuple of focal sets (one per mass function)
    puts the product of its masses on the intersection of its sets; the empty set's mass goes
    to ``universe``; masses below ``prune`` are deleted; the rest is renormalised."""
    out = {}
    for combo in itertools.product(*[list(m.items()) for m in masses]):
        inter = frozenset(universe)
        mass = 1.0
        for focal, value in combo:
            inter = inter & focal
            mass = mass * value
        out[inter] = out.get(inter, 0.0) + mass
    empty = out.pop(frozenset(), 0.0)
    out[frozenset(universe)] = out.get(frozenset(universe), 0.0) + empty
    out = {s: v for s, v in out.items() if v >= prune}
    total = sum(out.values())
    return {s: v / total for s, v in out.items()}


def _mask(s):
    return sum(1 << c for c in s)


@pytest.mark.parametrize("seed", range(8))
def test_yager_combine_equals_the_textbook_rule_on_random_mass_functions(seed):
    rng = np.random.default_rng(seed)
    q = 5
    universe = frozenset(range(q))
    masses = []
    for _ in range(rng.integers(1, 5)):
        n_focal = rng.integers(1, 4)
        focal = {frozenset(np.flatnonzero(rng.random(q) < 0.5).tolist()) or frozenset([0]) for _ in range(n_focal)}
        w = rng.random(len(focal))
        masses.append(dict(zip(focal, w / w.sum())))
    if seed == 0:   # a focal set whose combined mass falls under the pruning bound
        masses.append({frozenset([1]): 1e-12, universe: 1.0 - 1e-12})
    ref = textbook_yager(masses, universe)
    got = yager_combine([{_mask(s): v for s, v in m.items()} for m in masses], _mask(universe))
    assert set(got) == {_mask(s) for s in ref}
    for s, v in ref.items():
        assert got[_mask(s)] == pytest.approx(v, rel=1e-12, abs=1e-15)
    assert sum(got.values()) == pytest.approx(1.0)


def test_yager_combine_on_the_authors_worked_examples():
    """The combinations the authors' unit tests fix (dst_pll_test.py), on bit masks."""
    got = yager_combine([{3: 0.5, 7: 0.5}, {5: 0.5, 7: 0.5}, {4: 0.5, 7: 0.5}], 7)
    assert got == pytest.approx({1: 0.125, 3: 0.125, 4: 0.25, 5: 0.125, 7: 0.375})
    assert yager_combine([{1: 0.99, 2: 0.01}, {2: 0.01, 4: 0.99}], 7) == pytest.approx({2: 0.0001, 7: 0.9999})
    assert yager_combine([{3: 0.5, 7: 0.5}, {5: 0.5, 7: 0.5}, {4: 1.0}], 7) == pytest.approx({4: 0.5, 7: 0.5})


def test_bit_masks_round_trip_beyond_64_classes():
    rng = np.random.default_rng(0)
    S = rng.random((20, 130)) < 0.1
    masks = masks_from_candidates(S)
    assert masks[3] == sum(1 << int(c) for c in np.flatnonzero(S[3]))
    assert np.array_equal(masks_to_matrix(masks, 130), S)


# ----------------------------------------------------------------------------- by hand
# Classes a, b, c = bits 1, 2, 4. Three training rows on a line, so that a query with
# n_neighbors=3 has all three as neighbours and a training row the two others.
X3 = np.array([[0.0], [1.0], [2.0]])


def test_prediction_and_reject_score_worked_out_by_hand():
    """Neighbours {a}, {a, b}, {b, c} of a new row (T = {a, b, c} = 7):
    m1 = {a: .5, T: .5}; with m2 = {ab: .5, T: .5}: {a: .5, ab: .25, T: .25};
    with m3 = {bc: .5, T: .5}: a&bc = {} .25, a .25, ab&bc = b .125, ab .125, bc .125, T .125;
    conflict .25 -> T: m = {a: .25, b: .125, ab: .125, bc: .125, T: .375}.
    bel = (.25, .125, 0); pl(a) = .25 + .125 + .375 = .75, pl(b) = .125 * 3 + .375 = .75,
    pl(c) = .125 + .375 = .5; prediction a, r = .25 - .75 = -.5 (rejected);
    scores = bel with u = .625 on a."""
    S = np.array([[1, 0, 0], [1, 1, 0], [0, 1, 1]], dtype=bool)
    m = DstPllLearner(n_neighbors=3, random_state=0).fit(X3, S)
    q = np.array([[1.0]])
    assert m.predict(q).tolist() == [0]
    assert m.reject_score(q) == pytest.approx([-0.5])
    np.testing.assert_allclose(m._scores(q), [[0.875, 0.125, 0.0]])
    # training rows (T = S_i, two neighbours each):
    # row 0: T = {a}: m = {a: 1}, bel = (1, 0, 0); pl(b) = pl(c) = 0 -> r = 1
    # row 1: T = ab, neighbours {a} -> {a: .5, ab: .5}, {b, c} & ab = b -> {b: .5, ab: .5};
    #        combined {a: .25, b: .25, ab: .25 + .25 (the conflict)}: bel (.25, .25, 0), a tie; r = .25 - .75
    # row 2: T = bc, neighbours {a} (disjoint: skipped), {a, b} & bc = b -> {b: .5, bc: .5};
    #        bel (0, .5, 0), pl(b) = 1, pl(c) = .5 -> prediction b, r = 0 (not accepted)
    assert m.disambiguated_[0] == 0 and m.disambiguated_[2] == 1 and m.disambiguated_[1] in (0, 1)
    np.testing.assert_allclose(m.train_reject_score_, [1.0, -0.5, 0.0])
    tie = np.zeros(3)
    tie[m.disambiguated_[1]] = 0.5
    np.testing.assert_allclose(m.confidences_, [[1, 0, 0], np.array([0.25, 0.25, 0]) + tie, [0, 1, 0]])


def test_an_accepted_prediction_worked_out_by_hand():
    """Neighbours {a}, {a}, {a, b}: {a: .75, T: .25}, then with {ab: .5, T: .5}:
    {a: .75, ab: .125, T: .125}; bel(a) = .75, pl(b) = .25, pl(c) = .125: r = .5 > 0."""
    S = np.array([[1, 0, 0], [1, 0, 0], [1, 1, 0]], dtype=bool)
    m = DstPllLearner(n_neighbors=3, random_state=0).fit(X3, S)
    assert m.predict([[0.5]]).tolist() == [0]
    assert m.reject_score([[0.5]]) == pytest.approx([0.5])


def test_no_singleton_mass_predicts_inside_the_heaviest_focal_set():
    """Neighbours {a, b}, {a, b} of a new row: m = {ab: .75, T: .25}, no singleton: the class is
    drawn from {a, b} (both occur over rows and seeds); r = 0 - pl(other) = -1."""
    S = np.array([[1, 1, 0], [1, 1, 0], [0, 0, 1]], dtype=bool)
    X = np.array([[0.0], [0.1], [50.0]])
    queries = np.linspace(-1, 0.05, 40)[:, None]
    preds = set()
    for seed in range(3):
        m = DstPllLearner(n_neighbors=2, random_state=seed).fit(X, S)
        p = m.predict(queries)
        preds |= set(p.tolist())
        np.testing.assert_allclose(m.reject_score(queries), -1.0)
    assert preds == {0, 1}


# ----------------------------------------------------------------------------- learning
def test_learns_on_separable_data():
    X, S, y = make_pl_data(n_samples=300, n_classes=4, r=1, random_state=2)
    m = DstPllLearner(random_state=0).fit(X[:200], S[:200])
    assert np.mean(m.predict(X[200:]) == y[200:]) >= 0.9          # chance 0.25
    assert np.mean(m.disambiguated_ == y[:200]) >= 0.9
    np.testing.assert_allclose(m.confidences_.sum(axis=1), 1.0)
    assert np.all(m.confidences_[~S[:200]] == 0)


def test_accepted_predictions_are_more_accurate_than_rejected_ones():
    X, S, y = make_pl_data(n_samples=600, n_classes=5, r=2, random_state=0, cluster_std=4.0)
    m = DstPllLearner(random_state=0).fit(X[:400], S[:400])
    correct = m.predict(X[400:]) == y[400:]
    accepted = m.reject_score(X[400:]) > 0
    assert 20 <= accepted.sum() <= 180
    assert correct[accepted].mean() > correct[~accepted].mean() + 0.2


def test_seeded_runs_repeat_and_a_rows_answer_does_not_depend_on_the_others():
    X, S, _ = make_pl_data(n_samples=200, n_classes=4, r=2, random_state=3, cluster_std=3.0)
    a = DstPllLearner(random_state=7).fit(X[:150], S[:150])
    b = DstPllLearner(random_state=7).fit(X[:150], S[:150])
    assert np.array_equal(a.predict(X[150:]), b.predict(X[150:]))
    assert np.array_equal(a.confidences_, b.confidences_)
    np.testing.assert_array_equal(a.reject_score(X[150:]), b.reject_score(X[150:]))
    assert np.array_equal(a.predict(X[150:])[::-1], a.predict(X[150:][::-1]))
    assert np.array_equal(a.predict(X[160:170]), a.predict(X[150:])[10:20])


# ----------------------------------------------------------------------------- runs
def test_kfold_logs_the_reject_metrics_and_curve():
    X, S, y = make_pl_data(n_samples=300, n_classes=5, r=2, random_state=0, cluster_std=4.0)
    res = kfold(DstPllLearner(random_state=0), PLDataset(X, S, y), n_splits=3, random_state=0, progress=False,
                refit=False)
    for step in res.steps:
        rows = [r for r in res.predictions if r["step"] == step["step"]]
        r = np.array([row["reject_score"] for row in rows])
        correct = np.array([row["y_true"] == row["y_pred"] for row in rows])
        assert step["accepted_fraction"] == pytest.approx(np.mean(r > 0))
        assert step["accepted_accuracy"] == pytest.approx(correct[r > 0].mean())
        assert step["rejection_risk_0.1"] == pytest.approx(1 - correct[r > 0].mean() + 0.1 * np.mean(r <= 0))
    for key in ("accepted_fraction", "accepted_accuracy", "rejection_risk_0.1"):
        assert res.summary[f"{key}_mean"] == pytest.approx(np.mean([s[key] for s in res.steps]))
    c = res.curves
    assert len(c["reject_curve_threshold"]) == 201 and c["reject_curve_threshold"][100] == 0.0
    all_r = np.array([row["reject_score"] for row in res.predictions])
    assert c["reject_curve_fraction_rejected"][100] == pytest.approx(np.mean(all_r <= 0))
    assert c["reject_curve_fraction_rejected"][0] == 0.0 or np.any(all_r <= -1)
    plain = kfold(DstPllLearner(random_state=0), PLDataset(X, S), n_splits=3, progress=False, refit=False)
    assert "accepted_fraction" not in plain.steps[0] and "reject_score" in plain.predictions[0]
    assert not plain.curves


def test_predict_abstains_where_the_reject_score_is_not_positive(tmp_path):
    """A logged DST-PLL model: ``abstain=true`` writes ``abstain`` for rows with r <= 0 and a
    ``reject_score`` column; the run logged the reject metrics and curve; a model without a
    reject option refuses ``abstain=true`` in one line."""
    import mlflow
    from sklearn.datasets import load_iris

    from plcore.run.predict import load_run_model, main

    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    for learner in ("dstpll", "plknn"):
        proc = subprocess.run([sys.executable, "-m", "plcore", f"+learner={learner}", "dataset=iris", "bags.r=1",
                               "protocol.n_splits=2", "seed=0"], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = mlflow.tracking.MlflowClient(tracking_uri=uri)
    runs = {r.info.run_name: r for r in client.search_runs([client.get_experiment_by_name("plcore").experiment_id])}
    run = runs["dstpll · iris · kfold"]
    assert {"accepted_fraction_mean", "accepted_accuracy_mean", "rejection_risk_0.1_mean"} <= set(run.data.metrics)
    curves = {a.path for a in client.list_artifacts(run.info.run_id, "curves")}
    assert "curves/reject_curve_accuracy.txt" in curves
    out = tmp_path / "abstain.csv"
    main([f"run={run.info.run_id}", "data=iris", "abstain=true", f"tracking_uri={uri}", f"out={out}"])
    with open(out) as fh:
        rows = list(csv.DictReader(fh))
    model, _, _ = load_run_model(run, uri)
    X = model.encode(load_iris().data)
    r = model.pipeline[:-1].transform(X)
    r = model.pipeline[-1].reject_score(r)
    labels = model.predict(load_iris().data)
    assert list(rows[0])[-1] == "reject_score" and len(rows) == 150
    assert [row["label"] for row in rows] == [str(c) if v > 0 else "abstain" for c, v in zip(labels, r)]
    np.testing.assert_allclose([float(row["reject_score"]) for row in rows], r, atol=1e-5)
    assert 0 < sum(row["label"] == "abstain" for row in rows) < 150
    with pytest.raises(ConfigError, match="has no reject option"):
        main([f"run={runs['plknn · iris · kfold'].info.run_id}", "data=iris", "abstain=true", f"tracking_uri={uri}",
              f"out={tmp_path / 'x.csv'}"])
