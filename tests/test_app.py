"""The Hydra app end to end (subprocesses in a scratch directory) and MLflow tracking."""

import os
import subprocess
import sys
import urllib.parse
import urllib.request
import json

import pytest

TIMEOUT = 300


def mlflow_runs(db):
    import mlflow

    client = mlflow.tracking.MlflowClient(tracking_uri=f"sqlite:///{db}")
    exp = client.get_experiment_by_name("plcore")
    return client, client.search_runs([exp.experiment_id])


@pytest.fixture(scope="module")
def default_run(tmp_path_factory, plcore_cli):
    cwd = tmp_path_factory.mktemp("default")
    proc = plcore_cli(["protocol.n_splits=3"], cwd)
    return cwd, proc


def test_default_run_prints_summary_and_logs_finished_run(default_run):
    cwd, proc = default_run
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("accuracy_mean=") and " accuracy_std=" in last
    assert float(last.split()[0].split("=")[1]) > 0.85  # digits, r=3: far above chance 0.1
    client, runs = mlflow_runs(cwd / "mlflow.db")
    (run,) = runs
    assert run.info.status == "FINISHED"
    m = run.data.metrics
    assert {"accuracy_mean", "accuracy_std", "transductive_accuracy_mean", "fit_time_mean"} <= set(m)
    assert len(client.get_metric_history(run.info.run_id, "fold/accuracy")) == 3  # one per fold
    assert run.data.params["learner.k"] == "10" and run.data.params["bags.r"] == "3"
    assert run.data.params["learner.n_jobs"] == "None" and "bags.random_state" not in run.data.params  # seeded by
    # the protocol from `seed` (a bags.random_state would be unused: refused, see test_validation)
    assert run.data.params["protocol.exact_labels"] == "auto"  # protocol defaults completed and logged
    tags = run.data.tags
    assert tags["training_labels"] == "candidates"
    assert tags["plcore.version"] and tags["seed"] == "0" and len(tags["dataset.fingerprint"]) == 16
    assert tags["overrides"] == "protocol.n_splits=3 +learner=plknn"  # the default learner, composed
    arts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"config.yaml", "predictions.csv", "plots"} <= arts
    assert [a.path for a in client.list_artifacts(run.info.run_id, "plots")] == ["plots/accuracy_per_fold.png"]


def test_bad_parameters_fail_before_any_run_is_created(tmp_path, plcore_cli):
    """Parameters are validated before tracking starts: one line, exit 2, no run at all (a failure
    after the run exists is recorded FAILED with its traceback: tests/test_faults.py)."""
    proc = plcore_cli(["+learner=plknn", "learner.k=0", "protocol.n_splits=2"], tmp_path, check=False)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "error: The 'k' parameter of PlKnnLearner must be an int in the range [1, inf). Got 0 instead."]
    assert not (tmp_path / "mlflow.db").exists()


def test_misspelled_component_is_one_line(tmp_path, plcore_cli):
    proc = plcore_cli(["+learner=plknnn"], tmp_path, check=False)
    assert proc.returncode == 2
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and "unknown learner 'plknnn'" in err[0] and "plknn" in err[0]
    assert not (tmp_path / "mlflow.db").exists()


def test_cfg_job_and_listing(tmp_path, plcore_cli):
    proc = plcore_cli(["+learner=plknn", "learner.k=5", "dataset=lost", "--cfg", "job"], tmp_path)
    assert "k: 5" in proc.stdout and "name_or_path: lost" in proc.stdout
    preset = plcore_cli(["experiment=plknn_lost", "--cfg", "job"], tmp_path).stdout
    assert "name_or_path: lost" in preset and "k: 10" in preset and "preprocessing: standardize" in preset
    listing = plcore_cli(["list"], tmp_path).stdout
    assert "plknn" in listing and "KIND" in listing and "uniform" in listing


@pytest.mark.data
def test_real_dataset_tracking_none(tmp_path, data_home, plcore_cli):
    proc = plcore_cli(["+learner=plknn", "dataset=lost", "tracking=none", "protocol.n_splits=3"], tmp_path,
                      {"PLCORE_DATA_HOME": str(data_home)})
    assert "has its own candidate sets" in proc.stdout
    assert proc.stdout.strip().splitlines()[-1].startswith("accuracy_mean=0.")
    assert not (tmp_path / "mlflow.db").exists()


def test_env_tracking_uri_is_honoured(tmp_path, plcore_cli):
    db = tmp_path / "elsewhere.db"
    plcore_cli(["protocol.n_splits=2"], tmp_path, {"MLFLOW_TRACKING_URI": f"sqlite:///{db}"})
    assert db.exists() and not (tmp_path / "mlflow.db").exists()


def _get(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read().decode())


@pytest.mark.slow
def test_mlflow_ui_serves_the_run(default_run, mlflow_server):
    """`mlflow ui` over the default run's database serves it through the REST API."""
    cwd, _ = default_run
    base = mlflow_server(f"sqlite:///{cwd / 'mlflow.db'}", cwd, command="ui").url
    exp = _get(base + "/api/2.0/mlflow/experiments/get-by-name?experiment_name=plcore")["experiment"]
    req = urllib.request.Request(
        base + "/api/2.0/mlflow/runs/search", method="POST",
        data=json.dumps({"experiment_ids": [exp["experiment_id"]]}).encode(),
        headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        runs = json.loads(r.read().decode())["runs"]
    (run,) = runs
    assert run["info"]["status"] == "FINISHED"
    metrics = {m["key"]: m["value"] for m in run["data"]["metrics"]}
    assert metrics["accuracy_mean"] > 0.85
    q = urllib.parse.urlencode({"run_id": run["info"]["run_id"], "path": "plots"})
    files = _get(base + "/api/2.0/mlflow/artifacts/list?" + q)["files"]
    assert [f["path"] for f in files] == ["plots/accuracy_per_fold.png"]


@pytest.mark.slow
def test_primary_config_found_from_installed_wheel(tmp_path, plcore_cli):
    """A non-editable install carries conf/ as plcore/conf and the app composes from it."""
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(tmp_path / "dist"), str(repo)], check=True, timeout=TIMEOUT)
    (wheel,) = (tmp_path / "dist").glob("plcore-*.whl")
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site),
                    str(wheel)], check=True, timeout=TIMEOUT)
    env = {"PYTHONPATH": str(site)}
    code = "import plcore.run.app as a; print(a.find_conf_dir())"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=dict(os.environ, **env),
                         capture_output=True, text=True, timeout=TIMEOUT, check=True).stdout.strip()
    assert out == str(site / "plcore" / "conf")
    proc = plcore_cli(["+learner=plknn", "--cfg", "job"], tmp_path, env)
    assert "name_or_path: digits" in proc.stdout


@pytest.mark.data
def test_run_on_real_partial_labels_logs_no_bag_parameters(tmp_path, data_home, plcore_cli):
    """lost carries its own candidate sets: the default bag generator is not applied, and the
    run says so and logs no ``bags.*`` parameter (it logs exactly what ran)."""
    proc = plcore_cli(["dataset=lost", "protocol.n_splits=2", "+learner=plknn", "learner.k=3"], tmp_path,
                      {"PLCORE_DATA_HOME": str(data_home)})
    assert "bags=UniformBags not applied" in proc.stdout
    _, runs = mlflow_runs(tmp_path / "mlflow.db")
    (run,) = runs
    assert not [k for k in run.data.params if k.startswith("bags")], run.data.params
    assert run.data.params["dataset.name_or_path"] == "lost"


def test_exact_label_baseline_is_trained_on_true_labels_and_says_so(tmp_path, plcore_cli):
    proc = plcore_cli(["+learner=perceptron", "dataset=iris", "bags.r=1", "protocol.n_splits=2"], tmp_path)
    assert "trained on the true labels" in proc.stdout
    _, runs = mlflow_runs(tmp_path / "mlflow.db")
    (run,) = runs
    assert run.data.tags["training_labels"] == "exact"


def test_unknown_protocol_parameter_is_one_line(tmp_path, plcore_cli):
    proc = plcore_cli(["+protocol.n_fold=3", "tracking=none"], tmp_path, check=False)
    assert proc.returncode == 2
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and "protocol 'kfold' has no parameter(s) n_fold" in err[0], proc.stderr


def test_an_unused_bags_random_state_is_refused_in_one_line(tmp_path, plcore_cli):
    proc = plcore_cli(["bags.random_state=5", "tracking=none"], tmp_path, check=False)
    assert proc.returncode == 2
    err = proc.stderr.strip().splitlines()
    assert len(err) == 1 and "bags.random_state is not used" in err[0] and "seed=" in err[0], proc.stderr


def test_run_logs_a_model_and_predict_uses_it(default_run, plcore_cli):
    """kfold refits on all rows and logs the pipeline; ``python -m plcore predict`` applies it to
    new data by run id or run name, writing class names and one score per class."""
    import csv

    cwd, _ = default_run
    client, (run,) = mlflow_runs(cwd / "mlflow.db")
    arts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert "classes.json" in arts
    assert run.data.tags["plcore.model_format"] == "skops"  # reading it runs no code (tests/test_tracking.py)
    assert run.info.run_name == "plknn · digits · kfold"
    assert run.data.tags["mlflow.source.name"] == "python -m plcore"
    assert (run.inputs.dataset_inputs[0].dataset.name, run.inputs.dataset_inputs[0].dataset.digest) == (
        "digits", run.data.tags["dataset.fingerprint"])
    exp = client.get_experiment(run.info.experiment_id)
    assert exp.tags["mlflow.experimentKind"] == "custom_model_development"
    plcore_cli(["predict", f"run={run.info.run_id}", "data=digits", "out=by_id.csv"], cwd)
    with open(cwd / "by_id.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 1797 and rows[0].keys() == {"index", "label", *(f"score_{c}" for c in range(10))}
    assert all(abs(sum(float(r[f"score_{c}"]) for c in range(10)) - 1) < 1e-4 for r in rows[:50])
    proc = plcore_cli(["predict", f"run={run.info.run_name}", "data=digits", "out=by_name.csv"], cwd)
    assert "1797 predictions" in proc.stdout
    assert (cwd / "by_name.csv").read_text() == (cwd / "by_id.csv").read_text()
    bad = plcore_cli(["predict", f"run={run.info.run_id}", "data=iris"], cwd, check=False)
    assert bad.returncode == 2 and bad.stderr.strip().splitlines() == [
        "error: iris: the data have 4 features but the model was fitted on 64"], bad.stderr
    missing = plcore_cli(["predict", "run=no such run", "data=iris"], cwd, check=False)
    assert missing.returncode == 2 and "no FINISHED run named 'no such run'" in missing.stderr
    import numpy as np  # predict reads only the features: true labels outside the candidate sets do not matter
    np.savez(cwd / "noisy.npz", X=np.zeros((3, 64)), S=np.eye(3, 10, dtype=bool), y=np.array([1, 2, 0]))
    proc = plcore_cli(["predict", f"run={run.info.run_id}", "data=noisy.npz", "out=noisy.csv"], cwd)
    assert "3 predictions" in proc.stdout


def test_nested_selection_logs_the_choice_of_every_fold(tmp_path, plcore_cli):
    plcore_cli(["+learner=plknn", "dataset=iris", "bags.r=1", "protocol.n_splits=3", "protocol.refit=false",
                "protocol.select.method=grid", "protocol.select.space={learner.k:[3,5]}"], tmp_path)
    client, (run,) = mlflow_runs(tmp_path / "mlflow.db")
    chosen = client.get_metric_history(run.info.run_id, "selected.learner.k")
    assert sorted(m.step for m in chosen) == [0, 1, 2] and {m.value for m in chosen} <= {3.0, 5.0}
    assert run.data.params["protocol.select.method"] == "grid" and 0.5 < run.data.metrics["accuracy_mean"] <= 1


def test_online_refuses_selection_in_one_line_before_tracking(tmp_path, plcore_cli):
    proc = plcore_cli(["+learner=avg_pegasos", "protocol=online", "protocol.n_runs=2", "dataset=iris", "bags.r=1",
                       "protocol.select.method=grid"], tmp_path, check=False)
    assert proc.returncode == 2 and not (tmp_path / "mlflow.db").exists()
    assert proc.stderr.strip().splitlines() == [
        "error: protocol 'online' does not select hyperparameters: a stream has no training part to search "
        "before it is predicted; choose them with kfold/holdout and protocol.select"], proc.stderr


@pytest.mark.data
def test_relative_data_home_names_the_folder_where_the_command_was_given(tmp_path, data_home, plcore_cli):
    """``PLCORE_DATA_HOME=../shared/datasets`` from the repository root: jobs whose working
    folder is elsewhere (a sweep's launcher) still find the data."""
    import os

    work = tmp_path / "deep" / "work"
    work.mkdir(parents=True)
    relative = os.path.relpath(data_home, work)
    proc = plcore_cli(["dataset=lost", "+learner=plknn", "protocol.n_splits=2", "tracking=none",
                       "hydra.job.chdir=true"], work, {"PLCORE_DATA_HOME": relative})
    assert proc.stdout.strip().splitlines()[-1].startswith("accuracy_mean=0.")


def test_the_default_learner_takes_parameters_as_hydra_users_write_them(tmp_path, plcore_cli):
    """The default learner is the composed group ``+learner=plknn``: ``learner.k=5`` works on the
    default run and in sweeps; ``+learner.k=5``, an unknown parameter, or a parameter of an
    unselected kind is one line, exit 2, no run."""
    proc = plcore_cli(["learner.k=5", "protocol.n_splits=2"], tmp_path)
    _, (run,) = mlflow_runs(tmp_path / "mlflow.db")
    assert run.data.params["learner.k"] == "5"
    sweep = plcore_cli(["-m", "learner.k=3,5", "protocol.n_splits=2", "tracking=none", "dataset=iris", "bags.r=1"],
                       tmp_path)
    assert sweep.stdout.count("accuracy_mean=") == 2 and "learner.k=5" in sweep.stdout
    (tmp_path / "bad").mkdir()
    for args, words in ((["+learner.k=5"], "write learner.k=5"),
                        (["learner.kk=5"], "has no parameter 'kk'; its parameters: k, metric"),
                        (["reducer.thr=0.9"], "no reducer is selected: add +reducer=NAME")):
        bad = plcore_cli(args, tmp_path / "bad", check=False)
        err = bad.stderr.strip().splitlines()
        assert bad.returncode == 2 and len(err) == 1 and words in err[0], bad.stderr
    assert not (tmp_path / "bad" / "mlflow.db").exists()


def test_predict_by_a_name_several_runs_share_refuses_or_takes_the_latest(tmp_path, plcore_cli):
    """After a sweep over learner.k, several runs share one name: ``predict run=NAME`` lists
    their ids and the parameter that differs in one line; ``latest=true`` takes the newest."""
    base = ["dataset=iris", "bags.r=1", "protocol.n_splits=2"]
    plcore_cli(["-m", *base, "learner.k=3,5"], tmp_path)
    client, runs = mlflow_runs(tmp_path / "mlflow.db")
    assert len(runs) == 2 and len({r.info.run_name for r in runs}) == 1
    name = runs[0].info.run_name
    proc = plcore_cli(["predict", f"run={name}", "data=iris"], tmp_path, check=False)
    err = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(err) == 1, proc.stderr
    assert f"2 FINISHED runs are named {name!r}" in err[0] and "learner.k=3" in err[0] and "learner.k=5" in err[0]
    assert all(r.info.run_id in err[0] for r in runs)
    newest = max(runs, key=lambda r: r.info.start_time)
    ok = plcore_cli(["predict", f"run={name}", "data=iris", "latest=true", "out=p.csv"], tmp_path)
    assert newest.info.run_id in ok.stdout


def test_override_checks_leave_sweeps_over_components_to_each_job():
    """A group swept over several options (``+learner=plknn,ipal learner.k=5``,
    ``protocol=kfold,holdout protocol.test_size=0.3``) is not checked as one component."""
    from plcore.exceptions import ConfigError
    from plcore.registry import get_registry
    from plcore.run.overrides import check_overrides, compose_default_learner

    reg = get_registry()
    for argv in (["-m", "+learner=plknn,ipal", "learner.k=5"], ["-m", "protocol=kfold,holdout", "protocol.test_size=0.3"],
                 ["-m", "bags=uniform,fixed_size", "bags.random_state=null"], ["experiment=plknn_lost", "learner.zz=1"]):
        check_overrides(compose_default_learner(argv), reg)
    with pytest.raises(ConfigError, match="has no parameter 'zz'"):
        check_overrides(compose_default_learner(["-m", "+learner=plknn", "learner.zz=1,2"]), reg)
    assert compose_default_learner(["learner.k=5", "--cfg", "job"]) == ["learner.k=5", "+learner=plknn", "--cfg", "job"]
    assert compose_default_learner(["learner=ipal"]) == ["+learner=ipal"]
    # a preset that selects the group itself: learner=X replaces its choice (plus would add a second)
    assert compose_default_learner(["experiment=deep_published_table", "learner=cc"], reg) == [
        "experiment=deep_published_table", "learner=cc"]
    assert compose_default_learner(["experiment=plc_lost", "learner=cc"], reg) == ["experiment=plc_lost", "+learner=cc"]
    assert compose_default_learner(["-m", "experiment=deep_published,plc_lost", "learner=cc"], reg)[-1] == "learner=cc"


def test_clustering_run_logs_the_classes_scored_and_plc_diagnostics(tmp_path, plcore_cli):
    """A clustering run logs what the protocol derived from the data as parameters and PLC's
    pseudo-label accuracy and graph components as metrics."""
    plcore_cli(["+clusterer=plc", "protocol=clustering", "dataset=iris", "bags.r=1", "protocol.n_partitions=2",
                "clusterer.k=5", "clusterer.outer_iter=1"], tmp_path)
    _, (run,) = mlflow_runs(tmp_path / "mlflow.db")
    assert run.data.params["classes_scored"] == "3" and run.data.params["classes_left_out"] == "none"
    assert run.data.params["protocol.draw"] == "stratified" and run.data.params["protocol.classes"] == "present"
    assert 0.5 < run.data.metrics["pseudo_label_acc_mean"] <= 1 and run.data.metrics["graph_components_mean"] >= 1
