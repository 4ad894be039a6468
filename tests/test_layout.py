"""Plugins mirror each other's layout (docs/writing_plugins.md): the same file for the same role."""

import ast
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PLUGINS = sorted(p for p in (REPO / "plugins").iterdir() if (p / "pyproject.toml").is_file())
HOOKS = {"plcore_components", "plcore_experiments", "plcore_report_writers"}


def _package(plugin: Path) -> Path:
    meta = tomllib.loads((plugin / "pyproject.toml").read_text())
    (entry,) = meta["project"]["entry-points"]["plcore"].values()
    module = entry.split(":")[0]
    assert module.endswith(".plugin"), f"{plugin.name}: the entry point must name <package>.plugin, got {module}"
    return plugin / module.rsplit(".", 1)[0]


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
    # public estimator modules have no underscore, kernels do; no test files inside the package
    assert not list(pkg.glob("test_*.py")), f"{plugin.name}: tests belong in tests/"
