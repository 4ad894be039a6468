"""Plugins installed the way users install them, discovered through the ``plcore`` entry point.

The example plugin (docs/examples/plcore-example-plugin) and a deliberately broken one are
built and installed *without network access* (``pip install --no-deps --no-build-isolation
--no-index --target DIR``, using the hatchling of this environment); ``python -m plcore``
then runs in a subprocess with ``PYTHONPATH=DIR``, so the plugins' entry points are found
from their ``.dist-info`` like those of any installed distribution, and the test process's
own registry is untouched. Registry-level rules (duplicates) are tested in-process on fresh
:class:`~plcore.registry.Registry` objects.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from plcore.base import BaseLearner
from plcore.exceptions import PluginError
from plcore.registry.hookspecs import hookimpl
from plcore.learners import PlKnnLearner
from plcore.registry import ComponentSpec, Registry

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "docs" / "examples" / "plcore-example-plugin"
EXAMPLE_DIST = "plcore-example-plugin"
EXAMPLE_VERSION = re.search(r'^version\s*=\s*"([^"]+)"', (EXAMPLE / "pyproject.toml").read_text(), re.M).group(1)
BROKEN_DIST = "plcore-broken-plugin"
BROKEN_VERSION = "0.0.1"
BROKEN_MESSAGE = "plcore-broken-plugin needs the package 'no_such_dependency', which is not installed"

PIP_TIMEOUT = 300
LIST_TIMEOUT = 120
RUN_TIMEOUT = 300
PYTEST_TIMEOUT = 600

RUN_ARGS = ["+learner=centroid", "protocol.n_splits=3", "tracking=none"]
SUMMARY = re.compile(r"^accuracy_mean=(\S+) accuracy_std=(\S+)$")


# ----------------------------------------------------------------------------- helpers
def _write_package(root: Path, dist: str, version: str, package: str, entry_point: str, plugin_src: str) -> Path:
    """A minimal hatchling project ``root`` with one package and one ``plcore`` entry point."""
    (root / package).mkdir(parents=True)
    (root / "pyproject.toml").write_text(textwrap.dedent(f"""\
        [build-system]
        requires = ["hatchling"]
        build-backend = "hatchling.build"

        [project]
        name = "{dist}"
        version = "{version}"
        dependencies = ["plcore"]

        [project.entry-points.plcore]
        {entry_point} = "{package}.plugin"

        [tool.hatch.build.targets.wheel]
        packages = ["{package}"]
        """))
    (root / package / "__init__.py").write_text("")
    (root / package / "plugin.py").write_text(textwrap.dedent(plugin_src))
    return root


def _pip_install(target: Path, *sources: Path) -> Path:
    """Build and install ``sources`` into ``target`` offline; return ``target``."""
    try:
        import hatchling  # noqa: F401 - the build backend must be importable (no build isolation)
    except ImportError:  # pragma: no cover - environment problem, not a plcore bug
        pytest.fail("hatchling is not importable in this environment: it is needed to build plugins "
                    "offline (pip --no-build-isolation); install requirements.lock")
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
           "--no-index", "--no-cache-dir", "--disable-pip-version-check", "--target", str(target),
           *map(str, sources)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=PIP_TIMEOUT)
    assert proc.returncode == 0, f"pip install failed:\n{proc.stdout}\n{proc.stderr}"
    return target


def _env(site: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PLCORE_LOAD_PLUGINS"}
    env["PYTHONPATH"] = os.pathsep.join([str(site)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env.update(extra)
    return env


def _run(args, site: Path, cwd: Path, timeout: float, **extra_env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, env=_env(site, **extra_env),
                          capture_output=True, text=True, timeout=timeout)


def _plcore(args, site, cwd, timeout, **extra_env):
    return _run(["-m", "plcore", *args], site, cwd, timeout, **extra_env)


def _show(proc) -> str:
    return f"exit {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"


def _listing_row(stdout: str, kind: str, name: str):
    """The ``(kind, name, distribution, version, description)`` row of the listing, or None."""
    for line in stdout.splitlines():
        parts = line.split(None, 4)
        if parts[:2] == [kind, name]:
            return parts
    return None


def _assert_summary(proc):
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    assert lines, _show(proc)
    m = SUMMARY.match(lines[-1])
    assert m, f"last line is not the summary:\n{_show(proc)}"
    mean, std = float(m.group(1)), float(m.group(2))
    assert 0.5 < mean <= 1.0 and 0.0 <= std < 0.5, lines[-1]
    assert "learner=CandidateCentroidLearner" in proc.stdout, _show(proc)


# ----------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def example_site(tmp_path_factory) -> Path:
    """A site directory holding only the example plugin."""
    return _pip_install(tmp_path_factory.mktemp("example") / "site", EXAMPLE)


@pytest.fixture(scope="module")
def broken_source(tmp_path_factory) -> Path:
    return _write_package(
        tmp_path_factory.mktemp("broken-src") / "plcore-broken-plugin", BROKEN_DIST, BROKEN_VERSION,
        "plcore_broken", "broken",
        f"""\
        raise ImportError({BROKEN_MESSAGE!r})
        """)


@pytest.fixture(scope="module")
def mixed_site(tmp_path_factory, broken_source) -> Path:
    """One site directory with the example plugin and the broken plugin, installed together."""
    return _pip_install(tmp_path_factory.mktemp("mixed") / "site", EXAMPLE, broken_source)


# ----------------------------------------------------------------------------- the example plugin
@pytest.mark.slow
def test_example_plugin_is_listed(example_site, tmp_path):
    proc = _plcore(["list"], example_site, tmp_path, LIST_TIMEOUT)
    assert proc.returncode == 0, _show(proc)
    row = _listing_row(proc.stdout, "learner", "centroid")
    assert row is not None, _show(proc)
    assert row[2:4] == [EXAMPLE_DIST, EXAMPLE_VERSION], row
    assert row[4].startswith("Nearest class centroid"), row
    assert _listing_row(proc.stdout, "learner", "plknn") is not None, _show(proc)
    assert "failed to load" not in proc.stdout, _show(proc)


@pytest.mark.slow
def test_example_plugin_runs_default_experiment(example_site, tmp_path):
    proc = _plcore(RUN_ARGS, example_site, tmp_path, RUN_TIMEOUT)
    assert proc.returncode == 0, _show(proc)
    _assert_summary(proc)
    assert "warning: plugin" not in proc.stderr, _show(proc)


@pytest.mark.slow
def test_example_plugin_conformance_suite(example_site, tmp_path):
    """The example's own tests/test_conformance.py, run against the installed package."""
    where = _run(["-c", "import plcore_example; print(plcore_example.__file__)"], example_site, tmp_path,
                 LIST_TIMEOUT)
    assert where.returncode == 0, _show(where)
    assert Path(where.stdout.strip()).resolve().is_relative_to(example_site.resolve()), where.stdout
    proc = _run(["-m", "pytest", "-q", "-p", "no:cacheprovider", str(EXAMPLE / "tests" / "test_conformance.py")],
                example_site, tmp_path, PYTEST_TIMEOUT)
    assert proc.returncode == 0, _show(proc)
    assert re.search(r"\b\d+ passed\b", proc.stdout) and " failed" not in proc.stdout, _show(proc)


@pytest.mark.slow
def test_example_plugin_passes_the_common_test_unchanged(example_site, tmp_path):
    """plcore's own tests/test_common.py, run where the example plugin is installed, discovers
    its learner through the registry (tags, parameter constraints and all) and passes."""
    proc = _run(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", "-k", "learner:centroid",
                 str(REPO / "tests" / "test_common.py")], example_site, tmp_path, PYTEST_TIMEOUT,
                PLCORE_LOAD_PLUGINS="example")
    assert proc.returncode == 0, _show(proc)
    passed = re.findall(r"^PASSED .*test_common\[learner:centroid-(\w+)", proc.stdout, re.M)
    assert {"check_parameter_constraints", "check_pll_tags", "check_confidences"} <= set(passed), _show(proc)
    assert len(passed) > 30 and " failed" not in proc.stdout, _show(proc)


# ----------------------------------------------------------------------------- a broken plugin
@pytest.mark.slow
def test_broken_plugin_is_reported_and_others_listed(mixed_site, tmp_path):
    proc = _plcore(["list"], mixed_site, tmp_path, LIST_TIMEOUT)
    assert proc.returncode == 0, _show(proc)
    assert _listing_row(proc.stdout, "learner", "plknn") is not None, _show(proc)
    row = _listing_row(proc.stdout, "learner", "centroid")
    assert row is not None and row[2:4] == [EXAMPLE_DIST, EXAMPLE_VERSION], _show(proc)
    assert "1 plugin(s) failed to load:" in proc.stdout, _show(proc)
    error_lines = [ln.strip() for ln in proc.stdout.splitlines() if ln.strip().startswith("broken ")]
    assert error_lines == [f"broken ({BROKEN_DIST} {BROKEN_VERSION}): ImportError: {BROKEN_MESSAGE}"], _show(proc)


@pytest.mark.slow
def test_broken_plugin_does_not_stop_runs(mixed_site, tmp_path):
    proc = _plcore(RUN_ARGS, mixed_site, tmp_path, RUN_TIMEOUT)
    assert proc.returncode == 0, _show(proc)
    _assert_summary(proc)
    assert f"plugin broken ({BROKEN_DIST} {BROKEN_VERSION}) failed to load" in proc.stderr, _show(proc)


@pytest.mark.slow
def test_plcore_load_plugins_limits_entry_points(mixed_site, tmp_path):
    proc = _plcore(["list"], mixed_site, tmp_path, LIST_TIMEOUT, PLCORE_LOAD_PLUGINS="example")
    assert proc.returncode == 0, _show(proc)
    assert _listing_row(proc.stdout, "learner", "centroid") is not None, _show(proc)
    assert "failed to load" not in proc.stdout and BROKEN_DIST not in proc.stdout, _show(proc)


# ----------------------------------------------------------------------------- uniqueness rules
class _LearnerPlugin:
    """An in-test plugin object registering one learner."""

    def __init__(self, name, cls=PlKnnLearner):
        self.name, self.cls = name, cls

    @hookimpl
    def plcore_components(self):
        return [ComponentSpec(kind="learner", name=self.name, cls=self.cls)]


class _OtherLearner(PlKnnLearner):
    """Another learner class."""


def test_duplicate_component_names_both_providers():
    reg = Registry()
    reg.register(_LearnerPlugin("twin"), name="first-plugin", distribution="plcore-first", version="1.0")
    reg.register(_LearnerPlugin("twin", _OtherLearner), name="second-plugin", distribution="plcore-second",
                 version="2.0")
    with pytest.raises(PluginError) as info:
        reg.load(entry_points=False)
    msg = str(info.value)
    assert "learner 'twin' is registered twice" in msg
    for provider in ("first-plugin", "plcore-first 1.0", "second-plugin", "plcore-second 2.0"):
        assert provider in msg, msg


def test_duplicate_of_a_builtin_names_plcore():
    reg = Registry()
    reg.register(_LearnerPlugin("plknn"), name="impostor", distribution="plcore-impostor", version="0.1")
    with pytest.raises(PluginError, match="learner 'plknn' is registered twice") as info:
        reg.load(entry_points=False)
    msg = str(info.value)
    assert "'plcore.run.builtins' (plcore " in msg and "'impostor' (plcore-impostor 0.1)" in msg, msg


def test_distinct_names_register_side_by_side():
    reg = Registry()
    reg.register(_LearnerPlugin("alpha"), name="a", distribution="plcore-a", version="1")
    reg.register(_LearnerPlugin("beta", _OtherLearner), name="b", distribution="plcore-b", version="2")
    reg.load(entry_points=False)
    assert {"alpha", "beta", "plknn"} <= set(reg.names("learner"))
    assert reg.get("learner", "beta").distribution == "plcore-b"
    assert reg.get("learner", "beta").config()["_target_"].endswith("._OtherLearner")
    assert issubclass(reg.get("learner", "alpha").spec.cls, BaseLearner)


def test_duplicate_entry_point_name_is_reported(example_site, tmp_path, monkeypatch):
    """A second distribution reusing the entry point name ``example`` is reported, not loaded."""
    src = _write_package(tmp_path / "plcore-shadow-plugin", "plcore-shadow-plugin", "0.2.0", "plcore_shadow",
                         "example", """\
        from plcore.registry.hookspecs import hookimpl
        from plcore.learners import PlKnnLearner
        from plcore.registry import ComponentSpec


        @hookimpl
        def plcore_components():
            return [ComponentSpec(kind="learner", name="shadow", cls=PlKnnLearner)]
        """)
    shadow_site = _pip_install(tmp_path / "site", src)
    for site in (shadow_site, example_site):  # example_site ends up first on sys.path
        monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PLCORE_LOAD_PLUGINS", "example")
    reg = Registry().load()
    assert reg.get("learner", "centroid").distribution == EXAMPLE_DIST
    assert "shadow" not in reg.names("learner")
    [err] = reg.errors
    assert (err.entry_point, err.distribution, err.version) == ("example", "plcore-shadow-plugin", "0.2.0")
    assert "names must be unique" in err.error


def test_every_installed_method_declares_the_name_its_paper_prints():
    """Tables and diagrams name methods as papers do: every learner, reducer and clusterer of the
    core and the shipped plugins declares a display name in its spec, other than its option."""
    from plcore.registry import METHOD_KINDS, get_registry

    registry = get_registry()
    methods = {(c.kind, c.name): c.spec.display_name for c in registry.components.values() if c.kind in METHOD_KINDS}
    assert len(methods) >= 30
    assert {k: v for k, v in methods.items() if v == k[1]} == {}, "a method without a display name"
    assert len(set(methods.values())) == len(methods), "two methods print alike"
    assert methods[("learner", "plknn")] == "PL-KNN" and methods[("learner", "avg_pegasos")] == "Avg Pegasos"
    assert methods[("reducer", "cenda")] == "CENDA" and methods[("clusterer", "plc")] == "PLC"
