"""Plugins mirror each other's layout (docs/writing_plugins.md): the same file for the same role."""

import ast
import importlib
import inspect
import tomllib
from pathlib import Path

import pytest

from plcore.registry import get_registry

REPO = Path(__file__).resolve().parents[1]
PLUGINS = sorted(p for p in (REPO / "plugins").iterdir() if (p / "pyproject.toml").is_file())
HOOKS = {"plcore_components", "plcore_experiments", "plcore_report_writers"}
#: public modules named by kind (docs/writing_plugins.md, "Module names") -> the component kind
#: they hold (None: report writers)
KIND_MODULES = {"learners": "learner", "reducers": "reducer", "clusterers": "clusterer",
                "preprocessing": "preprocessor", "bags": "bags", "reports": None}


def _package(plugin: Path) -> Path:
    meta = tomllib.loads((plugin / "pyproject.toml").read_text())
    (entry,) = meta["project"]["entry-points"]["plcore"].values()
    module = entry.split(":")[0]
    assert module.endswith(".plugin"), f"{plugin.name}: the entry point must name <package>.plugin, got {module}"
    return plugin / module.rsplit(".", 1)[0]


def _distribution(plugin: Path) -> str:
    return tomllib.loads((plugin / "pyproject.toml").read_text())["project"]["name"]


def _defined_in(obj):
    """The module (dotted name) where a registered class or function is defined."""
    if not (inspect.isclass(obj) or inspect.isfunction(obj)):
        obj = getattr(obj, "function", obj)      # a ProtocolSpec: its function
    return obj.__module__


def _public_modules(plugin: Path) -> dict:
    """``{dotted module name: {}}`` for the plugin's public modules: every ``.py`` file of the
    (flat) package other than ``__init__.py``, ``plugin.py`` and the private ``_<topic>.py``."""
    pkg = _package(plugin)
    modules = {}
    for path in sorted(pkg.rglob("*.py")):
        assert path.parent == pkg, f"{plugin.name}: {path.relative_to(plugin)}: keep the package flat"
        if path.stem in ("__init__", "plugin") or path.stem.startswith("_"):
            continue
        modules[f"{pkg.name}.{path.stem}"] = {}
    return modules


@pytest.mark.parametrize("plugin", PLUGINS, ids=[p.name for p in PLUGINS])
def test_plugin_layout(plugin):
    pkg = _package(plugin)
    assert plugin.name == "plcore-" + pkg.name.removeprefix("plcore_").replace("_", "-")
    for path in ("README.md", "tests/test_conformance.py", f"{pkg.name}/__init__.py", f"{pkg.name}/plugin.py"):
        assert (plugin / path).is_file(), f"{plugin.name}: missing {path}"
    presets = pkg / "experiments"
    assert not presets.exists() or all(p.suffix == ".yaml" for p in presets.iterdir()), presets
    # plugin.py holds hook implementations only (plus imports and module constants)
    tree = ast.parse((pkg / "plugin.py").read_text())
    functions = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    assert set(functions) <= HOOKS, f"{plugin.name}: plugin.py defines {set(functions) - HOOKS}; keep code elsewhere"
    # no test files inside the package (module roles: test_plugin_module_roles)
    assert not list(pkg.glob("test_*.py")), f"{plugin.name}: tests belong in tests/"


def _norm(name: str) -> str:
    return name.lower().replace("_", "-")


@pytest.mark.parametrize("plugin", PLUGINS, ids=[p.name for p in PLUGINS])
def test_plugin_module_roles(plugin):
    """Module names (docs/writing_plugins.md): ``__init__.py``, ``plugin.py``, private ``_<topic>.py``
    kernels and public modules; every registered class lives in a public module, and every public
    module defines a registered component class or a report writer (no kernel-only public module).
    A public module named by kind (``learners.py``, ``reducers.py``, ...) holds that kind only."""
    pkg = _package(plugin)
    public = _public_modules(plugin)
    components = [c for c in get_registry().components.values()
                  if _norm(c.distribution) == _norm(_distribution(plugin))]
    assert components, f"{plugin.name}: registers no component (is it installed?)"
    hooks = importlib.import_module(f"{pkg.name}.plugin")
    writers = dict(hooks.plcore_report_writers()) if hasattr(hooks, "plcore_report_writers") else {}
    writers = {name: get_registry().report_writer(name) for name in writers}
    defined = [(c.kind, c.name, _defined_in(c.spec.cls)) for c in components]
    defined += [(None, name, _defined_in(w)) for name, w in writers.items()]
    for kind, name, module in defined:
        what = f"{kind} {name!r}" if kind else f"report writer {name!r}"
        assert module in public, (
            f"{plugin.name}: {what} is defined in {module}, not in a public module of {pkg.name} "
            f"({', '.join(sorted(public))}); kernels go in _<topic>.py, classes in learners.py, reducers.py, ...")
        public[module].setdefault(kind, []).append(name)   # {kind (None: writer): [names]}
        stem = module.rsplit(".", 1)[1]
        if stem in KIND_MODULES:
            holds = KIND_MODULES[stem] or "report writers"
            assert kind == KIND_MODULES[stem], f"{plugin.name}: {module} holds {what}; it is for {holds}"
    empty = sorted(m for m, held in public.items() if not held)
    assert not empty, (f"{plugin.name}: public module(s) {empty} define no registered component or report "
                       "writer; move their functions into a private _<topic>.py (or _<method>.py)")


# ----------------------------------------------------------------------------- the core's layers
def test_import_contracts_hold():
    """``lint-imports`` (pyproject.toml: the core's layers, and plugins importing only public core
    modules) counts imports inside functions too."""
    import subprocess
    import sys

    exe = Path(sys.executable).with_name("lint-imports")
    proc = subprocess.run([str(exe)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


def _private_core_modules() -> set[str]:
    return {".".join(p.relative_to(REPO).with_suffix("").parts) for p in (REPO / "plcore").rglob("_*.py")
            if not p.name.startswith("__")}


def test_the_private_modules_plugins_may_not_import_are_all_listed():
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())
    (forbidden,) = [c for c in meta["tool"]["importlinter"]["contracts"] if c["type"] == "forbidden"]
    assert set(forbidden["forbidden_modules"]) == _private_core_modules()
    plugin_packages = {_package(p).name for p in PLUGINS}
    assert set(forbidden["source_modules"]) == plugin_packages
    assert plugin_packages <= set(meta["tool"]["importlinter"]["root_packages"])


def test_no_import_cycle_among_the_cores_modules():
    """No module of plcore imports, directly or through others, a module that imports it back
    (every import counted, inside functions too)."""
    import grimp

    graph = grimp.build_graph("plcore", include_external_packages=False)
    cycles = []
    for module in sorted(graph.modules):
        for imported in graph.find_modules_directly_imported_by(module):
            if graph.chain_exists(importer=imported, imported=module):
                cycles.append((module, imported))
    assert cycles == []
