"""Plugins mirror each other's layout (docs/writing_plugins.md): the same file for the same role."""

import ast
import importlib
import inspect
import re
import runpy
import sys
import tomllib
from importlib.metadata import version as installed_version
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
#: the public module of a plugin's warning and exception classes (docs/writing_plugins.md)
EXCEPTIONS_MODULE = "exceptions"
#: private module names that say nothing of their topic: a kernel is named ``_<topic>.py``
GENERIC_PRIVATE = {"_core", "_utils", "_util", "_helpers", "_misc", "_common", "_impl", "_internal", "_kernels"}


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


def _short(plugin: Path) -> str:
    """The package name without ``plcore_`` (``aknn``, ``baselines``, ...): the prefix of the
    plugin's test files and of its reference implementation."""
    return _package(plugin).name.removeprefix("plcore_")


def _is_private(module: str) -> bool:
    """``plcore_x._kernel`` or ``plcore_x._kernel.sub``: some part after the package starts with ``_``."""
    return any(part.startswith("_") for part in module.split(".")[1:])


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
    module defines a registered component class or a report writer (no kernel-only public module),
    except ``exceptions.py``, which defines warning and exception classes and nothing else.
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
    exceptions = f"{pkg.name}.{EXCEPTIONS_MODULE}"
    if exceptions in public:   # the one public module without a component: warnings and exceptions only
        assert not public[exceptions], f"{plugin.name}: {exceptions} holds {public[exceptions]}; it is for exceptions"
        tree = ast.parse((pkg / f"{EXCEPTIONS_MODULE}.py").read_text())
        defs = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
        module = importlib.import_module(exceptions)
        for node in defs:
            obj = getattr(module, node.name)
            assert inspect.isclass(obj) and issubclass(obj, BaseException), (
                f"{plugin.name}: {exceptions} defines {node.name}, not a warning or exception class")
        assert defs, f"{plugin.name}: {exceptions} defines no warning or exception class"
        del public[exceptions]
    empty = sorted(m for m, held in public.items() if not held)
    assert not empty, (f"{plugin.name}: public module(s) {empty} define no registered component or report "
                       "writer; move their functions into a private _<topic>.py (or _<method>.py)")


_EXCEPTION_BASE = re.compile(r"(Warning|Error|Exception)$")


@pytest.mark.parametrize("plugin", PLUGINS, ids=[p.name for p in PLUGINS])
def test_plugin_private_kernels_are_named_by_topic(plugin):
    """Private modules are ``_<topic>.py`` (``_projection.py``, ``_stream.py``, ``_simplex.py``):
    no ``_core.py`` or other name that says nothing of what the module holds. The plugin's warning
    and exception classes, which users catch or filter by name, live in the public
    ``exceptions.py``, not in a kernel."""
    pkg = _package(plugin)
    for path in sorted(pkg.glob("_*.py")):
        if path.name == "__init__.py":
            continue
        assert path.stem not in GENERIC_PRIVATE, (
            f"{plugin.name}: {path.relative_to(plugin)} is not named by topic; name the kernel after what it "
            f"holds (_projection.py, _stream.py, _simplex.py)")
    for path in sorted(pkg.glob("*.py")):
        if path.stem == EXCEPTIONS_MODULE:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(
                    _EXCEPTION_BASE.search(ast.unparse(base)) for base in node.bases):
                pytest.fail(f"{plugin.name}: {path.relative_to(plugin)} defines the exception class "
                            f"{node.name}; define it in {pkg.name}/{EXCEPTIONS_MODULE}.py")


# ----------------------------------------------------------------------------- versions
@pytest.mark.parametrize("plugin", PLUGINS, ids=[p.name for p in PLUGINS])
def test_plugin_version_in_one_place(plugin):
    """The version is written once, statically, in ``pyproject.toml`` (the package metadata): not
    ``dynamic``, not read from a file by the build backend, and no literal version in the package;
    a ``__version__`` is read from the metadata (``importlib.metadata.version``)."""
    meta = tomllib.loads((plugin / "pyproject.toml").read_text())
    project = meta["project"]
    assert "version" not in project.get("dynamic", []), f"{plugin.name}: the version is dynamic; write it in [project]"
    assert isinstance(project.get("version"), str), f"{plugin.name}: pyproject.toml has no static [project] version"
    assert "version" not in meta.get("tool", {}).get("hatch", {}), (
        f"{plugin.name}: [tool.hatch.version] reads the version from a file; keep it in [project] only")
    pkg = _package(plugin)
    for path in sorted(pkg.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value == project["version"]:
                pytest.fail(f"{plugin.name}: {path.relative_to(plugin)}:{node.lineno} writes the version "
                            f"{project['version']!r}; read it from the metadata")
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == "__version__" for t in targets):
                    assert not isinstance(node.value, ast.Constant), (
                        f"{plugin.name}: {path.relative_to(plugin)}:{node.lineno} sets __version__ to a literal; "
                        f"use importlib.metadata.version({project['name']!r})")
    module = importlib.import_module(pkg.name)
    assert installed_version(project["name"]) == project["version"], (
        f"{plugin.name}: installed as {installed_version(project['name'])}, pyproject.toml says "
        f"{project['version']}: reinstall the plugin")
    if hasattr(module, "__version__"):
        assert module.__version__ == project["version"]


# ----------------------------------------------------------------------------- the package's names
def _lazy_exports_call(tree: ast.Module) -> ast.Call:
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and ast.unparse(n.func).endswith("lazy_exports")]
    assert len(calls) <= 1, "one lazy_exports call"
    return calls[0] if calls else None


@pytest.mark.parametrize("plugin", PLUGINS, ids=[p.name for p in PLUGINS])
def test_plugin_public_names_come_from_public_modules(plugin):
    """``__init__.py`` serves public names only: each name of ``__all__`` and of its
    ``lazy_exports`` table (written out, not computed) is defined in a public module of the
    plugin (``learners.py``, ``exceptions.py``, ...), never in a private ``_<topic>.py``, which
    tests and benchmarks import directly when they need a kernel. ``__all__`` lists exactly the
    served names (and ``__version__``)."""
    pkg = _package(plugin)
    tree = ast.parse((pkg / "__init__.py").read_text())
    for node in ast.walk(tree):      # the TYPE_CHECKING imports too
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            bad = [n for n in names if n and n.split(".")[0] == pkg.name and _is_private(n)]
            assert not bad, f"{plugin.name}: __init__.py imports from the private {bad}"
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith(pkg.name + "."):
            assert not _is_private(node.value), f"{plugin.name}: __init__.py serves names from {node.value}"
    call = _lazy_exports_call(tree)
    exports = {}
    if call is not None:
        try:   # the table is written out: names and modules as literals
            exports = eval(compile(ast.Expression(call.args[1]), "__init__.py", "eval"), {"dict": dict})
        except NameError as exc:
            pytest.fail(f"{plugin.name}: __init__.py computes its lazy_exports table ({exc}); list the names")
    module = importlib.import_module(pkg.name)
    public = set(_public_modules(plugin))
    assert set(module.__all__) - {"__version__"} == set(exports), (
        f"{plugin.name}: __all__ and the lazy_exports table differ: {set(module.__all__) ^ set(exports)}")
    for name in module.__all__:
        if name == "__version__":
            continue
        assert exports[name] in public, f"{plugin.name}: {name} is served from {exports[name]}, not a public module"
        obj = getattr(module, name)
        assert inspect.isclass(obj) or inspect.isfunction(obj), (
            f"{plugin.name}: __all__ names {name}, a {type(obj).__name__}; export classes and functions")
        assert _defined_in(obj) in public, (
            f"{plugin.name}: {name} is defined in {_defined_in(obj)}; define public names in a public module")


@pytest.mark.parametrize("plugin", PLUGINS, ids=[p.name for p in PLUGINS])
def test_plugin_option_tables_live_in_plugin_py(plugin):
    """Option names (``+learner=<name>``) are declared in ``plugin.py`` (as ``ComponentSpec``
    names, or a module constant such as ``LEARNER_OPTIONS`` the hook loops over), which imports
    nothing of its own package. ``__init__.py`` holds no table: no dict constant, no
    ``lazy_exports(..., tables=...)``."""
    pkg = _package(plugin)
    tree = ast.parse((pkg / "__init__.py").read_text())
    for node in tree.body:
        if not isinstance(node, (ast.Assign, ast.AnnAssign)):
            continue
        value = node.value
        if isinstance(value, (ast.Dict, ast.DictComp)) or (
                isinstance(value, ast.Call) and ast.unparse(value.func) in ("dict", "dict.fromkeys")):
            pytest.fail(f"{plugin.name}: __init__.py:{node.lineno} defines a table; option tables go in plugin.py")
    call = _lazy_exports_call(tree)
    assert call is None or not [k for k in call.keywords if k.arg == "tables"], (
        f"{plugin.name}: __init__.py serves a table through lazy_exports(tables=...); keep option tables in plugin.py")
    hooks = ast.parse((pkg / "plugin.py").read_text())
    own = [n.module for n in ast.walk(hooks) if isinstance(n, ast.ImportFrom)
           and (n.module or "").split(".")[0] == pkg.name]
    own += [a.name for n in ast.walk(hooks) if isinstance(n, ast.Import) for a in n.names
            if a.name.split(".")[0] == pkg.name]
    assert not own, f"{plugin.name}: plugin.py imports {own}; declare the option table in plugin.py itself"
    literals = {n.value for n in ast.walk(hooks) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    names = [c.name for c in get_registry().components.values()
             if _norm(c.distribution) == _norm(_distribution(plugin))]
    missing = sorted(set(names) - literals)
    assert names and not missing, f"{plugin.name}: option names {missing} are not written in plugin.py"


# ----------------------------------------------------------------------------- tests and references
@pytest.mark.parametrize("plugin", PLUGINS, ids=[p.name for p in PLUGINS])
def test_plugin_test_files_are_named_alike(plugin):
    """``tests/`` holds ``test_conformance.py``, ``test_<short>_<topic>.py`` (``<short>``: the
    package name without ``plcore_``), at most one literal reference implementation
    ``<short>_reference.py`` and ``conftest.py``. A reference is imported by its plain name
    (``from <short>_reference import ...``): ``tests/conftest.py`` puts the folder on
    ``sys.path``, and no test file edits ``sys.path`` or loads a file by its path."""
    short = _short(plugin)
    tests = plugin / "tests"
    reference = f"{short}_reference.py"
    pattern = re.compile(rf"test_{re.escape(short)}_[a-z0-9]+(_[a-z0-9]+)*\.py")
    files = sorted(p.name for p in tests.glob("*.py"))
    bad = [f for f in files if f not in ("test_conformance.py", "conftest.py", reference) and not pattern.fullmatch(f)]
    assert not bad, (f"{plugin.name}: tests/{bad} named unlike the other plugins' (test_conformance.py, "
                     f"test_{short}_<topic>.py, {reference}, conftest.py)")
    assert [p for p in tests.iterdir() if p.is_dir() and p.name != "__pycache__"] == [], f"{plugin.name}: tests/ is flat"
    importers = []
    for path in sorted(tests.glob("*.py")):
        tree = ast.parse(path.read_text())
        if path.name != "conftest.py":
            loads = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                     and (n.attr == "spec_from_file_location" or ast.unparse(n) == "sys.path")]
            assert not loads, (f"{plugin.name}: tests/{path.name} uses {loads}: tests/conftest.py puts tests/ on "
                               f"sys.path, and the tests import {reference[:-3]} by its name")
        for node in ast.walk(tree):
            names = ([node.module] if isinstance(node, ast.ImportFrom) else
                     [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            if reference[:-3] in names:
                importers.append(path.name)
    if (tests / reference).is_file():
        conftest = tests / "conftest.py"
        assert conftest.is_file(), f"{plugin.name}: no tests/conftest.py to put tests/ on sys.path for {reference}"
        saved = list(sys.path)
        try:
            sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != tests.resolve()]
            runpy.run_path(str(conftest))
            on_path = any(Path(p or ".").resolve() == tests.resolve() for p in sys.path)
        finally:
            sys.path[:] = saved
        assert on_path, f"{plugin.name}: tests/conftest.py does not put tests/ on sys.path for {reference}"
        assert any(f.startswith("test_") for f in importers), f"{plugin.name}: no test imports {reference}"
    else:
        assert not importers, f"{plugin.name}: {importers} import {reference[:-3]}, which does not exist"


# ----------------------------------------------------------------------------- the core's layers
def test_import_contracts_hold():
    """``lint-imports`` (pyproject.toml: the core's layers, and plugins importing only public core
    modules) counts imports inside functions too."""
    import subprocess

    exe = Path(sys.executable).with_name("lint-imports")
    proc = subprocess.run([str(exe)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


def _private_core_modules() -> set[str]:
    return {".".join(p.relative_to(REPO).with_suffix("").parts) for p in (REPO / "plcore").rglob("_*.py")
            if not p.name.startswith("__")}


def test_the_private_modules_plugins_may_not_import_are_all_listed():
    meta = tomllib.loads((REPO / "pyproject.toml").read_text())
    (forbidden,) = [c for c in meta["tool"]["importlinter"]["contracts"] if c["type"] == "forbidden"
                    and not any(s.startswith("plcore.") for s in c["source_modules"])]  # the plugins' contract
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


# ----------------------------------------------------------------------------- renamed modules
#: old module -> where it moved (issue 70): the old path re-exports every name for one release
MOVED = {"plcore.run.comparison": "plcore.stats", "plcore.utils.candidates": "plcore.utils.matrices",
         "plcore.conformal": "plcore.prediction_sets", "plcore.tables": "plcore.feature_columns"}
#: renamed without an alias (nothing outside plcore's own commands could import them)
RENAMED = {"plcore.run.cleaning": "plcore.run.label_cleaning"}
OLD_NAMES = {**MOVED, **RENAMED}


@pytest.mark.parametrize("old", sorted(MOVED))
def test_a_moved_modules_old_path_serves_its_names_for_one_release_and_says_where_they_went(old):
    new = importlib.import_module(MOVED[old])
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=MOVED[old].replace(".", r"\.")):
        alias = importlib.import_module(old)
    assert new.__all__ and all(getattr(alias, name) is getattr(new, name) for name in new.__all__)


def test_nothing_in_the_repository_imports_a_moved_module():
    hits = []
    for path in [*REPO.glob("plcore/**/*.py"), *REPO.glob("plugins/*/plcore_*/**/*.py"), *REPO.glob("tests/*.py"),
                 *REPO.glob("benchmarks/*.py"), *REPO.glob("scripts/*.py")]:
        if ".".join(path.relative_to(REPO).with_suffix("").parts) in MOVED:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module in OLD_NAMES:
                hits.append(f"{path.relative_to(REPO)}: from {node.module}")
            elif isinstance(node, ast.Import):
                hits += [f"{path.relative_to(REPO)}: import {a.name}" for a in node.names if a.name in OLD_NAMES]
    assert hits == []
