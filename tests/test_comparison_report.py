"""The comparison report of a sweep (plcore.run.comparison_report): runs -> scores with their
split check, every protocol's metric, the files, the parent run, and the end-to-end command."""

import numpy as np
import pytest
from scipy import stats

from plcore.exceptions import ConfigError
from plcore.run.comparison_report import comparison_report, method_and_dataset, split_key, sweep_scores
from plcore.run.runs import RunRecord

_T = iter(range(10**6))


def _run(method, dataset, steps, *, protocol="kfold", seed="0", fingerprint=None, params=None, overrides=None,
         extra_steps=None):
    """A finished run as load_runs returns it, its per-split metric(s) already read."""
    metric = {"kfold": "accuracy", "holdout": "accuracy", "online": "mistake_rate_final", "clustering": "acc",
              "plench": "cr_accuracy"}[protocol]
    tags = {"protocol": protocol, "dataset": dataset, "seed": seed,
            "dataset.fingerprint": fingerprint or f"fp-{dataset}",
            "overrides": overrides or f"+learner={method} dataset={dataset}"}
    rec = RunRecord(run_id=f"{method}-{dataset}-{next(_T)}", name=f"{method} · {dataset} · {protocol}",
                    params={"protocol.name": protocol, "protocol.n_splits": "5", **(params or {})}, metrics={},
                    tags=tags, start_time=next(_T))
    rec._history[metric] = np.asarray(steps, dtype=float)
    for key, values in (extra_steps or {}).items():
        rec._history[key] = np.asarray(values, dtype=float)
    return rec


RNG = np.random.RandomState(0)
LEVEL = {"a": 0.8, "b": 0.7, "c": 0.6}
DATA = ["d1", "d2", "d3", "d4"]
SCORES = {(m, d): LEVEL[m] - 0.05 * i + RNG.normal(0, 0.02, 5) for m in LEVEL for i, d in enumerate(DATA)}


def test_scores_are_the_runs_per_split_values_keyed_by_method_and_data_set():
    runs = [_run(m, d, v) for (m, d), v in SCORES.items()]
    scores, cells = sweep_scores(runs, "kfold", "accuracy")
    assert set(scores) == set(SCORES)
    for key, values in SCORES.items():
        np.testing.assert_array_equal(scores[key], values)
    # the latest run of a cell wins (a re-run replaces the first)
    rerun = _run("a", "d1", [0.1] * 5)
    scores, _ = sweep_scores(runs + [rerun], "kfold", "accuracy")
    np.testing.assert_array_equal(scores[("a", "d1")], [0.1] * 5)


def test_runs_on_other_splits_are_refused_in_one_line():
    for changed in ({"seed": "1"}, {"fingerprint": "other-data"}, {"params": {"protocol.n_splits": "10"}}):
        runs = [_run(m, d, v) for (m, d), v in SCORES.items() if m != "c"]
        runs.append(_run("c", "d2", SCORES[("c", "d2")], **changed))
        with pytest.raises(ConfigError) as err:
            sweep_scores(runs, "kfold", "accuracy")
        message = str(err.value)
        assert "\n" not in message and message.startswith("cannot compare on 'd2'") and "same splits" in message
    # settings that do not change the splits are free: a method may preprocess or select as it likes
    runs = [_run(m, d, v, params={"protocol.preprocessing": m, "protocol.select.method": "grid"})
            for (m, d), v in SCORES.items()]
    assert len(sweep_scores(runs, "kfold", "accuracy")[0]) == len(SCORES)
    assert split_key(runs[0], 5) == split_key(runs[-1], 5).replace("fp-d4", "fp-d1")


def test_varying_settings_name_the_methods_and_data_sets():
    runs = [_run("plknn", "lost", [0.5, 0.6], params={"learner.k": str(k), "bags.r": str(r), "learner.n_jobs": str(k)})
            for k in (3, 5) for r in (1, 2)]
    labels = sorted(method_and_dataset(runs).values())
    assert labels == [("plknn[learner.k=3]", "lost[bags.r=1]"), ("plknn[learner.k=3]", "lost[bags.r=2]"),
                      ("plknn[learner.k=5]", "lost[bags.r=1]"), ("plknn[learner.k=5]", "lost[bags.r=2]")]
    # logged values, defaults filled in: a default given on the command line names nothing
    same = [_run("ipal", "lost", [0.5, 0.6], params={"learner.k": "10"}, overrides="+learner=ipal learner.k=10"),
            _run("ipal", "lost", [0.5, 0.6], params={"learner.k": "10"})]
    assert set(method_and_dataset(same).values()) == {("ipal", "lost")}
    # a setting of one method (the deep learners' epochs in the field table) does not name the others
    mixed = [_run("proden", "lost", [0.5, 0.6], params={"learner.n_epochs": "50"}),
             _run("plknn", "lost", [0.5, 0.6], params={"learner.k": "10"})]
    assert sorted(method_and_dataset(mixed).values()) == [("plknn", "lost"), ("proden", "lost")]
    # how a run was carried out names nothing: runs made before a deep learner logged its threads
    threads = [_run("proden", "lost", [0.5, 0.6], params={"learner.n_epochs": "50"}),
               _run("proden", "msrc-v2", [0.5, 0.6], params={"learner.n_epochs": "50", "learner.n_threads": "auto",
                                                            "learner.n_threads_used": "1"})]
    assert sorted(method_and_dataset(threads).values()) == [("proden", "lost"), ("proden", "msrc-v2")]
    # another bag generator is another data set; a method tuned on the test labels says so
    bags = [_run("plknn", "iris", [0.5, 0.6], params={"bags._target_": "plcore.datasets.bags.UniformBags",
                                                       "bags.r": "1"}),
            _run("plknn", "iris", [0.5, 0.6], params={"bags._target_": "plcore.datasets.bags.FlipBags", "bags.p": "0.3"})]
    bags[1].tags["selection"] = "oracle"
    assert sorted(method_and_dataset(bags).values()) == [
        ("plknn", "iris[bags._target_=UniformBags,bags.r=1]"),
        ("plknn (ORACLE)", "iris[bags._target_=FlipBags,bags.p=0.3]")]


def test_a_seed_sweep_is_refused_not_merged():
    runs = [_run("plknn", "iris", [0.5, 0.6], seed=str(seed)) for seed in (0, 1)]
    with pytest.raises(ConfigError, match=r"^runs of 'plknn' on 'iris' were made on other splits \(seed=0 vs 1\)"):
        sweep_scores(runs, "kfold", "accuracy")
    rerun = [_run("plknn", "iris", [0.5, 0.6]), _run("plknn", "iris", [0.7, 0.8])]   # same splits: the latest wins
    scores, _ = sweep_scores(rerun, "kfold", "accuracy")
    np.testing.assert_array_equal(scores[("plknn", "iris")], [0.7, 0.8])


def test_report_tables_tests_and_diagram(tmp_path):
    runs = [_run(m, d, v) for (m, d), v in SCORES.items()]
    report = comparison_report(runs, tmp_path / "cmp.md", reference="a")
    c = report.comparisons["accuracy"]
    means = np.array([[SCORES[(m, d)].mean() for m in "abc"] for d in DATA])
    chi2, p = stats.friedmanchisquare(*means.T)
    assert c.friedman == pytest.approx((chi2, p))
    np.testing.assert_allclose(c.ranks, [1, 2, 3])
    for other in "bc":
        wins = sum(stats.ttest_rel(SCORES[("a", d)], SCORES[(other, d)]).pvalue < 0.05 for d in DATA)
        assert c.wtl[other] == (wins, len(DATA) - wins, 0)
    text = (tmp_path / "cmp.md").read_text()
    assert f"| a | **{SCORES[('a', 'd1')].mean():.3f} ± {SCORES[('a', 'd1')].std():.3f}**" in text
    assert "![critical-difference diagram" in text and "(cmp_cd_accuracy.svg)" in text
    tex = (tmp_path / "cmp.tex").read_text()
    assert r"\toprule" in tex and r"\midrule" in tex and r"\bottomrule" in tex
    assert rf"$\mathbf{{{SCORES[('a', 'd1')].mean():.3f}}} \pm" in tex
    png, svg = tmp_path / "cmp_cd_accuracy.png", tmp_path / "cmp_cd_accuracy.svg"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and "<svg" in svg.read_text()[:500]
    assert report.files == [tmp_path / "cmp.md", tmp_path / "cmp.tex", png, svg]


def test_online_mistake_rates_rank_lower_as_better(tmp_path):
    runs = [_run(m, d, 1 - v, protocol="online") for (m, d), v in SCORES.items()]
    report = comparison_report(runs, tmp_path / "online.md")
    c = report.comparisons["mistake_rate_final"]
    assert not c.greater_is_better
    np.testing.assert_allclose(c.ranks, [1, 2, 3])          # a makes the fewest mistakes everywhere
    text = (tmp_path / "online.md").read_text()
    assert "lower is better" in text
    assert f"| a | **{(1 - SCORES[('a', 'd1')]).mean():.3f}" in text   # the lowest rate is the bold one


def test_clustering_compares_acc_and_nmi(tmp_path):
    runs = [_run(m, d, v, protocol="clustering", extra_steps={"nmi": v[::-1] / 2}) for (m, d), v in SCORES.items()]
    report = comparison_report(runs, tmp_path / "clu.md")
    assert set(report.comparisons) == {"acc", "nmi"}
    assert report.comparisons["nmi"].mean[("a", "d1")] == pytest.approx(SCORES[("a", "d1")].mean() / 2)
    assert (tmp_path / "clu_cd_nmi.svg").exists()


def test_plench_compares_the_label_free_selections_per_trial(tmp_path):
    runs = [_run(m, d, v, protocol="plench", extra_steps={"aa_accuracy": v + 0.01}) for (m, d), v in SCORES.items()]
    report = comparison_report(runs, tmp_path / "plench.md")
    assert set(report.comparisons) == {"cr_accuracy", "aa_accuracy"}
    assert report.comparisons["aa_accuracy"].mean[("a", "d1")] == pytest.approx(SCORES[("a", "d1")].mean() + 0.01)
    assert "5 trials" in (tmp_path / "plench.md").read_text()


def test_two_methods_get_no_diagram_but_a_table(tmp_path):
    runs = [_run(m, d, v) for (m, d), v in SCORES.items() if m != "c"]
    report = comparison_report(runs, tmp_path / "two.md")
    assert report.diagrams == [] and "No critical-difference diagram" in report.markdown
    assert comparison_report([], tmp_path / "none.md") is None


@pytest.mark.slow
def test_sweep_ends_with_the_comparison_and_its_parent_run_holds_it(tmp_path, plcore_cli):
    args = ["-m", "+learner=plknn", "learner.k=1,5,15", "dataset=iris,wine,digits", "bags.r=1", "protocol.n_splits=3",
            "progress=false", "report=comparison", "hydra.callbacks.comparison.reference='plknn[learner.k=5]'"]
    proc = plcore_cli(args, tmp_path)
    tail = proc.stdout.strip().splitlines()[-4:]
    assert tail[0].startswith("comparison written to ") and tail[1].startswith("critical-difference diagram: ")
    assert tail[1].endswith("comparison_cd_accuracy.png") and tail[2].endswith("comparison_cd_accuracy.svg")
    assert "| PL-KNN[learner.k=1] |" in proc.stdout and "Friedman chi2 = " in proc.stdout

    import mlflow

    client = mlflow.tracking.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp = client.get_experiment_by_name("plcore")
    runs = client.search_runs([exp.experiment_id])
    (parent,) = [r for r in runs if "plcore.comparison.of" in r.data.tags]
    children = [r for r in runs if r is not parent]
    assert len(children) == 9 and all(r.data.tags["mlflow.parentRunId"] == parent.info.run_id for r in children)
    assert parent.info.status == "FINISHED"
    assert {a.path for a in client.list_artifacts(parent.info.run_id)} == {
        "comparison.md", "comparison.tex", "comparison_cd_accuracy.png", "comparison_cd_accuracy.svg"}
    # the table's means are the runs' own, and its Friedman p-value SciPy's on them
    means = {(r.data.tags["overrides"].split()[1], r.data.tags["dataset"]): r.data.metrics["accuracy_mean"]
             for r in children}
    M = np.array([[means[(f"learner.k={k}", d)] for k in (1, 5, 15)] for d in ("iris", "wine", "digits")])
    assert parent.data.metrics["accuracy/friedman_p"] == pytest.approx(stats.friedmanchisquare(*M.T).pvalue)
    sweep = tail[0].split()[3].rsplit("/", 1)[0]
    text = (tmp_path / sweep / "comparison.md").read_text()
    assert f"{means[('learner.k=1', 'iris')]:.3f} ± " in text

    # rebuilt from the database: the same table; runs made on other splits are refused in one line
    again = plcore_cli(["report", "--kind", "comparison", "--out", str(tmp_path / "again.md"), "--no-log"], tmp_path)
    assert "| PL-KNN[learner.k=15] |" in again.stdout
    plcore_cli(["+learner=ipal", "dataset=iris", "bags.r=1", "protocol.n_splits=3", "progress=false", "seed=1"], tmp_path)
    refused = plcore_cli(["report", "--kind", "comparison", "--no-log"], tmp_path, check=False)
    assert refused.returncode == 2
    (line,) = refused.stderr.strip().splitlines()
    assert line.startswith("error: cannot compare on 'iris': the methods were not run on the same splits")


def test_methods_are_printed_by_their_display_names_and_keep_their_option_names(tmp_path):
    """Each component's display name, declared once in its spec: ``PL-KNN``, ``Avg Pegasos``,
    ``CENDA + PL-KNN`` in the tables, the LaTeX and the diagram; the settings suffix stays as the
    command line writes it, and a line gives each row's option name, which ``reference`` takes as
    well as the printed name (any case)."""
    runs = []
    for i, d in enumerate(DATA):
        runs.append(_run("plknn", d, SCORES[("a", d)], params={"learner.k": "5"}))
        runs.append(_run("plknn", d, SCORES[("c", d)], params={"learner.k": "10"}))
        runs.append(_run("avg_pegasos", d, SCORES[("b", d)]))
        runs.append(_run("cenda+plknn", d, SCORES[("b", d)] - 0.05,
                         params={"reducer._target_": "plcore_cenda.reducers.CendaReducer",
                                 "learner._target_": "plcore.learners.plknn.PlKnnLearner"}))
        runs.append(_run("mystery", d, SCORES[("c", d)] - 0.1))    # a component no plugin declares
    renamed = _run("x", "d1", [0.5] * 5, params={"learner._target_": "plcore_baselines.ipal.IpalLearner"})
    renamed.name = "my own run name"                               # tracking.run_name: the class names it
    report = comparison_report(runs, tmp_path / "cmp.md", reference="pl-knn[learner.k=5]")
    c = report.comparisons["accuracy"]
    assert c.reference == "plknn[learner.k=5]"
    names = {"plknn[learner.k=5]": "PL-KNN[learner.k=5]", "plknn[learner.k=10]": "PL-KNN[learner.k=10]",
             "avg_pegasos": "Avg Pegasos", "cenda+plknn": "CENDA + PL-KNN", "mystery": "mystery"}
    assert c.labels == names
    text = (tmp_path / "cmp.md").read_text()
    rows = [line.split("|")[1].strip() for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    assert rows[0] == "method" and sorted(rows[1:]) == sorted(names.values())
    assert "| method | d1 | d2 | d3 | d4 | average rank | PL-KNN[learner.k=5]: win/tie/loss |" in text
    assert ("The rows' option names (for the command line and the reference option): PL-KNN[learner.k=5] "
            "`plknn[learner.k=5]`, ") in text and "CENDA + PL-KNN `cenda+plknn`" in text
    tex = (tmp_path / "cmp.tex").read_text()
    assert "Avg Pegasos & " in tex and "PL-KNN[learner.k=5]: W/T/L" in tex and "avg\\_pegasos" not in tex
    from plcore.run.comparison_report import method_names

    assert method_names([renamed]) == {"IpalLearner": "IPAL"}
    for given in ("avg_pegasos", "Avg Pegasos", "AVG PEGASOS"):
        again = comparison_report(runs, tmp_path / "again.md", reference=given)
        assert again.comparisons["accuracy"].reference == "avg_pegasos"


def test_without_a_reference_the_best_ranked_method_counts_win_tie_loss(tmp_path):
    """A paper counts its method's wins against each other; by default that is the method of the
    best average rank (the page says so, and its rebuild command adds no ``--reference``)."""
    runs = [_run(m, d, v) for (m, d), v in SCORES.items()]
    report = comparison_report(runs, tmp_path / "cmp.md", sweep_dir="multirun/x")
    c = report.comparisons["accuracy"]
    assert c.reference == "a" and c.ranks[0] == c.ranks.min()
    assert c.wtl == compare_wtl(runs, "a")
    text = (tmp_path / "cmp.md").read_text()
    assert "| a: win/tie/loss |" in text and "where a (the best average rank; `reference=` picks another)" in text
    assert "`python -m plcore report --kind comparison --sweep-dir multirun/x`" in text


def compare_wtl(runs, reference):
    from plcore.stats import win_tie_loss

    return win_tie_loss(sweep_scores(runs, "kfold", "accuracy")[0], reference)


@pytest.mark.slow
def test_the_readmes_comparison_command_gives_what_its_comment_promises(tmp_path, plcore_cli):
    """README: ``python -m plcore -m +learner=... dataset=... report=comparison  # table,
    win/tie/loss, Friedman, CD diagram``. Its methods on two embedded data sets (its own live in the
    data home) print all four: three or more methods, and win/tie/loss without a reference."""
    import shlex
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    (line,) = [l for l in readme.splitlines() if l.startswith("python -m plcore -m ") and "report=comparison" in l]
    command, _, comment = line.partition("#")
    assert [part.strip() for part in comment.split(",")] == ["table", "win/tie/loss", "Friedman", "CD diagram"]
    args = [a for a in shlex.split(command)[3:] if not a.startswith("dataset=")]
    proc = plcore_cli(args + ["dataset=iris,wine", "bags.r=1", "protocol.n_splits=3", "progress=false"], tmp_path)
    header = next(l for l in proc.stdout.splitlines() if l.startswith("| method |"))
    assert header.endswith(": win/tie/loss |")                                  # table, win/tie/loss
    assert "Friedman chi2 = " in proc.stdout                                     # Friedman
    diagrams = [l for l in proc.stdout.splitlines() if l.startswith("critical-difference diagram: ")]
    assert [Path(l.split(": ")[1]).suffix for l in diagrams] == [".png", ".svg"]  # CD diagram


def test_an_unknown_reference_is_refused_in_one_line(tmp_path):
    runs = [_run(m, d, v) for (m, d), v in SCORES.items()]
    with pytest.raises(ConfigError, match=r"^reference method 'z' is not among the compared: a, b, c$"):
        comparison_report(runs, tmp_path / "cmp.md", reference="z")
    assert list(tmp_path.iterdir()) == []  # nothing half-written


@pytest.mark.slow
def test_online_sweep_compares_the_last_trials_mistake_rate(tmp_path, plcore_cli):
    """The online protocol end to end: per-run mistake rates at the last trial, lowest best."""
    proc = plcore_cli(["-m", "+learner=avg_perceptron,max_perceptron,avg_pegasos", "dataset=iris,wine,digits",
                       "bags.r=1", "protocol=online", "protocol.n_runs=3", "progress=false", "report=comparison",
                       "tracking.log_model=false"], tmp_path)
    assert "## mistake_rate_final (online, 3 runs; lower is better)" in proc.stdout

    from plcore.run.runs import load_runs

    runs = load_runs(f"sqlite:///{tmp_path / 'mlflow.db'}", experiment_name="plcore")
    report = comparison_report(runs, tmp_path / "again.md")
    c = report.comparisons["mistake_rate_final"]
    for r in runs:
        method, dataset = r.name.split(" · ")[:2]
        steps = r.steps("mistake_rate_final")
        assert steps.size == 3 and c.mean[(method, dataset)] == pytest.approx(r.metrics["mistake_rate_final_mean"])
    means = np.array([[c.mean[(m, d)] for m in c.methods] for d in c.datasets])
    np.testing.assert_allclose(c.ranks, stats.rankdata(means, axis=1).mean(axis=0))  # the lowest rate ranks 1


@pytest.mark.slow
def test_a_presets_own_report_and_the_comparison_run_side_by_side(tmp_path, plcore_cli):
    """report=comparison has its own callback key: a sweep that also writes a preset's report
    (report=reproduction here) gets both."""
    out = tmp_path / "rep.md"
    proc = plcore_cli(["-m", "+learner=plknn", "learner.k=1,5,15", "dataset=iris,wine", "bags.r=1",
                       "protocol.n_splits=2", "progress=false", "report=comparison",
                       "++hydra.callbacks.report._target_=plcore.run.callbacks.ReportCallback",
                       f"++hydra.callbacks.report.output={out}", "++hydra.callbacks.report.writer=summary"], tmp_path)
    assert f"report written to {out}" in proc.stdout and out.read_text().startswith("# Sweep summary")
    assert "critical-difference diagram: " in proc.stdout and "logged to the MLflow parent run " in proc.stdout


def test_latex_escapes_what_tex_would_misread(tmp_path):
    from plcore.stats import compare, latex_table

    runs = [_run(m, d, v) for (m, d), v in SCORES.items()]
    runs += [_run("x_y<1>|%", d, SCORES[("c", d)] - 0.1) for d in DATA]
    tex = latex_table(compare(sweep_scores(runs, "kfold", "accuracy")[0]))
    assert r"x\_y\textless{}1\textgreater{}\textbar{}\%" in tex and "x_y" not in tex


def test_the_parent_run_is_reused_and_never_steals_another_comparisons_runs(tmp_path):
    """Two comparisons of one sweep share a parent; a run another comparison holds stays there."""
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    from plcore.run.comparison_report import log_parent_run
    from plcore.run.runs import load_runs

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("plcore", artifact_location=(tmp_path / "mlruns").as_uri())
    for (m, d), values in SCORES.items():
        run = client.create_run(exp, run_name=f"{m} · {d} · kfold",
                                tags={"protocol": "kfold", "dataset": d, "seed": "0", "dataset.fingerprint": d,
                                      "hydra.sweep.dir": "multirun/x"})
        client.log_batch(run.info.run_id, metrics=[Metric("fold/accuracy", float(v), 0, i) for i, v in enumerate(values)],
                         params=[])
        client.set_terminated(run.info.run_id)
    other = client.create_run(exp, run_name="elsewhere")
    held = load_runs(uri, experiment_name="plcore", sweep_dir="multirun/x")[0]
    client.set_tag(held.run_id, "mlflow.parentRunId", other.info.run_id)

    parents = set()
    for out in ("one.md", "two.md"):
        runs = load_runs(uri, experiment_name="plcore", sweep_dir="multirun/x")
        report = comparison_report(runs, tmp_path / out, sweep_dir="multirun/x")
        assert len(report.runs) == len(SCORES)
        parents.add(log_parent_run(uri, "plcore", report, "multirun/x"))
    (parent,) = parents
    assert {a.path for a in client.list_artifacts(parent)} >= {"one.md", "two.md", "one_cd_accuracy.svg"}
    nested = {r.info.run_id: r.data.tags.get("mlflow.parentRunId") for r in client.search_runs([exp])}
    assert nested[held.run_id] == other.info.run_id
    assert sum(p == parent for p in nested.values()) == len(SCORES) - 1
    # the run list folds the nested runs under the parent's row: its description says so (docs/mlflow_ui.md)
    note = client.get_run(parent).data.tags["mlflow.note.content"]
    assert note.startswith(f"The comparison of {len(SCORES)} runs (multirun/x); {len(SCORES) - 1} of them are nested "
                           "under this run: in the experiment's run list, the button left of this run's name unfolds")


def test_runs_without_true_labels_are_compared_by_their_label_free_estimates(tmp_path):
    """Issue 55: a data set with candidate sets only gives runs with covering rates, no accuracy;
    the report compares them in sections of their own, never as accuracy 0 or a missing cell,
    beside the accuracy section of the data sets with true labels."""
    labelled = [_run(m, d, SCORES[(m, d)]) for m in LEVEL for d in ("d1", "d2")]
    free = []
    for m in LEVEL:
        rec = _run(m, "mine", [], extra_steps={"covering_rate": LEVEL[m] + 0.1 + RNG.normal(0, 0.01, 5),
                                                "approximated_accuracy": LEVEL[m] + RNG.normal(0, 0.01, 5)})
        del rec._history["accuracy"]
        free.append(rec)
    report = comparison_report(labelled + free, tmp_path / "cmp.md")
    assert set(report.comparisons) == {"accuracy", "covering_rate", "approximated_accuracy"}
    acc, cr = report.comparisons["accuracy"], report.comparisons["covering_rate"]
    assert {d for _, d in acc.mean} == {"d1", "d2"} and {d for _, d in cr.mean} == {"mine"}
    assert {m for m, _ in cr.mean} == set(LEVEL)
    for m in LEVEL:
        assert cr.mean[(m, "mine")] == pytest.approx(float(np.mean(free[list(LEVEL).index(m)]._history["covering_rate"])))
    assert "covering_rate (kfold" in report.markdown and "| mine" not in report.markdown.split("## covering")[0]
