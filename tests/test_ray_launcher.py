"""A 2-job sweep through the Ray launcher (``hydra/launcher=ray``) on a local Ray instance
(``ray.init(num_cpus=2)``), as docs/scale_out.md's cluster recipe does against ``ray start --head``.

hydra-ray-launcher is in requirements.lock (with cloudpickle 2.2.1, joblib 1.5.3 and
python-dateutil 2.9.0.post0, the versions its ``cloudpickle<3`` pin resolves to): CI runs this
test; a missing launcher fails it.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow


def test_ray_sweep_runs_jobs_in_ray_workers(tmp_path, plcore_cli, job_probe):
    import mlflow

    env = dict(job_probe.env, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", RAY_USAGE_STATS_ENABLED="0")
    proc = plcore_cli(["-m", "+learner=plknn", "learner.k=5,8", "protocol.n_splits=3", "progress=false",
                       "hydra/launcher=ray", "+hydra.launcher.ray.init.num_cpus=2",
                       "+hydra.launcher.ray.init.include_dashboard=false", job_probe.override],
                      tmp_path, env, timeout=600)
    log = proc.stdout + proc.stderr
    assert "Ray Launcher is launching 2 jobs" in log and "Started a local Ray instance" in log
    parent, starts, ends = job_probe.records()
    assert sorted(starts) == sorted(ends) == [0, 1], (starts, ends)
    assert parent["pid"] not in {r["pid"] for r in starts.values()}, "a job ran in the launching process"
    spans = sorted((starts[i]["time"], ends[i]["time"]) for i in starts)
    assert any(b[0] < a[1] for a, b in zip(spans, spans[1:])), f"the jobs ran one after the other: {spans}"
    client = mlflow.tracking.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("plcore").experiment_id])
    assert sorted(int(r.data.params["learner.k"]) for r in runs) == [5, 8]
    for r in runs:
        assert r.info.status == "FINISHED"
        assert 0.85 < r.data.metrics["accuracy_mean"] <= 1.0  # digits, r=3
        assert len(client.get_metric_history(r.info.run_id, "fold/accuracy")) == 3
    assert sorted(r.data.tags["hydra.job.num"] for r in runs) == ["0", "1"]
