"""Runs read back from MLflow for reports: :class:`RunRecord` (params, metrics, tags and the
per-step history of a metric) and :func:`load_runs` (one experiment, one sweep)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

__all__ = ["PARENT_TAG", "SWEEP_TAG", "RunRecord", "load_runs", "provenance_line"]

#: runs of the same sweep share this tag (set by :mod:`plcore.run.app`)
SWEEP_TAG = "hydra.sweep.dir"
#: marks the parent run of a comparison (:mod:`plcore.run.comparison_report`): what it compares
PARENT_TAG = "plcore.comparison.of"


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


def load_runs(tracking_uri: str, *, experiment_name: str | None = None, sweep_dir: str | None = None,
              since_ms: int | None = None, statuses: Sequence[str] = ("FINISHED",)) -> list[RunRecord]:
    """Runs of ``experiment_name`` (default: every experiment), optionally of one sweep only.

    ``sweep_dir`` matches the ``hydra.sweep.dir`` tag; ``since_ms`` keeps runs started at or
    after that time (milliseconds since the epoch). Oldest first.
    """
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
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
            out.append(RunRecord(r.info.run_id, r.info.run_name or "", dict(r.data.params), dict(r.data.metrics),
                                 dict(r.data.tags), r.info.start_time or 0, r.info.status,
                                 r.info.end_time or 0, client))
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
