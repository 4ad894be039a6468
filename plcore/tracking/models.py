"""A run's model: written with skops, which runs no code when a model is read, and read back
only with the types plcore trusts; a pickle is read only where the user says the store is
trusted.

plcore trusts the classes (never functions) of numpy, scipy, scikit-learn and of ``packages``,
the packages of plcore and its installed plugins (:func:`plcore.registry.model_packages`). The
list of trusted types a model carries (MLflow's ``skops_trusted_types`` in its ``MLmodel``,
which ``mlflow.sklearn.load_model`` uses) is not consulted: a crafted model could name anything
there. A pipeline that skops cannot write, or that holds a type plcore does not trust (a class
of the user's own, named by its dotted path), is written with cloudpickle, and the run says so
(tag ``plcore.model_format``).

The model is an MLflow model (``model``) of the run, saved to a local folder first
(:func:`save_model`) and uploaded from there (:func:`log_saved_model`): the same folder is what
a fallback file keeps beside it when the store fails, and what ``python -m plcore import`` logs.
"""

from __future__ import annotations

import importlib
import json
import shutil
import sys
import tempfile
import types
import warnings
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path

from plcore.exceptions import ConfigError
from plcore.tracking.quiet import quiet_mlflow

__all__ = ["SAFE_FORMAT", "skops_io", "trusted", "untrusted_types", "missing_types", "choose_format", "served_model",
           "save_model", "log_saved_model", "download_model", "load_model", "model_versions", "version_note"]

SAFE_FORMAT = "skops"
#: libraries whose classes plcore trusts in a model
LIBRARIES = ("numpy", "scipy", "sklearn")
#: the serializer each format needs at load time (a model's pip requirement)
_SERIALIZER = {"skops": "skops", "cloudpickle": "cloudpickle"}


#: scikit-learn's namespace for PyTorch arrays: a package, so listing scikit-learn's estimators
#: (skops does on import, for its default trusted types) imports PyTorch through it
_SKLEARN_TORCH = "sklearn.externals.array_api_compat.torch"


def skops_io():
    """``skops.io``, imported without PyTorch: skops lists scikit-learn's estimators when it is
    first imported, and scikit-learn's package walk imports :data:`_SKLEARN_TORCH`, hence
    PyTorch, where it is installed (3-4 s of the 5 s skops took on a loaded 2-core machine;
    ``benchmarks/model_formats.py``). An empty stand-in package is in place for that walk only
    (it holds no estimator); where PyTorch is already imported, nothing is changed."""
    if "skops.io" in sys.modules or "torch" in sys.modules or _SKLEARN_TORCH in sys.modules:
        import skops.io

        return skops.io
    stub = types.ModuleType(_SKLEARN_TORCH)
    stub.__path__ = []
    sys.modules[_SKLEARN_TORCH] = stub
    try:
        import skops.io
    finally:
        if sys.modules.get(_SKLEARN_TORCH) is stub:
            del sys.modules[_SKLEARN_TORCH]
    return skops.io


def _resolve(name: str):
    """The object a dotted name denotes, importing its longest importable module prefix; None
    where there is none."""
    parts = name.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except Exception:  # noqa: BLE001 - not a module (or a broken one): try a shorter prefix
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


def _ours(name: str, packages) -> bool:
    return name.split(".", 1)[0] in (*LIBRARIES, *packages)


def trusted(name: str, packages) -> bool:
    """Whether plcore trusts the type ``name`` (``module.Class``, as skops names it): a class of
    numpy, scipy, scikit-learn or one of ``packages``. Nothing outside them is imported to decide."""
    return _ours(name, packages) and isinstance(_resolve(name), type)


def missing_types(names, packages) -> list[str]:
    """The names among ``names`` that would be trusted but do not exist in the installed packages
    (a model another version wrote)."""
    return [n for n in names if _ours(n, packages) and _resolve(n) is None]


def untrusted_types(names, packages) -> list[str]:
    """The names among ``names`` that plcore does not trust (:func:`trusted`)."""
    return [n for n in names if not trusted(n, packages)]


def choose_format(pipeline, packages) -> tuple[str, list[str] | None, str | None]:
    """``("skops", types to declare trusted, None)``, or ``("cloudpickle", None, why)`` where skops
    cannot write the pipeline or it holds types plcore does not trust."""
    sio = skops_io()

    try:
        data = sio.dumps(pipeline)
    except Exception as err:  # noqa: BLE001 - skops refuses objects it cannot represent
        return "cloudpickle", None, f"skops cannot write it ({type(err).__name__}: {err})"
    names = sio.get_untrusted_types(data=data)
    bad = untrusted_types(names, packages)
    if bad:
        return "cloudpickle", None, f"it holds types plcore does not trust: {', '.join(bad)}"
    return SAFE_FORMAT, names, None


@contextmanager
def _pinned_requirements_unchecked():
    """Skip MLflow's check that the installed packages satisfy the model's requirements while
    saving a model: ours are pinned from the installed versions (:func:`pip_requirements`), so
    it cannot warn, and it costs 1.5-2 s per run (it maps every installed file to its package,
    13 times). Nothing is changed if MLflow's internals differ."""
    try:
        from mlflow.utils import environment
    except ImportError:  # pragma: no cover - mlflow is a dependency
        yield
        return
    original = getattr(environment, "warn_dependency_requirement_mismatches", None)
    if original is None:
        yield
        return
    environment.warn_dependency_requirement_mismatches = lambda requirements: None
    try:
        yield
    finally:
        environment.warn_dependency_requirement_mismatches = original


def served_model(model: dict):
    """``(PredictionModel, input example)`` of a run's refitted pipeline (``{"pipeline",
    "X_example", "classes", "features", ...}``): the model MLflow saves, which reads the
    training table's feature columns by name (``features``; by position where the data had no
    column names) and answers class names."""
    import numpy as np

    from plcore.feature_columns import PredictionModel

    features = model.get("features")
    served = PredictionModel(model["pipeline"], np.asarray(model["classes"]), features)
    return served, (model["X_example"] if features is None else features.example(1))


def _signature(served, example):
    """The model's MLflow signature: its feature columns by name where it has them (a numeric
    column of any type, MLflow refusing integers for doubles, the model converting and checking
    each value; a nominal one a string) and class names out; else MLflow's inference."""
    from mlflow.models import ModelSignature, infer_signature
    from mlflow.types.schema import AnyType, ColSpec, Schema

    inferred = infer_signature(example, served.predict(example))
    features = served.features
    if features is None:
        return inferred
    nominal = set(features.nominal_)
    inputs = Schema([ColSpec("string" if name in nominal else AnyType(), name) for name in features.feature_names_in_])
    return ModelSignature(inputs=inputs, outputs=inferred.outputs)


def save_model(model: dict, path: str | Path) -> tuple[str, str | None]:
    """Save the refitted pipeline of a run (``{"pipeline", "X_example", "classes", "features",
    "requirements", "packages"}``), wrapped in a :class:`~plcore.feature_columns.PredictionModel`
    (:func:`served_model`), as an MLflow scikit-learn model in the new folder ``path``, with a
    signature (the feature columns by name, class names out), explicit pinned requirements and
    ``classes.json``. Returns ``(format, why not skops or None)``."""
    import mlflow.sklearn

    pipe, X_example = served_model(model)
    fmt, types, why = choose_format(pipe, model.get("packages", ()))
    requirements = [r for r in model["requirements"] if r.split("==")[0] not in _SERIALIZER.values()]
    try:
        requirements.append(f"{_SERIALIZER[fmt]}=={metadata.version(_SERIALIZER[fmt])}")
    except metadata.PackageNotFoundError:  # pragma: no cover - both are MLflow's dependencies
        pass
    with warnings.catch_warnings(), _pinned_requirements_unchecked(), quiet_mlflow():
        warnings.simplefilter("ignore")  # MLflow's notes on integer columns and pickles
        signature = _signature(pipe, X_example)
        mlflow.sklearn.save_model(pipe, str(path), serialization_format=fmt, skops_trusted_types=types,
                                  signature=signature, pip_requirements=requirements)
    (Path(path) / "classes.json").write_text(json.dumps([str(c) for c in model["classes"]]))
    return fmt, why


def log_saved_model(client, run_id: str, path: str | Path) -> str:
    """Upload a model folder written by :func:`save_model` as the MLflow model ``model`` of the
    run (a logged model of the run's experiment, linked to the run as its output, and
    ``classes.json`` among the run's artifacts); nothing is loaded. Returns the model id."""
    from mlflow.entities import LoggedModelOutput
    from mlflow.models import Model

    path = Path(path)
    run = client.get_run(run_id)
    flavor = Model.load(str(path)).flavors.get("sklearn", {})
    logged = client.create_logged_model(run.info.experiment_id, name="model", source_run_id=run_id,
                                        params={k: v for k, v in run.data.params.items()},
                                        tags={"plcore.model_format": str(flavor.get("serialization_format"))})
    try:
        with tempfile.TemporaryDirectory(prefix="plcore-model-") as tmp:
            staged = Path(tmp) / "model"
            shutil.copytree(path, staged, ignore=shutil.ignore_patterns("classes.json"))
            mlmodel = Model.load(str(staged))
            mlmodel.model_id = mlmodel.model_uuid = logged.model_id
            mlmodel.run_id, mlmodel.artifact_path = run_id, logged.artifact_location
            mlmodel.save(str(staged / "MLmodel"))
            client.log_model_artifacts(logged.model_id, str(staged))
        client.log_outputs(run_id, [LoggedModelOutput(logged.model_id, step=0)])
        classes = path / "classes.json"
        if classes.is_file():
            client.log_text(run_id, classes.read_text(), "classes.json")
    except BaseException:
        try:
            client.finalize_logged_model(logged.model_id, "FAILED")
        except Exception:  # noqa: BLE001 - the store is failing: the original error says why
            pass
        raise
    client.finalize_logged_model(logged.model_id, "READY")
    client.set_tag(run_id, "plcore.model_format", str(flavor.get("serialization_format")))
    return logged.model_id


def download_model(tracking_uri: str, run_id: str, dst: str | Path) -> Path:
    """The run's model folder (its logged model ``model``, or for a run of MLflow 2 the run's
    artifact folder ``model``) with the run's ``classes.json``, downloaded into ``dst``. The
    store is named explicitly: MLflow's ``runs:/`` URIs look logged models up in the default
    store (MLflow 3.17)."""
    import mlflow.artifacts
    from mlflow.tracking import MlflowClient

    client, rid, dst = MlflowClient(tracking_uri=tracking_uri), run_id, Path(dst)
    run = client.get_run(rid)  # a run found by search may come without its outputs
    folder = dst / "model"
    folder.mkdir(parents=True)
    logged = [client.get_logged_model(o.model_id) for o in (run.outputs.model_outputs if run.outputs else [])]
    logged = [m for m in logged if m.name == "model"]
    if logged:
        got = mlflow.artifacts.download_artifacts(artifact_uri=logged[-1].artifact_location, dst_path=str(folder),
                                                  tracking_uri=tracking_uri)
    else:
        got = client.download_artifacts(rid, "model", str(dst))
    got = Path(got)
    if not (got / "MLmodel").is_file() and (got / "artifacts" / "MLmodel").is_file():
        got = got / "artifacts"
    shutil.copyfile(client.download_artifacts(rid, "classes.json", str(dst)), got / "classes.json")
    return got


def _model_file(folder: Path) -> tuple[str, Path]:
    import yaml

    try:
        conf = yaml.safe_load((folder / "MLmodel").read_text())["flavors"]["sklearn"]
        fmt, name = conf.get("serialization_format") or "pickle", conf["pickled_model"]
    except (OSError, KeyError, TypeError, yaml.YAMLError) as err:
        raise ConfigError(f"{folder} is not a scikit-learn MLflow model ({type(err).__name__}: {err})") from None
    file = (folder / name).resolve()
    if folder.resolve() not in file.parents:
        raise ConfigError(f"the model in {folder} names a file outside its folder ({name!r}); it is not loaded")
    return fmt, file


def load_model(folder: str | Path, packages, *, trust: bool = False, what: str = "the model"):
    """The pipeline of a model folder. A skops model is read with the types plcore trusts (and,
    with ``trust``, any it holds); a pickle (``cloudpickle``, ``pickle``) only with ``trust``.
    Anything refused raises :class:`~plcore.exceptions.ConfigError` in one line."""
    folder = Path(folder)
    fmt, file = _model_file(folder)
    if fmt == SAFE_FORMAT:
        sio = skops_io()

        names = sio.get_untrusted_types(file=file)
        missing = missing_types(names, packages)
        if missing:
            raise ConfigError(f"{what} needs {', '.join(missing[:5])}, which the installed packages lack")
        bad = untrusted_types(names, packages)
        if bad and not trust:
            raise ConfigError(f"{what} holds types plcore does not trust ({', '.join(bad[:5])}); loading them can "
                              "run code from the tracking store: pass trust=true if you trust the store")
        return sio.load(file, trusted=names)
    if not trust:
        raise ConfigError(f"{what} is a pickle ({fmt}): loading it runs code from the tracking store; pass "
                          "trust=true if you trust the store")
    import cloudpickle

    with open(file, "rb") as fh:
        return cloudpickle.load(fh)


def model_versions(folder: str | Path) -> dict[str, str]:
    """``{distribution: version}`` pinned in a model folder's ``requirements.txt``."""
    out = {}
    try:
        lines = (Path(folder) / "requirements.txt").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        name, sep, version = line.strip().partition("==")
        if sep:
            out[name.strip().lower()] = version.strip()
    return out


def version_note(folder: str | Path) -> str | None:
    """Where the model's plcore (or plugin) versions differ from the installed ones: ``"written
    by plcore 0.1.0 and plcore-deep 0.2.0; installed: plcore 0.2.0 and plcore-deep 0.3.0"``."""
    written, installed = [], []
    for name, version in sorted(model_versions(folder).items(), key=lambda kv: (kv[0] != "plcore", kv[0])):
        if name != "plcore" and not name.startswith("plcore-"):
            continue
        try:
            have = metadata.version(name)
        except metadata.PackageNotFoundError:
            have = "not installed"
        if have != version:
            written.append(f"{name} {version}")
            installed.append(f"{name} {have}")
    if not written:
        return None
    return f"written by {' and '.join(written)}; installed: {' and '.join(installed)}"
