"""Lazy public names for packages (PEP 562), so that importing a package -- and the plugin
registry, which imports every plugin's ``plugin.py`` -- loads no estimator module and no heavy
dependency (scikit-learn, numba, PyTorch, cvxpy) until a name is used."""

from __future__ import annotations

import importlib

__all__ = ["lazy_exports"]


def lazy_exports(namespace: dict, exports: dict[str, str]):
    """Module-level ``__getattr__`` and ``__dir__`` serving ``exports`` (``{name: module}``).

    Use in a package's ``__init__.py``::

        __getattr__, __dir__ = lazy_exports(globals(), {"PlcClusterer": "plcore_plc.clusterers"})

    The first access imports the module and caches the value in the package namespace.
    """
    package = namespace["__name__"]

    def __getattr__(name):
        try:
            module = exports[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__():
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
