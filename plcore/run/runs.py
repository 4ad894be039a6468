"""Runs read back for reports: :class:`RunRecord` (params, metrics, tags and the per-step history
of a metric) and :func:`load_runs` (one experiment, one sweep) from MLflow; :class:`JobRecord`, the
outcome each job of a sweep leaves in its folder (:func:`write_job_record`, :func:`read_job_records`),
so that a sweep names every job that failed, also before its run existed; and
:func:`find_finished_run`, a FINISHED run of the same settings and data (``resume=true``)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from plcore.utils.files import atomic_write

__all__ = ["JOB_RECORD", "PARENT_TAG", "RUN_KEY_TAG", "SWEEP_TAG", "JobRecord", "RunRecord", "find_finished_run",
           "load_runs", "provenance_line", "read_job_records", "write_job_record"]

#: runs of the same sweep share this tag (set by :mod:`plcore.run.app`)
SWEEP_TAG = "hydra.sweep.dir"
#: marks the parent run of a comparison (:mod:`plcore.run.comparison_report`): what it compares
PARENT_TAG = "plcore.comparison.of"
#: a digest of a run's resolved settings and data fingerprint (:func:`find_finished_run`)
RUN_KEY_TAG = "plcore.run_key"
#: each job of a sweep writes its outcome to this file in its Hydra output folder
JOB_RECORD = "plcore-job.json"


@dataclass
class RunRecord:
    """The parts of one MLflow run that reports use."""

    run_id: str
    name: str
    params: dict
    metrics: dict
    tags: dict
    start_time: int = 0
    status: str = "FINISHED"
    end_time: int = 0
    _client: object = field(default=None, repr=False)
    _history: dict = field(default_factory=dict, repr=False)

    def steps(self, key: str = "accuracy") -> np.ndarray:
        """Per-step values of metric ``key`` (one per fold / repeat / partition), ordered by step.

        Per-step metrics are logged as ``<step name>/<key>`` (``fold/accuracy``); runs logged
        before that naming used ``key`` itself.
        """
        if key not in self._history:
            hist = []
            if self._client is not None:
                names = [m for m in self.metrics if m.endswith("/" + key)] + [key]
                for name in names:
                    hist = self._client.get_metric_history(self.run_id, name)
                    if hist:
                        break
            self._history[key] = np.array([m.value for m in sorted(hist, key=lambda m: m.step)], dtype=float)
        return self._history[key]

    @property
    def preset(self) -> str | None:
        """The ``experiment=...`` preset named on the command line (from the ``overrides`` tag)."""
        for tok in self.tags.get("overrides", "").split():
            if tok.lstrip("+").startswith("experiment="):
                return tok.split("=", 1)[1]
        return self.params.get("paper.preset")


def _record(client, r) -> RunRecord:
    return RunRecord(r.info.run_id, r.info.run_name or "", dict(r.data.params), dict(r.data.metrics),
                     dict(r.data.tags), r.info.start_time or 0, r.info.status, r.info.end_time or 0, client)


def load_runs(tracking_uri: str, *, experiment_name: str | None = None, sweep_dir: str | None = None,
              since_ms: int | None = None, statuses: Sequence[str] = ("FINISHED",),
              run_ids: Sequence[str] = ()) -> list[RunRecord]:
    """Runs of ``experiment_name`` (default: every experiment), optionally of one sweep only.

    ``sweep_dir`` matches the ``hydra.sweep.dir`` tag; ``since_ms`` keeps runs started at or
    after that time (milliseconds since the epoch); ``run_ids`` are added whatever their tags
    (the runs a resumed sweep reused). Oldest first.
    """
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
    extra = []
    for run_id in dict.fromkeys(run_ids):
        r = client.get_run(run_id)
        if not statuses or r.info.status in statuses:
            extra.append(_record(client, r))
    if extra:
        seen = {r.run_id for r in extra}
        rest = load_runs(tracking_uri, experiment_name=experiment_name, sweep_dir=sweep_dir, since_ms=since_ms,
                         statuses=statuses)
        return sorted(extra + [r for r in rest if r.run_id not in seen], key=lambda r: r.start_time)
    if experiment_name is not None:
        exp = client.get_experiment_by_name(experiment_name)
        exp_ids = [exp.experiment_id] if exp is not None else []
    else:
        exp_ids = [e.experiment_id for e in client.search_experiments()]
    if not exp_ids:
        return []
    clauses = []
    if sweep_dir is not None:
        clauses.append(f"tags.`{SWEEP_TAG}` = '{sweep_dir}'")
    if since_ms is not None:
        clauses.append(f"attributes.start_time >= {int(since_ms)}")
    out = []
    token = None
    while True:
        page = client.search_runs(exp_ids, filter_string=" and ".join(clauses), max_results=1000,
                                  order_by=["attributes.start_time ASC"], page_token=token)
        for r in page:
            if (statuses and r.info.status not in statuses) or PARENT_TAG in r.data.tags:
                continue
            out.append(_record(client, r))
        token = page.token
        if not token:
            return out


def provenance_line(runs: Sequence[RunRecord], sweep_dir: str | None = None, experiment: str | None = None) -> str:
    """Which sweep (or MLflow experiment) and commit(s) the runs of a report came from (one markdown line)."""
    commits = sorted({(r.tags.get("mlflow.source.git.commit", "")[:10] or "unknown")
                      + ("+dirty" if r.tags.get("plcore.git.dirty") == "true" else "") for r in runs})
    where = (f"sweep `{sweep_dir}`" if sweep_dir else f"MLflow experiment `{experiment}`" if experiment
             else "the runs selected")
    return f"_Made from {len(runs)} run(s) of {where} at commit {', '.join(commits) or 'unknown'}._\n"


def find_finished_run(tracking_uri: str, experiment_name: str, run_key: str) -> RunRecord | None:
    """The newest FINISHED run of ``experiment_name`` whose :data:`RUN_KEY_TAG` is ``run_key`` (the
    same resolved settings and data), or None."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
    exp = client.get_experiment_by_name(experiment_name)
    if exp is None:
        return None
    found = client.search_runs([exp.experiment_id], max_results=1, order_by=["attributes.start_time DESC"],
                               filter_string=f"tags.`{RUN_KEY_TAG}` = '{run_key}' and attributes.status = 'FINISHED'")
    return _record(client, found[0]) if found else None


@dataclass
class JobRecord:
    """The outcome of one job of a sweep, as it left it in its folder (:data:`JOB_RECORD`).

    ``status``: FINISHED, REUSED (``resume=true`` found a FINISHED run of the same settings and
    data), FAILED, KILLED, or MISSING (the job started -- Hydra wrote its folder -- but left no
    record: its process was killed). ``run_id`` is the job's run (the reused one for REUSED),
    None where the job failed before its run existed.
    """

    num: int
    overrides: list
    status: str
    run_id: str | None = None
    error: str | None = None

    @property
    def failed(self) -> bool:
        return self.status in ("FAILED", "KILLED", "MISSING")


def write_job_record(folder, record: JobRecord) -> None:
    """Write ``record`` to ``folder/plcore-job.json`` atomically (a reader sees none or all of it)."""
    path = Path(folder) / JOB_RECORD
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as tmp:
        tmp.write_text(json.dumps(asdict(record), indent=1))


def read_job_records(sweep_dir) -> list[JobRecord]:
    """Every job of the sweep in ``sweep_dir``, by job number: its record, or MISSING for a job
    folder that Hydra created (``.hydra/overrides.yaml``) but no record followed. Empty for a
    folder that holds no job."""
    root = Path(sweep_dir)
    jobs = {}
    for path in sorted(root.glob(f"**/{JOB_RECORD}")):
        try:
            rec = JobRecord(**json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            continue
        jobs[rec.num] = rec
    for path in sorted(root.glob("**/.hydra/overrides.yaml")):
        folder = path.parent.parent
        if (folder / JOB_RECORD).exists():
            continue
        try:
            import yaml

            overrides = list(yaml.safe_load(path.read_text()) or [])
            num = int(yaml.safe_load((path.parent / "hydra.yaml").read_text())["hydra"]["job"]["num"])
        except (OSError, ValueError, TypeError, KeyError):
            continue
        jobs.setdefault(num, JobRecord(num, overrides, "MISSING",
                                       error="left no record: its process ended before the job did"))
    return [jobs[k] for k in sorted(jobs)]
