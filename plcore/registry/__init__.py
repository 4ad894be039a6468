"""The plugin API: what a plugin declares (:class:`ComponentSpec`, :class:`ProtocolSpec`), the
hooks it implements (:mod:`plcore.registry.hookspecs`, :data:`hookimpl`), its presets
(:func:`load_presets`) and the registry that finds the built-ins and every installed plugin
through pluggy (:class:`Registry`, :func:`get_registry`)."""

from plcore.registry._registry import (Component, PluginLoadError, Registry, get_registry, model_packages,
                                      pip_requirements)
from plcore.registry.hookspecs import hookimpl
from plcore.registry.presets import load_presets
from plcore.registry.specs import COMPONENT_KINDS, ESTIMATOR_KINDS, METHOD_KINDS, ComponentSpec, ProtocolSpec

__all__ = ["ComponentSpec", "ProtocolSpec", "Component", "PluginLoadError", "Registry", "get_registry",
           "pip_requirements", "model_packages", "hookimpl", "load_presets", "COMPONENT_KINDS",
           "ESTIMATOR_KINDS", "METHOD_KINDS"]
