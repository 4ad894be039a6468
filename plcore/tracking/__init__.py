"""MLflow tracking: one run per Hydra job, written from the job's own process
(:mod:`~plcore.tracking.mlflow_run`), the store made and checked before the work and runs
whose process died reaped (:mod:`~plcore.tracking.store`), provenance tags
(:mod:`~plcore.tracking.provenance`) and the plots a run logs (:mod:`~plcore.tracking.plots`).
Nothing here imports MLflow until a run is opened."""

from plcore.tracking.mlflow_run import (MlflowRun, NullRun, dataset_info, flatten, import_fallback, log_model,
                                        open_run, start_run)
from plcore.tracking.provenance import git_provenance, version_tags
from plcore.tracking.store import check_reachable, check_store, prepare_store, reap_orphans

__all__ = ["MlflowRun", "NullRun", "start_run", "open_run", "flatten", "dataset_info", "log_model", "import_fallback",
           "check_store", "check_reachable", "prepare_store", "reap_orphans", "git_provenance", "version_tags"]
