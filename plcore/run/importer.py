"""``python -m plcore import FILE``: log a fallback file into a tracking store.

When the store fails during a run, the run's results are written to
``plcore-unlogged-<date>-<time>-<pid>.json`` in the job's output folder, its model to the
folder ``plcore-unlogged-<date>-<time>-<pid>.model`` beside it (docs/runs.md, "An HTTP tracking
server"). Once the store is back, this command logs them as a new run and ends the original run,
if a store still holds it ``RUNNING`` (:func:`plcore.tracking.import_fallback`).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

__all__ = ["main"]


def main(argv=None) -> int:
    """``python -m plcore import FILE [FILE ...]``."""
    from plcore.tracking import check_store, import_fallback

    ap = argparse.ArgumentParser(prog="python -m plcore import", description=main.__doc__)
    ap.add_argument("files", nargs="+", help="plcore-unlogged-*.json files")
    ap.add_argument("--tracking-uri", default=None,
                    help="default: $MLFLOW_TRACKING_URI or sqlite:///mlflow.db in the current directory")
    ap.add_argument("--experiment", default=None, help="default: the experiment the run was meant for")
    args = ap.parse_args(argv)
    uri = args.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{Path.cwd() / 'mlflow.db'}"
    check_store(uri)
    for f in args.files:
        run_id, original = import_fallback(f, uri, args.experiment)
        ended = f"; the original run is now {original}" if original else ""
        print(f"{f}: logged as run {run_id} ({uri}){ended}")
    return 0
