"""Lazy public names for packages (PEP 562), so that importing a package -- and the plugin
registry, which imports every plugin's ``plugin.py`` -- loads no estimator module and no heavy
dependency (scikit-learn, numba, PyTorch, cvxpy) until a name is used."""

from __future__ import annotations

import importlib

__all__ = ["lazy_exports"]


def lazy_exports(namespace: dict, exports: dict[str, str], tables: dict[str, dict[str, str]] | None = None):
    """Module-level ``__getattr__`` and ``__dir__`` serving ``exports`` (``{name: module}``).

    Use in a package's ``__init__.py``::

        __getattr__, __dir__ = lazy_exports(globals(), {"PlcClusterer": "plcore_plc.clusterers"})

    The first access imports the module and caches the value in the package namespace.
    ``tables`` (``{name: {key: exported name}}``) serves dicts of exported values, e.g.
    ``{"LEARNERS": {"proden": "ProdenLearner", ...}}`` -> ``LEARNERS["proden"]`` is the class.
    """
    package = namespace["__name__"]
    tables = dict(tables or {})

    def __getattr__(name):
        if name in tables:
            value = {key: __getattr__(exported) for key, exported in tables[name].items()}
        elif name in exports:
            value = getattr(importlib.import_module(exports[name]), name)
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    def __dir__():
        return sorted(set(namespace) | set(exports) | set(tables))

    return __getattr__, __dir__
