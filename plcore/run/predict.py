"""``python -m plcore predict run=<run> data=<file>``: predictions on new data from a logged model.

``run`` is a run id, or a run name (the latest FINISHED run of that name). The model is the
pipeline the run refitted on all its training data (``protocol.refit=true``, logged as the
run's MLflow model), which answers class names. A model trained on a table with named columns
(CSV or Parquet with a header, ARFF) reads a CSV, Parquet or ARFF file of new rows by those
names, in any order; other columns (candidate sets, true labels, ids) are ignored, and nominal columns
are encoded as the training rows were. A model trained on data without column names reads the
features by position (a named data set or a file loaded as for training). The output CSV holds
one row per row of ``data``, in their order (an existing file is never replaced unless
``overwrite=true``, nor the input ever; ``out=`` is checked before the store is opened; a CSV or
Parquet file is read and predicted in pieces of about :data:`CHUNK_CELLS` cells, written to a
temporary file, then renamed): the row's position from 0 (or, with
``id_column=``, that column's value), the predicted class name and, where the model gives them, one score per class.
With ``sets=true`` (a model whose final step has ``predict_set``, e.g. ``+learner=conformal_sets``) a last
column ``prediction_set`` holds each row's prediction set, its class names joined by ``|``.
With ``abstain=true`` (a model whose learner has the tag ``reject_option``, e.g. ``+learner=dstpll``)
the label of a row whose reject score is <= 0 is ``abstain``, and a last column ``reject_score`` holds the scores.

The model is read without running code from the store: plcore logs it with skops and reads
only the types it trusts (classes of numpy, scipy, scikit-learn, plcore and its installed
plugins). A model that holds other types, or that is a pickle (logged by an earlier plcore, or
holding a class of your own), is refused unless ``trust=true`` says you trust the store. A model
written by another plcore version than the installed one is named in one line. Nothing is
left in the temporary folder.
"""

from __future__ import annotations

import csv
import json
import os
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

from plcore.exceptions import ConfigError, DataValidationError, TrackingError
from plcore.utils.files import atomic_write

__all__ = ["find_run", "predict_file", "prediction_sets", "reject_scores", "read_new_rows", "load_run_model", "main"]

_RUN_ID = re.compile(r"^[0-9a-f]{32}$")
USAGE = ("usage: python -m plcore predict run=<run id or run name> data=<file or data set name> "
         "[out=<csv>] [id_column=<column>] [tracking_uri=<uri>] [data_home=<dir>] [experiment=<name>] [latest=true] "
         "[trust=true] [sets=true] [abstain=true] [overwrite=true]")


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


def predict_file(model, classes, rows, *, encoded: bool = False):
    """``(labels, scores or None, class names)`` for the new ``rows``: a DataFrame (read by the
    model's feature column names) or a feature matrix (by position; ``encoded``: already encoded
    as the model's training rows were). ``model`` is a run's logged
    :class:`~plcore.feature_columns.PredictionModel`, or the bare pipeline an earlier plcore logged, whose
    class indices ``classes`` (``classes.json``) name."""
    from plcore.feature_columns import PredictionModel

    if not isinstance(model, PredictionModel):  # logged by an earlier plcore: indices and classes.json
        model = PredictionModel(model, np.asarray(classes))
    Z = rows if encoded else model.encode(rows)
    labels = model.classes_[np.asarray(model.pipeline.predict(Z)).astype(np.intp)]
    scores = model.pipeline.predict_proba(Z) if hasattr(model.pipeline, "predict_proba") else None
    return [str(c) for c in labels], scores, [str(c) for c in model.classes_]


def read_new_rows(model, data: str, data_home=None):
    """The rows ``data`` names, as ``(name, rows, table or None, encoded)``: a CSV, Parquet or
    ARFF file as a DataFrame (the model reads its columns by name; ``table`` is that DataFrame, for
    ``id_column``), else the features of a data set or file loaded as for training, by position
    (``encoded``: as the model's training rows were, nominal columns one-hot)."""
    from plcore.datasets import load_dataset, read_table
    from plcore.datasets.formats import frame_suffixes

    named = getattr(model, "feature_names_in_", None) is not None
    if named and Path(data).suffix.lower() in frame_suffixes():  # tables of named columns (the suffix table's)
        table = read_table(data)
        return Path(data).stem, table, table, False
    ds = load_dataset(data, data_home=data_home, noisy=True)  # labels outside the candidate sets do not matter
    if named:
        mine, theirs = model.features, ds.meta.get("features")
        if theirs is None or list(theirs.get_feature_names_out()) != list(mine.get_feature_names_out()):
            raise DataValidationError(
                f"the model reads the feature columns {', '.join(map(str, mine.feature_names_in_[:10]))} by name: give "
                f"data=<CSV, Parquet or ARFF file> with them (data={data} does not have them as the model was "
                "trained)")
        return ds.name, ds.X, None, True
    return ds.name, ds.X, None, False


def _parse(argv) -> dict:
    args = {}
    for a in argv:
        if a in ("-h", "--help"):
            print(USAGE)
            print(__doc__)
            raise SystemExit(0)
        key, sep, value = a.partition("=")
        if not sep or key not in ("run", "data", "out", "id_column", "tracking_uri", "data_home", "experiment",
                                  "latest", "trust", "sets", "abstain", "overwrite"):
            raise ConfigError(f"unexpected argument {a!r}; {USAGE}")
        args[key] = value
    for key in ("run", "data"):
        if not args.get(key):
            raise ConfigError(f"missing {key}=...; {USAGE}")
    return args


def _flag(args: dict, key: str) -> bool:
    value = args.get(key, "false").lower()
    if value not in ("true", "false"):
        raise ConfigError(f"{key} must be true or false, got {args[key]!r}")
    return value == "true"


def _has_model(tracking_uri: str, run_id: str) -> bool:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
    try:
        run = client.get_run(run_id)
        return bool(run.outputs and run.outputs.model_outputs) or any(
            a.path == "model" for a in client.list_artifacts(run_id))
    except Exception:  # noqa: BLE001 - the store failed: say it could not be downloaded
        return True


def load_run_model(run, tracking_uri: str, *, trust: bool = False):
    """``(pipeline, classes, note)`` of a run's logged model (``run``: an MLflow run); ``note``
    names the plcore versions where the model's differ from the installed ones, else None.

    The model is downloaded to a temporary folder that is removed afterwards and read with the
    types plcore trusts (:func:`plcore.tracking.load_model`); a pickle, or a model holding other
    types, only with ``trust``. Anything refused or unreadable is one
    :class:`~plcore.exceptions.ConfigError` line.
    """
    from plcore.registry import model_packages
    from plcore.tracking import describe, download_model, load_model, quiet_mlflow, version_note

    rid, name = run.info.run_id, run.info.run_name
    what = f"the model of run {rid} ({name})"
    with quiet_mlflow(), tempfile.TemporaryDirectory(prefix="plcore-predict-") as tmp:
        try:
            folder = download_model(tracking_uri, rid, tmp)
        except Exception as err:  # noqa: BLE001 - MLflow raises its own exception types
            if not _has_model(tracking_uri, rid):
                raise ConfigError(f"run {rid} ({name}) has no logged model: only kfold/holdout runs with "
                                  "protocol.refit=true log one") from None
            raise ConfigError(f"{what} could not be downloaded ({describe(err)})") from None
        note = version_note(folder)
        try:
            classes = json.loads((folder / "classes.json").read_text())
            model = load_model(folder, model_packages(), trust=trust, what=what)
        except ConfigError as err:
            raise ConfigError(f"{err}{f' ({note})' if note else ''}") from None
        except Exception as err:  # noqa: BLE001 - a model another version wrote, or a damaged one
            why = f"it was {note}; install those versions to use it" if note else "it may be damaged"
            raise ConfigError(f"{what} could not be loaded ({describe(err)}): {why}") from None
    return model, classes, note


#: about how many cells of new rows are read, encoded and predicted at a time (None: the whole
#: file at once); the output is the same whatever it is (tests and the memory benchmark lower it)
CHUNK_CELLS: int | None = 250_000


def _out_path(args: dict, rid: str | None, overwrite: bool, uri: str):
    """The output file checked before any work (:func:`~plcore.utils.files.checked_output`: never
    the data nor the tracking store's SQLite file), or None while the default name waits for the
    run id (``rid``) of a run given by name."""
    from plcore.utils.files import checked_output

    inputs = [args["data"], uri[len("sqlite:///"):] if uri.startswith("sqlite:///") else None]
    if args.get("out"):
        return checked_output(args["out"], flag="out=", inputs=inputs, overwrite=overwrite)
    if rid is None:
        return None
    default = f"predictions-{rid[:8]}-{Path(args['data']).stem}.csv"
    return checked_output(default, flag="out=", inputs=inputs, overwrite=overwrite)


def main(argv=None) -> int:
    """Entry point of ``python -m plcore predict``."""
    from mlflow.tracking import MlflowClient

    from plcore.tracking import check_readable, quiet_mlflow

    args = _parse(list(sys.argv[1:] if argv is None else argv))
    overwrite, latest, trust = _flag(args, "overwrite"), _flag(args, "latest"), _flag(args, "trust")
    with_sets, abstain = _flag(args, "sets"), _flag(args, "abstain")
    uri = args.get("tracking_uri") or os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{Path.cwd() / 'mlflow.db'}"
    out = _out_path(args, args["run"] if _RUN_ID.match(args["run"]) else None, overwrite, uri)  # before any work
    if uri.startswith("sqlite:///") and not Path(uri[len("sqlite:///"):]).is_file():
        raise TrackingError(f"no tracking database at {uri}; pass tracking_uri=... or set MLFLOW_TRACKING_URI")
    check_readable(uri)
    client = MlflowClient(tracking_uri=uri)
    with quiet_mlflow():
        run = find_run(client, args["run"], args.get("experiment"), latest=latest)
    rid = run.info.run_id
    out = out or _out_path(args, rid, overwrite, uri)  # a run given by name: checked before its model is loaded
    model, classes, note = load_run_model(run, uri, trust=trust)
    if note:
        print(f"warning: the model of run {rid} was {note}", file=sys.stderr)
    with_sets = with_sets and _check_sets(model, rid)
    abstain = abstain and _check_abstain(model, rid)
    chunks = _new_row_chunks(model, args["data"], args.get("data_home") or os.environ.get("PLCORE_DATA_HOME"))
    n, header = 0, False
    with atomic_write(out) as tmp, open(tmp, "w", newline="") as fh, _progress() as bar:
        writer = csv.writer(fh)  # written as the rows are predicted, then renamed: never half a file
        for rows, table, encoded in chunks:
            ids = _ids(table, args.get("id_column"), args["data"])
            try:
                Z = rows if encoded else _prediction_model(model, classes).encode(rows)
                labels, scores, names = predict_file(model, classes, Z, encoded=True)
                sets = prediction_sets(model, classes, Z, encoded=True) if with_sets else None
                reject = reject_scores(model, classes, Z, encoded=True) if abstain else None
            except DataValidationError as err:
                raise DataValidationError(f"{args['data']}: {err}") from None
            except Exception as err:  # noqa: BLE001 - a model another plcore version wrote
                if not note:
                    raise
                raise ConfigError(f"the model of run {rid} failed to predict ({type(err).__name__}: {err}); it was "
                                  f"{note}: install those versions to use it") from None
            if not header:  # once, from the first piece (empty or not)
                writer.writerow(_header(ids, scores, names, sets, reject))
                header = True
            _write_rows(writer, n, ids, labels, scores, sets, reject)
            n += len(labels)
            bar.update(len(labels))
    print(f"{n} predictions of run {rid} ({run.info.run_name}) written to {out}")
    return 0


def _new_row_chunks(model, data: str, data_home=None):
    """The new rows of :func:`read_new_rows` as ``(rows, table or None, encoded)``, piece by piece:
    a CSV or Parquet file read by column names in frames of about :data:`CHUNK_CELLS` cells
    (:func:`~plcore.datasets.read_tables`), anything else whole."""
    from plcore.datasets import read_tables
    from plcore.datasets.formats import frame_suffixes

    if getattr(model, "feature_names_in_", None) is not None and Path(data).suffix.lower() in frame_suffixes():
        for table in read_tables(data, cells=CHUNK_CELLS):
            yield table, table, False
        return
    _, rows, table, encoded = read_new_rows(model, data, data_home)
    yield rows, table, encoded


def _progress():
    """A bar of the rows predicted, on stderr where it is a terminal (tqdm); nothing otherwise."""
    from tqdm import tqdm

    return tqdm(unit=" rows", file=sys.stderr, disable=not sys.stderr.isatty(), leave=False)


def _header(ids, scores, names, sets, reject) -> list:
    """The predictions CSV's first row: id or index, label, the scores, the set, the reject score."""
    return ([ids.column if ids is not None else "index", "label"]
            + ([f"score_{c}" for c in names] if scores is not None else [])
            + (["prediction_set"] if sets is not None else [])
            + (["reject_score"] if reject is not None else []))


def _write_rows(writer, start: int, ids, labels, scores, sets, reject) -> None:
    """One piece's rows of the predictions CSV (:func:`main`); ``start``: the position of its first row."""
    for i, label in enumerate(labels if reject is None else np.where(reject > 0, labels, "abstain").tolist()):
        writer.writerow([ids.values[i] if ids is not None else start + i, label]
                        + ([f"{v:.6g}" for v in scores[i]] if scores is not None else [])
                        + ([sets[i]] if sets is not None else [])
                        + ([f"{reject[i]:.6g}"] if reject is not None else []))


def _prediction_model(model, classes):
    """``model`` as a :class:`plcore.feature_columns.PredictionModel` (a bare pipeline wrapped with ``classes``)."""
    from plcore.feature_columns import PredictionModel

    return model if isinstance(model, PredictionModel) else PredictionModel(model, np.asarray(classes))


def _check_sets(model, rid) -> bool:
    """True, or one line refusing ``sets=true`` for a model whose final step has no ``predict_set``."""
    from plcore.run.pipeline import final_step

    final = final_step(getattr(model, "pipeline", model))
    if not hasattr(final, "predict_set"):
        raise ConfigError(f"sets=true: the model of run {rid} gives no prediction sets (its {type(final).__name__} "
                          "has no predict_set); train one with +learner=conformal_sets")
    return True


def prediction_sets(model, classes, rows, *, encoded: bool = False) -> list:
    """Each new row's prediction set (the final step's ``predict_set``) as its class names joined
    by ``|`` (an empty string for an empty set), for a model as in :func:`predict_file`."""
    from plcore.run.protocols._sets import predict_sets

    model = _prediction_model(model, classes)
    sets = predict_sets(model.pipeline, rows if encoded else model.encode(rows))
    names = np.array([str(c) for c in model.classes_])
    return ["|".join(names[row]) for row in sets]


def _check_abstain(model, rid) -> bool:
    """True, or one line refusing ``abstain=true`` for a model whose learner has no reject option."""
    from plcore.run.pipeline import final_step
    from plcore.tags import get_pll_tags

    final = final_step(getattr(model, "pipeline", model))
    if not get_pll_tags(final).reject_option:
        raise ConfigError(f"abstain=true: the model of run {rid} has no reject option (its {type(final).__name__} "
                          "lacks the tag reject_option); train one with +learner=dstpll")
    return True


def reject_scores(model, classes, rows, *, encoded: bool = False) -> np.ndarray:
    """Each new row's reject score (the learner's ``reject_score``; the prediction is accepted iff
    it is > 0), for a model as in :func:`predict_file`."""
    from plcore.run.protocols._reject import pipeline_reject_score

    model = _prediction_model(model, classes)
    return pipeline_reject_score(model.pipeline, rows if encoded else model.encode(rows))


def _ids(table, id_column, data):
    """The ids in ``id_column`` of the new rows (:class:`~plcore.data.RowIds`, as the loaders read
    an id column for training and ``clean``; None without it)."""
    from plcore.data import RowIds

    if not id_column:
        return None
    if table is None:
        raise ConfigError(f"id_column={id_column} needs data=<CSV, Parquet or ARFF file> read by column names (the "
                          f"model reads {data} by position)")
    if id_column not in table.columns:
        raise DataValidationError(f"{data}: id_column={id_column!r}: no such column; the columns are "
                                  f"{', '.join(map(repr, list(table.columns)[:20]))}")
    if list(table.columns).count(id_column) > 1:
        raise DataValidationError(f"{data}: id_column={id_column!r}: the file names that column more than once")
    return RowIds.read(id_column, table[id_column].tolist())
