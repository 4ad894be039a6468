"""``python -m plcore predict run=<run> data=<file>``: predictions on new data from a logged model.

``run`` is a run id, or a run name (the latest FINISHED run of that name). The model is the
pipeline the run refitted on all its training data (``protocol.refit=true``, logged as the
run's MLflow model); ``classes.json`` beside it names the classes. The output CSV holds one
row per row of ``data``: the predicted class name and, where the model gives them, one score
per class.

A logged model is a pickle: load models only from a tracking store you trust.
"""

from __future__ import annotations

import csv
import json
import os
import re
import sys
from pathlib import Path

from plcore.exceptions import ConfigError, DataValidationError, TrackingError

__all__ = ["find_run", "predict_file", "main"]

_RUN_ID = re.compile(r"^[0-9a-f]{32}$")
USAGE = ("usage: python -m plcore predict run=<run id or run name> data=<file or data set name> "
         "[out=<csv>] [tracking_uri=<uri>] [data_home=<dir>] [experiment=<name>] [latest=true]")


def find_run(client, run: str, experiment_name: str | None = None, latest: bool = False):
    """The run with id ``run``, else the FINISHED run named ``run``: when several share the name
    (a sweep over a parameter), one line lists their ids and the parameters that differ, unless
    ``latest`` picks the most recent."""
    if _RUN_ID.match(run):
        try:
            return client.get_run(run)
        except Exception as err:  # noqa: BLE001 - MLflow raises its own exception types
            raise ConfigError(f"no run with id {run} in the tracking store ({err})") from None
    exps = client.search_experiments() if experiment_name is None else [client.get_experiment_by_name(experiment_name)]
    exp_ids = [e.experiment_id for e in exps if e is not None]
    escaped = run.replace("'", "\\'")
    found = client.search_runs(exp_ids, filter_string=f"attributes.run_name = '{escaped}' and "
                                                      "attributes.status = 'FINISHED'",
                               order_by=["attributes.start_time DESC"], max_results=50) if exp_ids else []
    if not found:
        raise ConfigError(f"no FINISHED run named {run!r} in the tracking store")
    if len(found) > 1 and not latest:
        keys = sorted({k for r in found for k in r.data.params})
        differ = [k for k in keys if len({r.data.params.get(k) for r in found}) > 1]
        shown = "; ".join(f"{r.info.run_id} ({', '.join(f'{k}={r.data.params.get(k)}' for k in differ[:4])})"
                          for r in found[:10])
        raise ConfigError(f"{len(found)} FINISHED runs are named {run!r}: {shown}; pass run=<id>, or latest=true "
                          "for the most recent")
    return found[0]


def predict_file(model, classes, X):
    """``(labels, scores or None)`` for feature rows ``X``."""
    n_in = getattr(model, "n_features_in_", None)
    if n_in is not None and X.shape[1] != n_in:
        raise DataValidationError(f"the data have {X.shape[1]} features but the model was fitted on {n_in}")
    index = model.predict(X)
    labels = [classes[int(i)] for i in index]
    scores = model.predict_proba(X) if hasattr(model, "predict_proba") else None
    return labels, scores


def _parse(argv) -> dict:
    args = {}
    for a in argv:
        if a in ("-h", "--help"):
            print(USAGE)
            print(__doc__)
            raise SystemExit(0)
        key, sep, value = a.partition("=")
        if not sep or key not in ("run", "data", "out", "tracking_uri", "data_home", "experiment", "latest"):
            raise ConfigError(f"unexpected argument {a!r}; {USAGE}")
        args[key] = value
    for key in ("run", "data"):
        if not args.get(key):
            raise ConfigError(f"missing {key}=...; {USAGE}")
    return args


def main(argv=None) -> int:
    """Entry point of ``python -m plcore predict``."""
    import mlflow
    from mlflow.tracking import MlflowClient

    from plcore.datasets import load_dataset
    from plcore.tracking import check_reachable

    args = _parse(list(sys.argv[1:] if argv is None else argv))
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    uri = args.get("tracking_uri") or os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{Path.cwd() / 'mlflow.db'}"
    if uri.startswith("sqlite:///") and not Path(uri[len("sqlite:///"):]).is_file():
        raise TrackingError(f"no tracking database at {uri}; pass tracking_uri=... or set MLFLOW_TRACKING_URI")
    check_reachable(uri)
    client = MlflowClient(tracking_uri=uri)
    latest = args.get("latest", "false").lower()
    if latest not in ("true", "false"):
        raise ConfigError(f"latest must be true or false, got {args['latest']!r}")
    run = find_run(client, args["run"], args.get("experiment"), latest=latest == "true")
    rid = run.info.run_id
    mlflow.set_tracking_uri(uri)
    try:
        import mlflow.sklearn

        model = mlflow.sklearn.load_model(f"runs:/{rid}/model")
        classes = json.loads(mlflow.artifacts.load_text(f"runs:/{rid}/classes.json"))
    except Exception as err:  # noqa: BLE001 - MLflow raises its own exception types
        raise ConfigError(f"run {rid} ({run.info.run_name}) has no logged model: {type(err).__name__}: {err}. "
                          "Only kfold/holdout runs with protocol.refit=true log one") from None
    data = load_dataset(args["data"], data_home=args.get("data_home") or os.environ.get("PLCORE_DATA_HOME"),
                        noisy=True)  # only the features are used: labels outside the candidate sets do not matter
    labels, scores = predict_file(model, classes, data.X)
    out = Path(args.get("out") or f"predictions-{rid[:8]}-{data.name}.csv")
    with open(out, "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["index", "label"] + ([f"score_{c}" for c in classes] if scores is not None else []))
        for i, label in enumerate(labels):
            writer.writerow([i, label] + ([f"{v:.6g}" for v in scores[i]] if scores is not None else []))
    print(f"{len(labels)} predictions of run {rid} ({run.info.run_name}) written to {out}")
    return 0
