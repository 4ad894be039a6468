"""Start-up stays light: listing, ``--help`` and composing a run import no estimator module and
no heavy dependency (components are declared by import path, see ComponentSpec), and
Hydra's ``--help`` output is unchanged by the shared ConfigStore (plcore.run.app._share_config_store)."""

import json
import subprocess
import sys

import pytest

from plcore.exceptions import PluginError
from plcore.registry.hookspecs import hookimpl
from plcore.registry import ComponentSpec, Registry

#: what start-up must not import: the numeric and tracking stacks and every estimator module
HEAVY = ("sklearn", "torch", "numba", "cvxpy", "osqp", "mlflow", "matplotlib", "pandas", "scipy")

_PROBE = """
import json, sys
from plcore.run.app import main
try:
    code = main({argv!r})
except SystemExit as exc:
    code = exc.code
loaded = sorted(m for m in sys.modules
                if m.split(".")[0] in {heavy!r}
                or (m.startswith("plcore_") and m.count(".") and not m.endswith(".plugin")))
print("\\n@@" + json.dumps({{"code": code, "loaded": loaded}}))
"""


def _probe(argv, cwd):
    code = _PROBE.format(argv=list(argv), heavy=HEAVY)
    proc = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120)
    assert "@@" in proc.stdout, proc.stderr[-3000:]
    return json.loads(proc.stdout.rsplit("@@", 1)[1])


@pytest.mark.parametrize("argv", [
    ["list"],
    ["--help"],
    ["--cfg", "job"],
    ["+reducer=cenda", "+learner=plknn_cenda", "dataset=lost", "--cfg", "job"],
    ["+clusterer=plc", "protocol=clustering", "--cfg", "job"],
    ["+learner=proden", "dataset=lost", "--cfg", "job"],
    ["+learner=avg_perceptron", "protocol=online", "--cfg", "job"],
], ids=lambda a: " ".join(a))
def test_startup_imports_no_estimator_and_no_heavy_dependency(argv, tmp_path):
    out = _probe(argv, tmp_path)
    assert out["code"] in (0, None)
    assert out["loaded"] == [], f"{' '.join(argv)} imported {out['loaded'][:20]}"


def test_help_output_equals_hydras_copying_run(tmp_path):
    """The shared ConfigStore changes no byte of ``--help`` (the unpatched run copies the store)."""
    unpatched = ("from hydra.plugins.config_source import ConfigSource; "
                 "ConfigSource._plcore_shares_store = True; "  # _share_config_store then does nothing
                 "from plcore.run.app import main; main(['--help'])")
    patched = "from plcore.run.app import main; main(['--help'])"
    outs = [subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                           timeout=300).stdout for code in (unpatched, patched)]
    assert "learner: " in outs[1] and "plknn" in outs[1]
    assert outs[0] == outs[1]


def _registry_with(*specs):
    class Plugin:
        @hookimpl
        def plcore_components(self):
            return list(specs)

    reg = Registry()
    reg.register(Plugin(), name="lazy_test", distribution="lazy-test", version="0")
    return reg.load(entry_points=False)


def test_lazy_component_is_listed_and_composed_without_import():
    spec = ComponentSpec("learner", "ghost", "no_such_package.learners:GhostLearner",
                         config={"k": 3}, description="a learner whose module does not exist")
    reg = _registry_with(spec)
    comp = reg.get("learner", "ghost")
    assert comp.description == "a learner whose module does not exist"
    assert comp.config() == {"_target_": "no_such_package.learners.GhostLearner", "k": 3}
    assert spec.lazy and not reg.errors
    with pytest.raises(PluginError, match="learner 'ghost' names 'no_such_package.learners:GhostLearner', "
                                          "which cannot be imported"):
        spec.cls


def test_lazy_component_is_imported_on_first_use_and_checked():
    spec = ComponentSpec("learner", "plknn2", "plcore.learners.plknn:PlKnnLearner",
                         config={"k": 10, "metric": "euclidean", "n_jobs": None, "weights": "linear"},
                         description="PL-KNN again")
    from plcore.learners import PlKnnLearner

    assert spec.lazy and spec.cls is PlKnnLearner and not spec.lazy
    wrong = ComponentSpec("learner", "bags_as_learner", "plcore.datasets.bags:UniformBags",
                          config={"r": 3, "random_state": None}, description="not a learner")
    with pytest.raises(PluginError, match="does not subclass plcore.base.BaseLearner"):
        wrong.cls


@pytest.mark.parametrize("spec, message", [
    (ComponentSpec("learner", "a", "pkg.mod.Cls", config={}, description="d"), "must read 'package.module:QualName'"),
    (ComponentSpec("learner", "b", "pkg.mod:Cls", config={}), "without a description"),
    (ComponentSpec("learner", "c", "pkg.mod:Cls", description="d"), "without its config node"),
])
def test_incomplete_lazy_declarations_are_reported(spec, message):
    reg = _registry_with(spec)
    assert spec.name not in reg.names("learner")
    assert any(message in e.error for e in reg.errors), [e.error for e in reg.errors]


def test_component_of_imports_only_the_matching_name():
    ghost = ComponentSpec("learner", "ghost", "no_such_package.learners:GhostLearner",
                          config={}, description="never imported")
    reg = _registry_with(ghost)
    from plcore.learners import PlKnnLearner

    assert reg.component_of(PlKnnLearner()).name == "plknn"
    assert ghost.lazy  # a different class name: not imported (it would fail)


def test_config_store_sharing_takes_effect_on_this_hydra():
    """The sharing is installed (Hydra's ConfigSource has no ``__deepcopy__`` of its own) and a
    copied config repository holds the same ConfigStore; if Hydra changes either, remove it."""
    import copy

    from hydra.core.config_store import ConfigStore
    from hydra.plugins.config_source import ConfigSource

    from plcore.run.app import _share_config_store

    _share_config_store()
    assert getattr(ConfigSource, "_plcore_shares_store", False)

    from hydra._internal.core_plugins.structured_config_source import StructuredConfigSource

    src = StructuredConfigSource(provider="test", path="structured://")  # Hydra's own ConfigStore source
    assert src.store is ConfigStore.instance()
    src.other = [1]
    dup = copy.deepcopy(src)
    assert dup.store is src.store and dup.other == [1] and dup.other is not src.other
