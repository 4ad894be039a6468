"""Clean labels out (issue 64): the noise model against its generator and a brute-force posterior,
out-of-fold throughout, the acceptance figures on digits, and ``python -m plcore clean`` as a user
types it (the file, its columns, bad input in one line with nothing written)."""

import dataclasses
import itertools

import numpy as np
import pandas as pd
import pytest
from scipy.special import softmax

from plcore.metrics import expected_calibration_error
from plcore.run.label_cleaning import clean_labels, fit_noise_model, out_of_fold_proba, posterior


def _noisy_sets(y, n_classes, q, eta, rng):
    """PiCO+'s noisy partial labels: each false label joins with probability q, the true one is
    left out with probability eta (a set left empty is drawn again, as ``bags=noisy`` does)."""
    S = np.zeros((y.size, n_classes), dtype=bool)
    empty = np.ones(y.size, dtype=bool)
    while empty.any():
        rows = np.flatnonzero(empty)
        S[rows] = rng.random((rows.size, n_classes)) < q
        S[rows, y[rows]] = rng.random(rows.size) >= eta
        empty = ~S.any(axis=1)
    return S


def test_the_noise_model_recovers_its_generator_from_candidate_sets_alone():
    rng = np.random.default_rng(0)
    n, n_classes = 6000, 8
    logits = rng.normal(0, 2.0, (n, n_classes))
    y = np.array([rng.choice(n_classes, p=p) for p in softmax(logits, axis=1)])
    S = rng.random((n, n_classes)) < 0.4  # exactly the model's generator (the few empty sets left out)
    S[np.arange(n), y] = rng.random(n) >= 0.2
    keep = S.any(axis=1)
    P_soft = softmax(logits / 2.0, axis=1)  # the model's probabilities, too soft by a factor 2
    noise = fit_noise_model(P_soft[keep], S[keep])
    assert noise["q"] == pytest.approx(0.4, abs=0.015) and noise["eta"] == pytest.approx(0.2, abs=0.03)
    assert noise["missing"] == pytest.approx(1 - S[keep][np.arange(keep.sum()), y[keep]].mean(), abs=0.03)
    assert noise["temperature"] == pytest.approx(0.5, rel=0.1)  # undoes the softening


def _textbook_noise_fit(P, S):
    """eq. 1' (eq. 1 over the chance of a non-empty set) maximised by Nelder-Mead over (log T,
    logit q, logit eta) jointly, from 9 starts."""
    from scipy.optimize import minimize
    from scipy.special import expit

    size, Q = S.sum(axis=1), S.shape[1]

    def nll(theta):
        T, q, eta = np.exp(theta[0]), expit(theta[1]), expit(theta[2])
        pt = softmax(np.log(np.clip(P, 1e-12, None)) / T, axis=1)
        m_in = (pt * S).sum(axis=1)
        like = ((1 - eta) * q ** (size - 1) * (1 - q) ** (Q - size) * m_in
                + eta * q ** size * (1 - q) ** (Q - size - 1) * (1 - m_in))
        return -np.sum(np.log(like / (1 - eta * (1 - q) ** (Q - 1))))

    fits = [minimize(nll, [np.log(t), 0.0, np.log(e / (1 - e))], method="Nelder-Mead",
                     options={"maxiter": 8000, "xatol": 1e-8, "fatol": 1e-10})
            for t in (0.3, 1.0, 3.0) for e in (0.02, 0.1, 0.3)]
    return -min(f.fun for f in fits)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_profiled_noise_fit_reaches_the_textbook_optimum(seed):
    """The fast fit (temperature profiled, q and eta by their analytic gradient) finds the same
    likelihood as a joint Nelder-Mead from many starts, on small cases of the generator."""
    rng = np.random.default_rng(seed)
    n, Q = 400, 5
    logits = rng.normal(0, 1.5, (n, Q))
    y = np.array([rng.choice(Q, p=p) for p in softmax(logits, axis=1)])
    S = rng.random((n, Q)) < 0.3
    S[np.arange(n), y] = rng.random(n) >= 0.15
    keep = S.any(axis=1)
    P = softmax(logits * rng.uniform(0.5, 2.0), axis=1)[keep]
    noise = fit_noise_model(P, S[keep])
    assert noise["log_likelihood"] == pytest.approx(_textbook_noise_fit(P, S[keep]), abs=1e-4)


@pytest.mark.parametrize("T", [0.01, 0.3, 1.0, 50.0])
def test_the_one_exp_masses_are_the_log_space_ones(T):
    """``_masses`` (one ``exp`` per entry, rows lost to float resolution redone in log space) against
    ``_parts``' logsumexp at sharp, plain and soft temperatures, with sets of every class and sets
    whose best class is far below the row's."""
    from plcore.run.label_cleaning import _masses, _parts

    rng = np.random.default_rng(3)
    P = softmax(rng.normal(0, 6.0, (300, 7)), axis=1)
    S = rng.random((300, 7)) < 0.3
    S[:5] = True
    S[5:40] = np.eye(7, dtype=bool)[P[5:40].argmin(axis=1)]  # the set's only class the row's least likely
    S[~S.any(axis=1), 0] = True
    _, want_in, want_out = _parts(P, S, T)
    got_in, got_out = _masses(np.log(np.clip(P, 1e-12, None)), S, T)
    np.testing.assert_allclose(got_in, want_in, rtol=1e-9, atol=1e-9)
    assert np.isneginf(got_out[:5]).all()
    np.testing.assert_allclose(got_out[5:], want_out[5:], rtol=1e-9, atol=1e-9)


def test_a_fit_started_near_its_temperature_finds_the_grids_optimum():
    """``fit_noise_model(near=T)`` (Brent around ``T``, ensemble selection's shortcut) reaches the
    full grid's likelihood from a start a factor 2 off, and from a start far off (the grid then)."""
    rng = np.random.default_rng(5)
    logits = rng.normal(0, 2.0, (800, 6))
    y = np.array([rng.choice(6, p=p) for p in softmax(logits, axis=1)])
    S = _noisy_sets(y, 6, q=0.3, eta=0.2, rng=rng)
    P = softmax(logits / 3.0, axis=1)
    full = fit_noise_model(P, S)
    for near in (2 * full["temperature"], full["temperature"] / 2, 80.0, 1e4, 1e-5):  # the last two: clamped
        assert fit_noise_model(P, S, near=near)["log_likelihood"] == pytest.approx(full["log_likelihood"], abs=1e-6)


def test_the_q_eta_gradient_is_the_likelihoods():
    """The objective the fit descends is eq. 1' written out, and its gradient is its derivative."""
    from scipy.optimize import check_grad
    from scipy.special import expit

    from plcore.run.label_cleaning import _parts, _q_eta_objective

    rng = np.random.default_rng(0)
    S = rng.random((50, 4)) < 0.4
    S[np.arange(50), rng.integers(0, 4, 50)] = True
    P = softmax(rng.normal(size=(50, 4)), axis=1)
    _, log_in, log_out = _parts(P, S, 0.7)
    size = S.sum(axis=1).astype(float)
    m_in = (softmax(np.log(P) / 0.7, axis=1) * S).sum(axis=1)

    def textbook(theta):
        q, eta = expit(theta[0]), expit(theta[1])
        return -np.sum(np.log(((1 - eta) * q ** (size - 1) * (1 - q) ** (4 - size) * m_in
                               + eta * q ** size * (1 - q) ** (3 - size) * (1 - m_in)) / (1 - eta * (1 - q) ** 3)))

    for theta in ([0.3, -1.2], [-1.0, -3.0], [1.5, 0.5]):
        theta = np.array(theta)
        value, _ = _q_eta_objective(theta, log_in, log_out, size, 4)
        assert value == pytest.approx(textbook(theta), rel=1e-10)
        assert check_grad(textbook, lambda t: _q_eta_objective(t, log_in, log_out, size, 4)[1], theta) < 1e-5


def test_the_posterior_is_bayes_rule_under_the_generator():
    """Eq. 2 against the posterior computed by enumerating P(y) P(S | y) for every class."""
    rng = np.random.default_rng(1)
    n_classes, q, eta, T = 4, 0.35, 0.15, 0.7
    P = softmax(rng.normal(size=(5, n_classes)), axis=1)
    S = rng.random((5, n_classes)) < 0.5
    S[:, 0] |= ~S.any(axis=1)
    noise = {"temperature": T, "q": q, "eta": eta, "rho": eta * q / ((1 - eta) * (1 - q))}
    got = posterior(P, S, noise)
    for i in range(5):
        prior = softmax(np.log(P[i]) / T)
        like = np.empty(n_classes)
        for j in range(n_classes):  # P(S | y = j): the truth kept or left out, each false label in or out
            kept = S[i, j]
            p = (1 - eta) if kept else eta
            for other in itertools.chain(range(j), range(j + 1, n_classes)):
                p *= q if S[i, other] else 1 - q
            like[j] = p
        np.testing.assert_allclose(got[i], prior * like / (prior * like).sum(), rtol=1e-9)


class _Spy:
    """A learner that remembers the rows it was fitted on and refuses to score any of them."""

    seen: list = []

    def fit(self, X, S):
        self.rows_ = {tuple(r) for r in X}
        self.q_ = S.shape[1]
        return self

    def predict_proba(self, X):
        assert not any(tuple(r) in self.rows_ for r in X), "a row scored by a model fitted on its own set"
        return np.full((X.shape[0], self.q_), 1.0 / self.q_)

    def get_params(self, deep=True):
        return {}

    def set_params(self, **params):
        return self


class _Transductive:
    """A transductive learner whose confidences are its training sets, normalised: a row whose own
    set reached the fit would show it."""

    def fit(self, X, S):
        S = np.asarray(S, dtype=float)
        self.confidences_ = S / S.sum(axis=1, keepdims=True)
        return self

    def get_params(self, deep=True):
        return {}


@pytest.mark.parametrize("learner", [_Spy, _Transductive], ids=["inductive", "transductive"])
def test_every_rows_probabilities_are_out_of_fold(learner):
    """An inductive learner never scores a row it was fitted on; a transductive one sees each
    fold's rows with every class as their set (uniform confidences here), never their own sets."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 3))
    S = rng.random((40, 3)) < 0.5
    S[:, 0] = True
    P = out_of_fold_proba(learner(), X, S, n_splits=4)
    assert P.shape == (40, 3) and np.allclose(P, 1 / 3)


def test_expected_calibration_error_is_the_textbook_sum():
    rng = np.random.default_rng(3)
    conf = rng.random(500)
    right = rng.random(500) < conf ** 2
    edges = np.linspace(0, 1, 16)
    slow = 0.0
    for lo, hi in zip(edges[:-1], edges[1:]):
        inside = (conf > lo) & (conf <= hi)
        if inside.any():
            slow += inside.mean() * abs(conf[inside].mean() - right[inside].mean())
    assert expected_calibration_error(conf, right) == pytest.approx(slow)


def test_digits_with_noisy_sets_meets_the_issues_figures():
    """Issue 64's figure: digits, each false label a candidate with probability 0.25, the truth
    removed from 15% of the sets: label right on >= 95% of the rows whose truth is in the set,
    suspect AUROC >= 0.90 for the others, ECE of confidence <= 0.05."""
    from sklearn.metrics import roc_auc_score

    from plcore.datasets import load_dataset
    from plcore.registry import get_registry
    from plcore.run.pipeline import build_pipeline
    from plcore.run.protocols import apply_bags

    registry = get_registry()
    drawn = apply_bags(load_dataset("digits"), registry.create("bags", "noisy", q=0.25, eta=0.15, random_state=0), 0)
    S = np.asarray(drawn.S.toarray() if hasattr(drawn.S, "toarray") else drawn.S, dtype=bool)
    found = clean_labels(build_pipeline([registry.create("learner", "plknn")]), drawn.X, S)
    y = drawn.y_true
    inside = S[np.arange(y.size), y]
    assert 0.12 < 1 - inside.mean() < 0.16
    assert np.mean(found.label[inside] == y[inside]) >= 0.95
    assert roc_auc_score(~inside, found.suspect) >= 0.90
    assert expected_calibration_error(found.confidence, found.label == y) <= 0.05
    assert np.all(S[np.arange(y.size), found.label])  # the label is always a candidate
    assert found.noise["missing"] == pytest.approx(1 - inside.mean(), abs=0.03)


def _crowd(tmp_path, n=200, seed=0):
    rng = np.random.default_rng(seed)
    names = np.array(["cat", "dog", "fox", "owl"])
    y = rng.integers(0, 4, n)
    table = pd.DataFrame(rng.normal(size=(n, 3)) + 2.5 * y[:, None], columns=["f1", "f2", "f3"])
    S = _noisy_sets(y, 4, q=0.25, eta=0.1, rng=rng)
    table.insert(0, "rid", [f"r{i:03d}" for i in range(n)])
    table["cands"] = [";".join(names[row]) for row in S]
    table.to_csv(tmp_path / "crowd.csv", index=False)
    return table, names[y]


def test_clean_writes_every_rows_label_from_the_command_line(tmp_path, plcore_cli):
    table, truth = _crowd(tmp_path)
    proc = plcore_cli(["clean", "dataset=file", "dataset.name_or_path=crowd.csv", "dataset.candidate_column=cands",
                       "id_column=rid", "out=clean.csv"], tmp_path)
    out = pd.read_csv(tmp_path / "clean.csv", keep_default_na=False)
    assert list(out.columns) == ["rid", "candidates", "label", "confidence", "model_label", "suspect", "flag"]
    assert out["rid"].tolist() == table["rid"].tolist() and out["candidates"].tolist() == table["cands"].tolist()
    assert all(label in cands.split(";") for label, cands in zip(out["label"], out["candidates"]))
    assert out["confidence"].between(0, 1).all() and out["suspect"].between(0, 1).all()
    assert out["flag"].tolist() == (out["suspect"] >= 0.5).tolist()
    inside = np.array([t in c.split(";") for t, c in zip(truth, table["cands"])])
    assert np.mean(out["label"].to_numpy()[inside] == truth[inside]) > 0.9  # it learned
    assert "clean.csv: 200 rows" in proc.stdout and "flagged where suspect >= 0.5" in proc.stdout
    again = plcore_cli(["clean", "dataset=file", "dataset.name_or_path=crowd.csv", "dataset.candidate_column=cands",
                        "id_column=rid", "out=clean.parquet", "tracking=none"], tmp_path)
    assert again.returncode == 0 and pd.read_parquet(tmp_path / "clean.parquet")["label"].tolist() == out["label"].tolist()


def test_clean_logs_its_file_and_summary_and_scores_data_with_true_labels(tmp_path, plcore_cli):
    import mlflow

    plcore_cli(["clean", "dataset=iris", "bags=noisy", "bags.q=0.3", "bags.eta=0.1", "out=iris.csv"], tmp_path)
    client = mlflow.tracking.MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    (run,) = client.search_runs([client.get_experiment_by_name("plcore").experiment_id])
    m = run.data.metrics
    assert m["rows"] == 150 and 0 < m["mean_confidence"] <= 1 and 0 <= m["flagged_fraction"] <= 1
    assert {"disambiguation_accuracy", "suspect_auroc", "confidence_ece", "flag_recall"} <= set(m)
    assert m["disambiguation_accuracy"] > 0.85 and run.data.params["flag_threshold"] == "0.5"
    logged = client.download_artifacts(run.info.run_id, "predictions.csv", str(tmp_path))
    assert pd.read_csv(logged)["label"].tolist() == pd.read_csv(tmp_path / "iris.csv")["label"].tolist()


@pytest.mark.parametrize("args, needle", [
    (["dataset.candidate_column=nope"], "candidate_column='nope': no such column"),
    (["dataset.name_or_path=missing.csv"], "missing.csv"),
    (["out=clean.txt"], "out=clean.txt: the file is written as CSV or Parquet by its suffix"),
    (["out=existing.csv"], "out=existing.csv: exists: not overwritten (overwrite replaces it)"),
])
def test_bad_input_is_one_line_and_nothing_is_written(tmp_path, plcore_cli, args, needle):
    _crowd(tmp_path)
    (tmp_path / "existing.csv").write_text("keep me\n")
    base = {"dataset.name_or_path": "crowd.csv", "dataset.candidate_column": "cands", "dataset.id_column": "rid",
            "out": "clean.csv"}
    for arg in args:
        key, _, value = arg.partition("=")
        base[key] = value
    proc = plcore_cli(["clean", "dataset=file", *(f"{k}={v}" for k, v in base.items()), "tracking=none"], tmp_path,
                      check=False)
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(err) == 1 and needle in err[0], proc.stderr
    assert not (tmp_path / "clean.csv").exists() and (tmp_path / "existing.csv").read_text() == "keep me\n"


@pytest.mark.parametrize("args, needle", [
    (["out=crowd.csv", "overwrite=true"], "out=crowd.csv: is the input crowd.csv: it would be overwritten"),
    (["out=folder.csv"], "out=folder.csv: is a folder; name a file to write"),
    (["out=missing/clean.csv"], "out=missing/clean.csv: its folder missing does not exist"),
    (["out=existing.csv"], "out=existing.csv: exists: not overwritten (overwrite replaces it)"),
    (["out=locked/clean.csv"], "out=locked/clean.csv: its folder locked is not writable"),
])
def test_every_output_is_checked_before_the_data_are_read(tmp_path, plcore_cli, args, needle):
    """Issue 71: ``clean out=<its own input> overwrite=true`` replaced the data with the cleaned
    table. Each bad ``out=`` is one line, exit 2, before the data are read: the same command on a
    file whose candidate column is misspelled names the output, not the column."""
    import os

    _crowd(tmp_path, n=30)
    data = (tmp_path / "crowd.csv").read_bytes()
    (tmp_path / "existing.csv").write_text("keep me\n")
    (tmp_path / "folder.csv").mkdir()
    (tmp_path / "locked").mkdir()
    (tmp_path / "locked").chmod(0o500)
    try:
        if "locked" in args[0] and os.access(tmp_path / "locked", os.W_OK):
            pytest.skip("root writes into a read-only folder")
        for column in ("cands", "nope"):
            proc = plcore_cli(["clean", "dataset=file", "dataset.name_or_path=crowd.csv",
                               f"dataset.candidate_column={column}", "id_column=rid", *args, "tracking=none"],
                              tmp_path, check=False)
            err = proc.stderr.strip().splitlines()
            assert proc.returncode == 2 and len(err) == 1 and err[0].startswith(f"error: {needle}"), proc.stderr
    finally:
        (tmp_path / "locked").chmod(0o700)
    assert (tmp_path / "crowd.csv").read_bytes() == data and (tmp_path / "existing.csv").read_text() == "keep me\n"
    assert not (tmp_path / "missing").exists() and list((tmp_path / "folder.csv").iterdir()) == []


def test_an_empty_candidate_set_and_an_unknown_protocol_are_one_line(tmp_path, plcore_cli):
    table, _ = _crowd(tmp_path, n=30)
    table.loc[3, "cands"] = ""
    table.to_csv(tmp_path / "holes.csv", index=False)
    proc = plcore_cli(["clean", "dataset=file", "dataset.name_or_path=holes.csv", "dataset.candidate_column=cands",
                       "id_column=rid", "out=clean.csv", "tracking=none"], tmp_path, check=False)
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(err) == 1 and "empty or missing candidate sets (column 'cands') at rows [3]" in err[0]
    other = plcore_cli(["clean", "protocol=kfold"], tmp_path, check=False)
    assert other.returncode == 2 and "python -m plcore clean runs protocol=clean" in other.stderr
    assert not (tmp_path / "clean.csv").exists()


def test_the_benchmark_runs_the_pool_the_choice_and_cleanlab_on_one_task():
    """benchmarks/clean.py on digits (q = 0.25, 30% of the sets missing their truth) with two of the
    pool's engines: every column filled, auto is ensemble selection from the engine of the largest
    log-likelihood and its second round, the figures where the page states them, the downstream test."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "clean.py"
    spec = importlib.util.spec_from_file_location("clean_benchmark", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    t = bench.run_task("digits", 0.25, 0.3, engines=("plknn", "ipal"))
    assert t["task"] == "digits q=0.25 eta=0.3" and t["rows"] == 1797 and 0.25 < t["removed"] < 0.32
    by = {r["engine"]: r for r in t["engines"]}
    assert set(by) == {"plknn", "ipal"}
    for r in by.values():
        assert abs(r["missing_fit"] - t["removed"]) < 0.04 and r["label_acc"] > 0.9 and r["auroc"] > 0.95
        assert r["ece"] < 0.05 and 0 < r["flagged"] < 0.4
    auto, first = t["auto"], max(by, key=lambda n: by[n]["ll"])
    assert first in auto["weights"] and set(auto["weights"]) <= set(by)
    assert sum(auto["weights"].values()) == pytest.approx(1.0) and auto["engine"] == "+".join(
        sorted(auto["weights"], key=lambda n: (-auto["weights"][n], n)))
    assert auto["ll"] >= by[first]["ll"]  # the mixture's, or its second round's: never below the best engine's
    assert auto["label_acc"] >= by[first]["label_acc"] - 0.01
    c = t["cleanlab"]
    assert 0.9 < c["label_acc"] <= 1 and 0.9 < c["auroc"] <= 1 and 0 < c["flagged"] < 0.5
    d = t["downstream"]
    assert 0.8 < d["cleaned_lr"] <= 1 and set(d["raw"]) == {"plknn", "ipal"}
    assert d["best_raw"] == max(d["raw"].values())
    assert f"| digits q=0.25 eta=0.3 ({t['removed']:.3f} removed) | plknn |" in bench.table([t])
    assert "| digits q=0.25 eta=0.3 | " + auto["engine"] in bench.verdicts([t])
    assert f"{d['cleaned_lr']:.3f}" in bench.downstream_table([t])


def test_an_id_column_named_like_an_output_column_is_refused(tmp_path, plcore_cli):
    table, _ = _crowd(tmp_path, n=30)
    table.rename(columns={"rid": "label"}).to_csv(tmp_path / "named.csv", index=False)
    proc = plcore_cli(["clean", "dataset=file", "dataset.name_or_path=named.csv", "dataset.candidate_column=cands",
                       "id_column=label", "out=clean.csv", "tracking=none"], tmp_path, check=False)
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(err) == 1 and "id_column=label: the file has a column 'label'" in err[0]
    assert not (tmp_path / "clean.csv").exists()


def _faulty(tmp_path, ids=True, labels=True):
    """``faulty.csv``: the crowd file with 2 empty ids (rows 10, 11), 2 duplicated ids on 6 rows
    (``r000``, ``r003``) and labels written two ways (``Cat``, ``Fox``), as asked."""
    table, _ = _crowd(tmp_path, n=30)
    if ids:
        table.loc[[1, 2, 5], "rid"] = "r000"
        table.loc[7, "rid"] = "r003"
        table.loc[[10, 11], "rid"] = ""
    if labels:
        table.loc[4, "cands"] = "Cat;dog"
        table.loc[6, "cands"] = "fox;Fox"
    table.to_csv(tmp_path / "faulty.csv", index=False)


_FAULTS = {
    "empty": "faulty.csv: 2 empty id(s) in column 'rid' at rows [10, 11] (file lines [12, 13]); what is written per "
             "row names them by no id",
    "duplicated": "faulty.csv: 2 duplicated id(s) in column 'rid' (e.g. 'r000', 'r003'; 6 rows hold them); rows "
                  "that share an id cannot be told apart in what is written per row",
    "alike": "faulty.csv: 4 class labels differ only in case or surrounding spaces ('Cat', 'cat'; 'Fox', 'fox'), "
             "each read as a class of its own; write each class one way",
}


def _clean_faulty(tmp_path, plcore_cli, *extra):
    return plcore_cli(["clean", "dataset=file", "dataset.name_or_path=faulty.csv", "dataset.candidate_column=cands",
                       "id_column=rid", "out=clean.csv", "tracking=none", *extra], tmp_path, check=False)


def test_duplicated_and_empty_ids_and_labels_alike_are_one_warning_line_each(tmp_path, plcore_cli):
    """Issue 71: duplicated or empty ids and labels that differ only in case passed without a word.
    Each kind is one warning line with its count and examples; the file is still cleaned."""
    _faulty(tmp_path)
    proc = _clean_faulty(tmp_path, plcore_cli)
    warned = [line for line in proc.stderr.splitlines() if "UserWarning" in line]  # an engine's own: not these
    assert proc.returncode == 0 and warned == [f"warning: UserWarning: {_FAULTS[k]}"
                                               for k in ("empty", "duplicated", "alike")], proc.stderr
    assert len(pd.read_csv(tmp_path / "clean.csv")) == 30


@pytest.mark.parametrize("kind", ["empty", "duplicated", "alike"])
def test_strict_refuses_each_kind_in_one_line(tmp_path, plcore_cli, kind):
    _faulty(tmp_path, ids=kind != "alike", labels=kind == "alike")
    if kind == "duplicated":  # the duplicated ids alone
        table = pd.read_csv(tmp_path / "faulty.csv", keep_default_na=False)
        table.loc[[10, 11], "rid"] = ["r010", "r011"]
        table.to_csv(tmp_path / "faulty.csv", index=False)
    proc = _clean_faulty(tmp_path, plcore_cli, "dataset.strict=true")
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and err == [f"error: {_FAULTS[kind]} (refused: strict=true)"], proc.stderr
    assert not (tmp_path / "clean.csv").exists()


def test_a_clean_file_warns_nothing_even_when_strict(tmp_path, plcore_cli):
    _crowd(tmp_path, n=30)
    proc = plcore_cli(["clean", "dataset=file", "dataset.name_or_path=crowd.csv", "dataset.candidate_column=cands",
                       "id_column=rid", "out=clean.csv", "tracking=none", "dataset.strict=true", "+learner=plknn"],
                      tmp_path)  # the file's checks (engine=auto may add an engine's own warnings on 30 rows)
    assert proc.returncode == 0 and "warning" not in proc.stderr.lower(), proc.stderr


def test_clean_invents_nothing(tmp_path, plcore_cli_batch):
    """Issue 73 item 3: ``clean`` draws no candidate sets unless ``bags=`` is on its command line; a
    label column that holds sets, read without ``candidate_column``, is refused naming the option;
    without ``out=`` the labels go to a file the message names (never silently nowhere), and an
    existing one is not replaced. Each refusal is one line, exit 2, and leaves no run."""
    _crowd(tmp_path, n=40)
    (tmp_path / "iris").mkdir()
    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "cleaned.csv").write_text("keep me\n")
    none = ["tracking=none"]
    cases = [(["clean", "dataset=file", "dataset.name_or_path=crowd.csv", "id_column=rid", "tracking=mlflow"],
              tmp_path, None),  # the sets' column is the last: read as the label column
             (["clean", "dataset=iris", "tracking=mlflow"], tmp_path / "iris", None),
             (["clean", "dataset=iris", "bags=uniform", "bags.r=1", *none], tmp_path / "iris", None),
             (["clean", "dataset=file", f"dataset.name_or_path={tmp_path / 'crowd.csv'}",
               "dataset.candidate_column=cands", "id_column=rid", *none], tmp_path / "taken", None),
             (["clean", "dataset=iris", "bags.r=1", "tracking=mlflow"], tmp_path / "iris", None)]
    sets_as_labels, exact, drawn, taken, setting = plcore_cli_batch(cases, tmp_path)
    for proc, needle in ((sets_as_labels, "they look like candidate sets; name that column with "
                                          "dataset.candidate_column=NAME"),
                         (exact, "data set 'iris' has exact labels only: name its candidate sets"),
                         (setting, "bags.r=... sets a bag generator's parameter, but clean draws no candidate sets "
                                   "unless bags=NAME names the generator"),
                         (taken, "out=cleaned.csv: exists: not overwritten")):
        err = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(err) == 1 and needle in err[0], proc.stderr
    assert not (tmp_path / "mlflow.db").exists() and not (tmp_path / "iris" / "mlflow.db").exists()
    assert (tmp_path / "taken" / "cleaned.csv").read_text() == "keep me\n"
    assert drawn.returncode == 0, drawn.stderr
    assert "cleaned.csv: 150 rows" in drawn.stdout and (tmp_path / "iris" / "cleaned.csv").is_file()


def test_the_docs_list_which_learners_clean_takes():
    """docs/own_data.md lists, for every installed learner, how ``clean`` reads its per-row class
    probabilities (``predict_proba``, transductive ``confidences_``) or that it is refused."""
    import re
    import warnings
    from pathlib import Path

    from plcore.registry import get_registry
    from plcore.testing import make_pl_data

    X, S, _ = make_pl_data(n_samples=60, n_classes=3, r=1)
    routes = {"predict_proba": [], "confidences_": [], "refused": []}
    for (kind, name), comp in sorted(get_registry().components.items()):
        if kind != "learner":
            continue
        est = comp.spec.cls(**(comp.spec.test_params or {}))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            route = ("predict_proba" if hasattr(est, "predict_proba")
                     else "confidences_" if hasattr(est.fit(X, S), "confidences_") else "refused")
        routes[route].append(name)
    page = (Path(__file__).resolve().parents[1] / "docs" / "own_data.md").read_text()
    block = page.split("<!-- clean-learners -->")[1].split("<!-- /clean-learners -->")[0]
    listed = [line.split("): ", 1)[1].split(", ") for line in block.strip().splitlines()]
    assert listed == [routes["predict_proba"], routes["confidences_"], routes["refused"]]


def test_clean_reads_a_transductive_learners_confidences_and_refuses_one_without_scores(tmp_path, plcore_cli_batch):
    """Issue 73: ``clean +learner=ipal`` was refused as "Pipeline has no predict_proba"; it now
    cleans through IPAL's per-row confidences (each fold's sets hidden), and a learner with no
    probabilities at all is refused in one line naming it."""
    _crowd(tmp_path, n=80)
    base = ["clean", "dataset=file", "dataset.name_or_path=crowd.csv", "dataset.candidate_column=cands",
            "id_column=rid", "tracking=none", "progress=false"]
    ipal, plecoc = plcore_cli_batch([([*base, "+learner=ipal", "out=ipal.csv"], tmp_path, None),
                                     ([*base, "+learner=plecoc", "out=plecoc.csv"], tmp_path, None)], tmp_path)
    assert ipal.returncode == 0, ipal.stderr
    out = pd.read_csv(tmp_path / "ipal.csv", keep_default_na=False)
    assert all(label in cands.split(";") for label, cands in zip(out["label"], out["candidates"]))
    err = plecoc.stderr.strip().splitlines()
    assert plecoc.returncode != 0 and err[-1] == (
        "error: clean needs per-row class probabilities: learner 'plecoc' (PlEcocLearner) has neither predict_proba "
        "nor per-row confidences_ (the learners that qualify: docs/own_data.md, 'Clean your labels')")
    assert not (tmp_path / "plecoc.csv").exists()


class _Uniform(_Spy):
    """An engine that knows nothing: the same probability for every class."""

    def predict_proba(self, X):
        return np.full((X.shape[0], self.q_), 1.0 / self.q_)


def test_the_engine_is_the_one_whose_probabilities_explain_the_sets_best():
    """``choose_engine``: each engine's fit is :func:`clean_labels`'s, the choice ensemble selection on
    the log-likelihood of the candidate sets; an engine that knows nothing (uniform probabilities)
    changes no row's order of classes, so whatever its weight (it smooths the other's probabilities,
    which the temperature then sharpens) the labels are those of the engine that learns, on data where
    the features tell the classes apart."""
    from sklearn.datasets import load_iris

    from plcore.learners import PlKnnLearner
    from plcore.run.label_cleaning import choose_engine

    X, y = load_iris(return_X_y=True)
    S = _noisy_sets(y, 3, q=0.3, eta=0.1, rng=np.random.default_rng(0))
    keep = S.any(axis=1)
    X, S, y = X[keep], S[keep], y[keep]
    lines = []
    folds = []
    chosen, found, scores = choose_engine({"uniform": _Uniform(), "plknn": PlKnnLearner(k=5)}, X, S,
                                          echo=lines.append, on_fold=lambda k, test, proba: folds.append(k))
    alone = clean_labels(PlKnnLearner(k=5), X, S)
    assert set(chosen.weights) == {"plknn", "uniform"} and scores["plknn"] > scores["uniform"]
    assert scores == {"uniform": pytest.approx(clean_labels(_Uniform(), X, S).noise["log_likelihood"]),
                      "plknn": pytest.approx(alone.noise["log_likelihood"])}
    assert found.noise["log_likelihood"] >= scores["plknn"] and np.array_equal(found.model_label, alone.model_label)
    assert np.mean(found.label == y) > 0.85
    assert any(line.startswith("engine plknn: log-likelihood") for line in lines)
    assert folds == [0, 1, 2, 3, 4]  # the chosen engine's folds, once


def test_clean_without_a_learner_chooses_its_engine_and_says_so(tmp_path, plcore_cli_batch):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    common = ["clean", "dataset=iris", "bags=noisy", "bags.q=0.3", "bags.eta=0.1", "tracking=none"]
    auto, fixed = plcore_cli_batch([(common, tmp_path / "a", None), ([*common, "+learner=plknn"], tmp_path / "b", None)],
                                   tmp_path)
    assert auto.returncode == 0 and fixed.returncode == 0, auto.stderr + fixed.stderr
    chosen = [line for line in auto.stdout.splitlines() if "(the candidate sets' log-likelihood under each engine: " in line]
    assert len(chosen) == 1 and " chosen" in chosen[0] and "plknn " in chosen[0] and "ipal " in chosen[0]
    assert "chosen" not in fixed.stdout and (tmp_path / "b" / "cleaned.csv").is_file()


class _Recorder:
    """PL-KNN that records every row it is fitted on (across clones), so its fits can be inspected."""

    fitted_on: list = []

    def fit(self, X, S):
        from plcore.learners import PlKnnLearner

        _Recorder.fitted_on.append({tuple(r) for r in X})
        self.model_ = PlKnnLearner(k=5).fit(X, S)
        return self

    def predict_proba(self, X):
        return self.model_.predict_proba(X)

    def get_params(self, deep=True):
        return {}


def test_the_second_round_leaves_the_flagged_rows_out_and_is_kept_only_where_the_sets_are_better_explained():
    """``second_round``: every fit sees no flagged row; the round is :func:`clean_labels` with them
    left out, kept exactly when its log-likelihood of the sets is larger; nothing flagged, no round."""
    from plcore.run.label_cleaning import second_round

    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 150)
    X = rng.normal(size=(150, 2)) + 3.0 * y[:, None]
    S = _noisy_sets(y, 3, q=0.3, eta=0.3, rng=rng)
    S[~S.any(axis=1), 0] = True
    first = clean_labels(_Recorder(), X, S)
    assert 0 < first.flag.sum() < 150
    _Recorder.fitted_on = []
    found, kept = second_round(_Recorder(), X, S, first, echo=(lines := []).append)
    flagged = {tuple(r) for r in X[first.flag]}
    assert len(_Recorder.fitted_on) == 5 and not any(seen & flagged for seen in _Recorder.fitted_on)
    again = clean_labels(_Recorder(), X, S, leave_out=first.flag)
    assert kept == (again.noise["log_likelihood"] > first.noise["log_likelihood"])
    assert np.array_equal(found.suspect, (again if kept else first).suspect)
    assert len(lines) == 1 and f"{int(first.flag.sum())} flagged row(s) left out" in lines[0]
    assert lines[0].endswith("kept" if kept else "not kept")
    calm = dataclasses.replace(first, flag=np.zeros(150, dtype=bool))
    same, kept = second_round(_Recorder(), X, S, calm)
    assert same is calm and not kept


def test_clean_writes_each_classs_probability_where_asked(tmp_path, plcore_cli):
    """``protocol.probabilities=true``: one ``p:<class>`` column per class, the row's posterior (sums
    to 1, zero outside the set only where the noise model says the truth is surely inside), and its
    largest entry is ``label``'s ``confidence``."""
    _crowd(tmp_path)
    proc = plcore_cli(["clean", "dataset=file", "dataset.name_or_path=crowd.csv", "dataset.candidate_column=cands",
                       "id_column=rid", "+learner=plknn", "protocol.probabilities=true", "out=p.csv", "tracking=none"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = pd.read_csv(tmp_path / "p.csv", keep_default_na=False)
    names = ["p:cat", "p:dog", "p:fox", "p:owl"]
    assert list(out.columns)[-4:] == names and "one probability per class" in proc.stdout
    P = out[names].to_numpy()
    np.testing.assert_allclose(P.sum(axis=1), 1, atol=1e-5)
    chosen = P[np.arange(len(out)), [names.index(f"p:{label}") for label in out["label"]]]
    np.testing.assert_allclose(chosen, out["confidence"], atol=1e-5)


def _textbook_selection(probas, S):
    """Caruana et al.'s ensemble selection written out: from the bag of every engine once, every bag
    reachable by one more engine, the best kept while it raises the likelihood (each fit from the grid)."""
    bag = list(probas)
    score = fit_noise_model(np.mean([probas[b] for b in bag], axis=0), S)["log_likelihood"]
    for _ in range(10):
        tries = [(fit_noise_model(np.mean([probas[b] for b in bag + [n]], axis=0), S)["log_likelihood"], n)
                 for n in probas]
        best, name = max(tries)
        if best <= score:
            break
        bag, score = bag + [name], best
    return {n: bag.count(n) / len(bag) for n in set(bag)}, score


def test_the_mixture_is_ensemble_selection_on_the_likelihood_of_the_sets():
    """``select_mixture``: two engines each right on half the rows (and lost on the other half) are
    worth more together than either; a third that knows nothing is never added to (it keeps no more
    than its start's share); the textbook greedy's bag and likelihood."""
    from plcore.run.label_cleaning import select_mixture

    rng = np.random.default_rng(4)
    n, Q = 600, 5
    y = rng.integers(0, Q, n)
    S = _noisy_sets(y, Q, q=0.3, eta=0.2, rng=rng)
    truth = np.eye(Q)[y]
    half = np.arange(n) < n // 2
    a = np.where(half[:, None], 0.8 * truth + 0.04, rng.dirichlet(np.ones(Q), n))
    b = np.where(half[:, None], rng.dirichlet(np.ones(Q), n), 0.8 * truth + 0.04)
    noise = rng.dirichlet(np.ones(Q), n)
    probas = {"a": a, "b": b, "noise": noise}
    weights, score = select_mixture(probas, S)
    expected, expected_score = _textbook_selection(probas, S)
    assert weights == pytest.approx(expected) and score == pytest.approx(expected_score, abs=1e-6)
    assert weights["noise"] <= min(weights["a"], weights["b"]) and weights["noise"] <= 1 / 3
    assert score > max(fit_noise_model(p, S)["log_likelihood"] for p in (a, b))
    alone, alone_score = select_mixture({"a": a}, S)
    assert alone == {"a": 1.0} and alone_score == pytest.approx(fit_noise_model(a, S)["log_likelihood"])


def test_a_mixtures_probabilities_are_its_engines_weighted_and_its_second_round_refits_each():
    """``out_of_fold_proba`` of a :class:`Mixture` is the weighted sum of its engines' on the same
    folds, ``on_fold`` seeing the mixture's; its second round fits every engine without the
    flagged rows."""
    from plcore.learners import PlKnnLearner
    from plcore.run.label_cleaning import Mixture, second_round

    rng = np.random.default_rng(5)
    y = rng.integers(0, 3, 150)
    X = rng.normal(size=(150, 2)) + 3.0 * y[:, None]
    S = _noisy_sets(y, 3, q=0.3, eta=0.3, rng=rng)
    mix = Mixture({"rec": _Recorder(), "knn": PlKnnLearner(k=9)}, {"rec": 0.25, "knn": 0.75})
    seen = []
    P = out_of_fold_proba(mix, X, S, on_fold=lambda k, test, proba: seen.append((test, proba)))
    expected = 0.25 * out_of_fold_proba(_Recorder(), X, S) + 0.75 * out_of_fold_proba(PlKnnLearner(k=9), X, S)
    np.testing.assert_allclose(P, expected)
    assert len(seen) == 5 and all(np.allclose(proba, P[test]) for test, proba in seen)
    assert mix.name == "knn+rec" and mix.describe() == "knn 0.75, rec 0.25"
    first = clean_labels(mix, X, S)
    assert first.flag.any()
    _Recorder.fitted_on = []
    found, kept = second_round(mix, X, S, first)
    flagged = {tuple(r) for r in X[first.flag]}
    assert len(_Recorder.fitted_on) == 5 and not any(fit & flagged for fit in _Recorder.fitted_on)
    assert kept == (found.noise["log_likelihood"] > first.noise["log_likelihood"])
