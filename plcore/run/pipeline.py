"""The evaluated pipeline: ``scaler -> [reducer ->] learner``, preprocessing named by a
registered ``preprocessor`` component."""

from __future__ import annotations

from sklearn.base import clone
from sklearn.pipeline import Pipeline, make_pipeline

from plcore.exceptions import ConfigError
from plcore.preprocessing import RescaledReducer
from plcore.registry import get_registry

__all__ = ["make_preprocessor", "build_pipeline", "final_step"]


def make_preprocessor(preprocessing: str):
    """A fresh transformer for a preprocessing name, or None for ``"none"``.

    Names are components of kind ``preprocessor`` (``python -m plcore list``): the core's
    ``standardize``, ``minmax``, ``isotropic`` (:class:`IsotropicScaler`) and those plugins
    register (e.g. ``aknn``). As everywhere in Hydra, a user's own transformer class may be
    named by its dotted path (``mypackage.MyScaler``). The transformer is created with its
    defaults and, like every preprocessing, fitted on the training part only.
    """
    if preprocessing == "none" or preprocessing is None:
        return None
    if not isinstance(preprocessing, str):
        raise ConfigError(f"preprocessing must be a name or a dotted class path, got {preprocessing!r}")
    registry = get_registry()
    if ("preprocessor", preprocessing) in registry.components:
        return registry.create("preprocessor", preprocessing)
    if "." in preprocessing:
        import importlib

        module, _, name = preprocessing.rpartition(".")
        try:
            cls = getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as err:
            raise ConfigError(f"preprocessing {preprocessing!r} could not be imported: {err}") from err
        if not (hasattr(cls, "fit") and hasattr(cls, "transform")):
            raise ConfigError(f"preprocessing {preprocessing!r} is not a transformer (needs fit/transform)")
        return cls()
    names = registry.names("preprocessor") + ["none"]
    raise ConfigError(f"unknown preprocessing {preprocessing!r}; available: {', '.join(names)} "
                      "(or a dotted transformer class path)")


def build_pipeline(estimators, preprocessing: str = "standardize",
                   reduced_preprocessing: str = "none") -> Pipeline:
    """``make_pipeline(scaler, *estimators)`` with fresh clones of the estimators.

    With a reducer and a learner, ``reduced_preprocessing`` other than ``"none"`` also
    scales the reducer's output (fitted on the rows the reducer is fitted on).
    """
    if not isinstance(estimators, (list, tuple)):
        estimators = [estimators]
    steps = [clone(e) for e in estimators if e is not None]
    make_preprocessor(reduced_preprocessing)  # validates the name
    if reduced_preprocessing != "none" and len(steps) >= 2:
        steps[0] = RescaledReducer(steps[0], make_preprocessor(reduced_preprocessing))
    scaler = make_preprocessor(preprocessing)
    if scaler is not None:
        steps.insert(0, scaler)
    return make_pipeline(*steps)


def final_step(pipe):
    """The last step of a pipeline (the estimator itself when it is none)."""
    return pipe.steps[-1][1] if isinstance(pipe, Pipeline) else pipe
