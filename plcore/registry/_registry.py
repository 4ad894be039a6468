"""The component registry: built-ins and plugins, discovered with pluggy.

Every component -- the built-in PL-KNN, bag generators, data sets and protocols as much
as a third-party method -- arrives through the ``plcore_components`` hook as a
:class:`ComponentSpec`. Plugins are found through the entry-point group ``plcore``;
each entry point is loaded on its own, so a broken plugin is reported (see
:attr:`Registry.errors`) while the others keep working.
"""

from __future__ import annotations

import importlib
import inspect
import os
import traceback
from dataclasses import dataclass
from importlib import metadata
from typing import Any

import pluggy

from plcore.exceptions import ConfigError, PluginError
from plcore.registry import hookspecs
from plcore.registry.specs import (COMPONENT_KINDS, ESTIMATOR_KINDS, METHOD_KINDS, ComponentSpec, ProtocolSpec,
                                   _import_path)

__all__ = ["Component", "PluginLoadError", "Registry", "get_registry", "pip_requirements", "model_packages"]

BUILTIN_PLUGINS = ("plcore.run.builtins",)


@dataclass
class Component:
    """A registered component with its provenance."""

    spec: ComponentSpec
    plugin: str
    distribution: str
    version: str

    @property
    def kind(self):
        return self.spec.kind

    @property
    def name(self):
        return self.spec.name

    @property
    def description(self) -> str:
        if self.spec.description:
            return self.spec.description
        if self.spec.lazy:
            return ""
        doc = inspect.getdoc(self.spec.cls) or ""
        return doc.strip().splitlines()[0] if doc.strip() else ""

    def config(self) -> dict:
        """The Hydra config node of this component (a fresh dict): the declared constructor
        defaults, then the spec's ``config_overrides``."""
        if self.spec.config is not None:
            node = dict(self.spec.config)
            if self.kind in ESTIMATOR_KINDS and "_target_" not in node:
                node = {"_target_": self.spec.target, **node}
        elif self.kind in ESTIMATOR_KINDS:
            cls = self.spec.cls
            node = {"_target_": f"{cls.__module__}.{cls.__qualname__}", **cls().get_params(deep=False)}
        else:
            node = {}
        return {**node, **self.spec.config_overrides}


@dataclass
class PluginLoadError:
    """A plugin that could not be loaded."""

    entry_point: str
    distribution: str
    version: str
    error: str
    traceback: str = ""


@dataclass
class _Provider:
    plugin: str
    distribution: str
    version: str


class Registry:
    """Loads plugins and indexes their components by ``(kind, name)``.

    Use :func:`get_registry` for the process-wide instance; tests build their own.
    """

    def __init__(self):
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.components: dict[tuple[str, str], Component] = {}
        self.errors: list[PluginLoadError] = []
        self.experiments: dict[str, dict] = {}
        self.report_writers: dict[str, Any] = {}
        self._providers: dict[int, _Provider] = {}
        self._loaded = False

    # ----------------------------------------------------------------- loading
    def register(self, plugin, name: str | None = None, *, distribution: str = "plcore",
                 version: str | None = None) -> None:
        """Register a plugin object/module directly (built-ins and tests)."""
        if isinstance(plugin, str):
            plugin = importlib.import_module(plugin)
        if version is None:
            from plcore._version import __version__ as version
        pname = name or getattr(plugin, "__name__", repr(plugin))
        self.pm.register(plugin, name=pname)
        self._providers[id(plugin)] = _Provider(pname, distribution, version)

    def load(self, *, entry_points: bool = True, builtins: bool = True) -> "Registry":
        """Register built-ins and every entry point of group ``plcore``; collect components.

        Idempotent. ``$PLCORE_LOAD_PLUGINS=a,b`` limits entry points to those names.
        """
        if self._loaded:
            return self
        if builtins:
            for mod in BUILTIN_PLUGINS:
                self.register(mod)
        if entry_points:
            self._load_entry_points()
        self.pm.check_pending()
        self._collect()
        self._loaded = True
        return self

    def _load_entry_points(self):
        only = os.environ.get("PLCORE_LOAD_PLUGINS")
        only = {s.strip() for s in only.split(",")} if only else None
        for ep in sorted(metadata.entry_points(group=hookspecs.ENTRY_POINT_GROUP), key=lambda e: e.name):
            if only is not None and ep.name not in only:
                continue
            dist = getattr(ep, "dist", None)
            dname = dist.name if dist is not None else "?"
            dver = dist.version if dist is not None else "?"
            if self.pm.get_plugin(ep.name) is not None:
                self.errors.append(PluginLoadError(
                    ep.name, dname, dver,
                    f"entry point name {ep.name!r} is already used by another plugin; names must be unique"))
                continue
            plugin = None
            try:
                plugin = ep.load()
                self.pm.register(plugin, name=ep.name)
                self.pm.check_pending()  # misspelled hook names (e.g. plcore_component)
            except Exception as err:  # noqa: BLE001 - report and keep going
                if plugin is not None and self.pm.is_registered(plugin):
                    self.pm.unregister(plugin)
                self.errors.append(PluginLoadError(ep.name, dname, dver, f"{type(err).__name__}: {err}",
                                                   traceback.format_exc()))
                continue
            self._providers[id(plugin)] = _Provider(ep.name, dname, dver)

    def _collect(self):
        for impl in self.pm.hook.plcore_components.get_hookimpls():
            provider = self._providers.get(id(impl.plugin), _Provider(impl.plugin_name, "?", "?"))
            try:
                specs = impl.function() or []
                for spec in specs:
                    self._add(spec, provider)
            except PluginError:
                raise
            except Exception as err:  # noqa: BLE001
                self._error(provider, f"plcore_components() failed: {type(err).__name__}: {err}")
        self._collect_named("plcore_experiments", "experiment preset", self.experiments)
        self._collect_named("plcore_report_writers", "report writer", self.report_writers)

    def _collect_named(self, hook: str, what: str, into: dict) -> None:
        """Merge the ``{name: value}`` dicts every plugin returns from ``hook`` into ``into``;
        a name provided twice is a hard error naming both providers."""
        owners: dict[str, _Provider] = {}
        for impl in getattr(self.pm.hook, hook).get_hookimpls():
            provider = self._providers.get(id(impl.plugin), _Provider(impl.plugin_name, "?", "?"))
            try:
                items = dict(impl.function() or {})
            except Exception as err:  # noqa: BLE001
                self._error(provider, f"{hook}() failed: {type(err).__name__}: {err}")
                continue
            for name, value in items.items():
                if name in owners:
                    old = owners[name]
                    raise PluginError(f"{what} {name!r} is provided twice: by {old.plugin!r} "
                                      f"({old.distribution}) and by {provider.plugin!r} ({provider.distribution})")
                owners[name] = provider
                into[name] = value

    def _error(self, provider: _Provider, message: str):
        self.errors.append(PluginLoadError(provider.plugin, provider.distribution, provider.version, message,
                                           traceback.format_exc()))

    def _add(self, spec: ComponentSpec, provider: _Provider):
        """Index one spec. Invalid specs are reported as load errors and skipped; a duplicate
        ``(kind, name)`` is a hard error naming both providers (which one to use is ambiguous)."""
        problem = None
        if not isinstance(spec, ComponentSpec):
            problem = f"returned {type(spec).__name__}, expected plcore.registry.ComponentSpec"
        elif spec.kind not in COMPONENT_KINDS:
            problem = f"registers {spec.name!r} with unknown kind {spec.kind!r}; kinds are {COMPONENT_KINDS}"
        elif spec.lazy:
            problem = self._lazy_problem(spec)
        else:
            problem = self._class_problem(spec)
        if problem is None and not (isinstance(spec.display_name, str) and spec.display_name
                                    and spec.display_name == spec.display_name.strip()
                                    and "\n" not in spec.display_name):
            problem = (f"registers {spec.kind} {spec.name!r} with display_name={spec.display_name!r}; "
                       "a display name is one non-empty line")
        if problem is None and spec._prequential is not None and not (
                callable(spec._prequential) or isinstance(spec._prequential, str)):
            problem = f"registers {spec.kind} {spec.name!r} with a prequential kernel that is not callable"
        if problem is not None:
            self._error(provider, problem)
            return
        key = (spec.kind, spec.name)
        if key in self.components:
            old = self.components[key]
            raise PluginError(
                f"{spec.kind} {spec.name!r} is registered twice: by {old.plugin!r} "
                f"({old.distribution} {old.version}) and by {provider.plugin!r} "
                f"({provider.distribution} {provider.version}); uninstall one of them")
        self.components[key] = Component(spec, provider.plugin, provider.distribution, provider.version)

    @staticmethod
    def _lazy_problem(spec: ComponentSpec) -> str | None:
        """What is wrong with a component declared by its import path (checked without importing)."""
        module, sep, attr = spec._cls.partition(":")
        if not (sep and module and attr):
            return (f"registers {spec.kind} {spec.name!r} as {spec._cls!r}; an import path must read "
                    "'package.module:QualName'")
        if not spec.description:
            return f"registers {spec.kind} {spec.name!r} by its import path without a description"
        if spec.kind in ESTIMATOR_KINDS + ("dataset", "protocol") and not isinstance(spec.config, dict):
            return (f"registers {spec.kind} {spec.name!r} by its import path without its config node "
                    "(the constructor's parameters and their defaults)")
        return None

    @staticmethod
    def _class_problem(spec: ComponentSpec) -> str | None:
        """What is wrong with a component given as an object (the class is checked now)."""
        if spec.kind in ESTIMATOR_KINDS:
            from plcore.base import KINDS

            base = KINDS[spec.kind]
            if not (isinstance(spec.cls, type) and issubclass(spec.cls, base)):
                return (f"registers {spec.kind} {spec.name!r} as {spec.cls!r}, which does not subclass "
                        f"plcore.base.{base.__name__}")
            if spec.config is None:
                try:  # the default config instantiates the class with its defaults: fail here, per plugin
                    spec.cls().get_params(deep=False)
                except Exception as err:  # noqa: BLE001
                    return (f"registers {spec.kind} {spec.name!r} as {spec.cls.__qualname__}, which cannot be "
                            f"created with its default parameters: {type(err).__name__}: {err}")
        elif spec.kind == "preprocessor" and not (
                isinstance(spec.cls, type) and hasattr(spec.cls, "fit") and hasattr(spec.cls, "transform")):
            return f"registers preprocessor {spec.name!r} as {spec.cls!r}, which is not a transformer class"
        elif spec.kind == "protocol":
            if not isinstance(spec.cls, ProtocolSpec):
                return f"registers protocol {spec.name!r} as {spec.cls!r}, expected a plcore.registry.ProtocolSpec"
        return None

    # ----------------------------------------------------------------- queries
    def names(self, kind: str) -> list[str]:
        return sorted(name for (k, name) in self.components if k == kind)

    def get(self, kind: str, name: str) -> Component:
        try:
            return self.components[(kind, name)]
        except KeyError:
            raise ConfigError(f"unknown {kind} {name!r}; available: {', '.join(self.names(kind)) or '(none)'}"
                              ) from None

    def create(self, kind: str, name: str, **params):
        """Instantiate the estimator (or preprocessor) registered as ``(kind, name)`` with ``params``."""
        comp = self.get(kind, name)
        if kind not in ESTIMATOR_KINDS + ("preprocessor",):
            raise ConfigError(f"{kind} components are not estimators; create() makes learners, reducers, "
                              "clusterers, bag generators and preprocessors")
        return comp.spec.cls(**params)

    def prequential_kernel(self, estimator):
        """The compiled predict-then-update kernel registered for ``type(estimator)``, or None.

        Only the exact registered class matches: a subclass may change the updates.
        """
        comp = self.component_of(estimator)
        return comp.spec.prequential if comp is not None else None

    def component_of(self, estimator, kind: str | None = None) -> Component | None:
        """The component registered as exactly ``type(estimator)`` (or the class itself), or None.

        Imports no other component's module (see :meth:`ComponentSpec.matches`).
        """
        cls = estimator if isinstance(estimator, type) else type(estimator)
        for comp in self.components.values():
            if (kind is None or comp.kind == kind) and comp.kind in ESTIMATOR_KINDS + ("preprocessor",) \
                    and comp.spec.matches(cls):
                return comp
        return None

    def display_name(self, *, name: str | None = None, target: str | None = None,
                     kinds=METHOD_KINDS) -> str | None:
        """The display name (``PL-KNN``) of the component of ``kinds`` registered as ``name``,
        else of the one whose class is ``target`` (``module.QualName``, as a run logs
        ``learner._target_``); None where there is none. Imports nothing."""
        found = [c for c in self.components.values() if c.kind in kinds]
        for comp in found:
            if name is not None and comp.name == name:
                return comp.spec.display_name
        for comp in found:
            if target is not None and comp.spec.target == target:
                return comp.spec.display_name
        return None

    def report_writer(self, name: str):
        """The report writer registered as ``name`` (imported now if declared by its import path)."""
        writer = self.report_writers[name]
        if isinstance(writer, str):
            writer = self.report_writers[name] = _import_path(writer)
        return writer

    def distributions(self) -> dict[str, str]:
        """``{distribution: version}`` of every loaded plugin (for run tags)."""
        return {c.distribution: c.version for c in self.components.values()}

    def table(self) -> list[dict]:
        """One row per component, sorted by kind and name (for listings)."""
        return [
            {"kind": c.kind, "name": c.name, "distribution": c.distribution, "version": c.version,
             "description": c.description}
            for _, c in sorted(self.components.items())
        ]


_REGISTRY: Registry | None = None


def get_registry() -> Registry:
    """The process-wide registry, loaded on first use."""
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = Registry().load()
    return _REGISTRY


def model_packages(registry: Registry | None = None) -> list[str]:
    """The top-level packages whose classes a logged model may hold and plcore trusts when it
    reads one (:mod:`plcore.tracking.models`): plcore's and those of the installed plugins'
    components (estimators and preprocessors)."""
    registry = registry or get_registry()
    kinds = ESTIMATOR_KINDS + ("preprocessor",)
    return sorted({"plcore"} | {c.spec.target.split(".", 1)[0] for c in registry.components.values()
                                if c.kind in kinds and c.spec.target and not c.spec.target.startswith("?")})


def pip_requirements(registry: Registry | None = None) -> list[str]:
    """``name==version`` of plcore, its installed plugins and the numeric stack (a logged
    model's requirements, pinned where the model is fitted; the model's serializer is added
    where it is saved)."""
    registry = registry or get_registry()
    names = ["plcore", "numpy", "scipy", "scikit-learn"]
    names += sorted(d for d in registry.distributions() if d.lower().startswith("plcore-"))
    out = []
    for name in names:
        try:
            out.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return out
