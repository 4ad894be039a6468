"""Scale-out on one machine (docs/scale_out.md): a sweep through ``hydra/launcher=joblib`` runs its
jobs in separate, concurrent worker processes that share one SQLite tracking database, and the
same sweep can log over HTTP to an ``mlflow server`` (the team set-up, here with SQLite behind it).

Which process ran a job, and when, is recorded by the ``job_probe`` fixture (tests/conftest.py):
a Hydra callback added from the command line.
"""

from __future__ import annotations

import sqlite3

import pytest

SWEEP = ["-m", "+learner=plknn", "learner.k=5,10", "hydra/launcher=joblib", "hydra.launcher.n_jobs=2",
         "protocol.n_splits=3", "progress=false"]
THREADS = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def assert_two_finished_runs(client, artifacts=True):
    exp = client.get_experiment_by_name("plcore")
    runs = client.search_runs([exp.experiment_id])
    assert sorted(r.data.params["learner.k"] for r in runs) == ["10", "5"]
    for r in runs:
        assert r.info.status == "FINISHED"
        assert 0.85 < r.data.metrics["accuracy_mean"] <= 1.0  # digits, r=3
        assert len(client.get_metric_history(r.info.run_id, "fold/accuracy")) == 3  # one per fold
        if artifacts:
            plots = [a.path for a in client.list_artifacts(r.info.run_id, "plots")]
            assert plots == ["plots/accuracy_per_fold.png"]
    assert sorted(r.data.tags["hydra.job.num"] for r in runs) == ["0", "1"]
    assert len({r.data.tags["hydra.sweep.dir"] for r in runs}) == 1
    assert len({r.data.tags["pid"] for r in runs}) == 2 and all(r.data.tags["host"] for r in runs)
    return runs


@pytest.mark.slow
def test_joblib_sweep_uses_two_processes_and_one_sound_database(tmp_path, plcore_cli, job_probe):
    import mlflow

    proc = plcore_cli(SWEEP + [job_probe.override], tmp_path, dict(THREADS, **job_probe.env))
    assert "Joblib.Parallel(n_jobs=2" in proc.stdout + proc.stderr
    job_probe.assert_parallel(2)
    db = tmp_path / "mlflow.db"
    with sqlite3.connect(db) as con:  # created once in the parent (PrepareTrackingCallback), not raced
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert con.execute("SELECT COUNT(*) FROM experiments WHERE name = 'plcore'").fetchone() == (1,)
    assert_two_finished_runs(mlflow.tracking.MlflowClient(tracking_uri=f"sqlite:///{db}"))


@pytest.mark.slow
def test_sweep_logs_over_http_to_a_tracking_server(tmp_path, plcore_cli, mlflow_server, job_probe):
    """The team set-up in small: ``mlflow server`` owns the database and the artifact store; the
    sweep's two worker processes only know ``MLFLOW_TRACKING_URI=http://...``."""
    import mlflow

    srv, work = tmp_path / "server", tmp_path / "client"
    srv.mkdir()
    work.mkdir()
    server = mlflow_server(f"sqlite:///{srv / 'mlflow.db'}", srv, command="server",
                           extra_args=["--artifacts-destination", str(srv / "artifacts")])
    proc = plcore_cli(SWEEP + [job_probe.override], work,
                      dict(THREADS, **job_probe.env, MLFLOW_TRACKING_URI=server.url))
    assert proc.stdout.count(f"({server.url})") == 2  # "mlflow run <id> (<uri>)" once per job
    job_probe.assert_parallel(2)
    assert not (work / "mlflow.db").exists() and not (work / "mlruns").exists()  # nothing local
    runs = assert_two_finished_runs(mlflow.tracking.MlflowClient(tracking_uri=server.url))
    for r in runs:  # proxied artifact upload: the files sit in the server's --artifacts-destination
        assert r.info.artifact_uri.startswith("mlflow-artifacts:")
        assert list(srv.glob(f"artifacts/**/{r.info.run_id}/artifacts/plots/accuracy_per_fold.png"))
    # the server's own database holds the same runs (its artifacts are only reachable over HTTP)
    direct = mlflow.tracking.MlflowClient(tracking_uri=f"sqlite:///{srv / 'mlflow.db'}")
    same = assert_two_finished_runs(direct, artifacts=False)
    assert {r.info.run_id for r in same} == {r.info.run_id for r in runs}


@pytest.mark.slow
def test_submitit_local_sweep_runs_each_job_in_its_own_process(tmp_path, plcore_cli, job_probe):
    """``hydra/launcher=submitit_local``: submitit's code path of ``submitit_slurm`` (pickled job,
    a separate process per job, results collected by the launcher), on this machine."""
    import mlflow

    sweep = ["-m", "+learner=plknn", "learner.k=5,10", "hydra/launcher=submitit_local", "protocol.n_splits=3",
             "progress=false", job_probe.override]
    proc = plcore_cli(sweep, tmp_path, dict(THREADS, **job_probe.env))
    assert "Submitit 'local' sweep output dir" in proc.stdout + proc.stderr
    job_probe.assert_parallel(2)
    assert_two_finished_runs(mlflow.tracking.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}"))


def test_slurm_preset_composes_to_submitit_slurm(tmp_path, plcore_cli):
    """The documented Slurm preset (conf/hydra/launcher/slurm.yaml) is submitit's Slurm launcher
    with the partition, time, cores and array parallelism it documents."""
    import yaml

    proc = plcore_cli(["hydra/launcher=slurm", "hydra.launcher.partition=cpu", "--cfg", "hydra"], tmp_path)
    launcher = yaml.safe_load(proc.stdout)["hydra"]["launcher"]
    assert launcher["_target_"].endswith("submitit_launcher.SlurmLauncher")
    assert (launcher["partition"], launcher["timeout_min"], launcher["cpus_per_task"],
            launcher["array_parallelism"]) == ("cpu", 60, 2, 64)
    assert launcher["setup"] == ["export OMP_NUM_THREADS=${hydra.launcher.cpus_per_task} "
                                 "OPENBLAS_NUM_THREADS=${hydra.launcher.cpus_per_task}"]
