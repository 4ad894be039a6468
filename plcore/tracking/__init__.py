"""MLflow tracking: one run per Hydra job, written from the job's own process
(:mod:`~plcore.tracking.mlflow_run`), the store made and checked before the work and runs
whose process died reaped (:mod:`~plcore.tracking.store`), the run's model written in a format
that runs no code when read (:mod:`~plcore.tracking.models`), MLflow's noise kept off the
terminal (:mod:`~plcore.tracking.quiet`), provenance tags (:mod:`~plcore.tracking.provenance`)
and the plots a run logs (:mod:`~plcore.tracking.plots`). Nothing here imports MLflow until a
run is opened."""

from plcore.tracking.mlflow_run import (MlflowRun, NullRun, dataset_info, end_original, flatten, import_fallback,
                                        open_run, start_run)
from plcore.tracking.models import download_model, load_model, version_note
from plcore.tracking.provenance import git_provenance, version_tags
from plcore.tracking.quiet import describe, quiet_mlflow
from plcore.tracking.store import (check_access, check_readable, check_reachable, check_store, prepare_store,
                                   reap_orphans)

__all__ = ["MlflowRun", "NullRun", "start_run", "open_run", "flatten", "dataset_info", "import_fallback",
           "end_original", "check_store", "check_readable", "check_reachable", "check_access", "prepare_store",
           "reap_orphans", "download_model", "load_model", "version_note", "describe", "quiet_mlflow",
           "git_provenance", "version_tags"]
