"""A sweep through the Ray launcher (``hydra/launcher=ray``) on a local Ray instance started by the
launcher (docs/scale_out.md).

hydra-ray-launcher is not in requirements.lock: its last release for hydra-core 1.3 (1.2.1) pins
``cloudpickle<3``, which forces joblib < 1.6. The test is skipped unless it is installed, e.g. in
a separate environment::

    uv pip install -r requirements.lock hydra-ray-launcher==1.2.1  # minus the cloudpickle,
                                                                   # joblib, python-dateutil pins
"""

from __future__ import annotations

import importlib.util

import pytest

pytestmark = pytest.mark.slow


def _ray_launcher_missing() -> bool:
    try:
        return importlib.util.find_spec("hydra_plugins.hydra_ray_launcher") is None
    except ImportError:
        return True


@pytest.mark.skipif(_ray_launcher_missing(), reason="hydra-ray-launcher is not installed (not in "
                    "requirements.lock: it needs cloudpickle<3, see docs/scale_out.md)")
def test_ray_sweep_runs_jobs_in_ray_workers(tmp_path, plcore_cli, job_probe):
    import mlflow

    env = dict(job_probe.env, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", RAY_USAGE_STATS_ENABLED="0")
    proc = plcore_cli(["-m", "+learner=plknn", "learner.k=5,10", "protocol.n_splits=3", "progress=false",
                       "hydra/launcher=ray", "+hydra.launcher.ray.init.num_cpus=2",
                       "+hydra.launcher.ray.init.include_dashboard=false", job_probe.override],
                      tmp_path, env, timeout=600)
    log = proc.stdout + proc.stderr
    assert "Ray Launcher is launching 2 jobs" in log and "Started a local Ray instance" in log
    job_probe.assert_parallel(2)  # two Ray worker processes, running at the same time
    client = mlflow.tracking.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("plcore").experiment_id])
    assert sorted(r.data.params["learner.k"] for r in runs) == ["10", "5"]
    for r in runs:
        assert r.info.status == "FINISHED"
        assert 0.85 < r.data.metrics["accuracy_mean"] <= 1.0  # digits, r=3
        assert len(client.get_metric_history(r.info.run_id, "fold/accuracy")) == 3
    assert sorted(r.data.tags["hydra.job.num"] for r in runs) == ["0", "1"]
