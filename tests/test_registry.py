"""The pluggy registry: built-ins, duplicates, broken plugins, ConfigStore nodes."""

import types

import pytest
from hydra.utils import instantiate

from plcore.base import BaseLearner
from plcore.exceptions import ConfigError, PluginError
from plcore.registry.hookspecs import hookimpl
from plcore.learners import PlKnnLearner
from plcore.registry import ComponentSpec, Registry


def plugin_with(*specs):
    class Plugin:
        @hookimpl
        def plcore_components(self):
            return list(specs)

    return Plugin()


def test_builtins_come_through_the_hook():
    reg = Registry().load(entry_points=False)
    assert reg.names("learner") == ["conformal_sets", "plknn"]
    assert set(reg.names("bags")) == {"uniform", "fixed_size", "cluster_noisy", "drop_true", "flip", "uniform_sets",
                                      "instance_dependent", "noisy", "hierarchical"}
    assert "fashion-mnist" in reg.names("dataset")
    assert {"digits", "lost", "msrc-v2", "satimage", "msrc-v2-plc-splits"} <= set(reg.names("dataset"))
    assert set(reg.names("protocol")) == {"kfold", "holdout", "online", "clustering", "plench", "clean"}
    comp = reg.get("learner", "plknn")
    assert comp.distribution == "plcore" and comp.description


def test_estimator_config_instantiates_with_equal_params():
    reg = Registry().load(entry_points=False)
    for kind in ("learner", "bags"):
        for name in reg.names(kind):
            comp = reg.get(kind, name)
            est = instantiate(comp.config())
            assert isinstance(est, comp.spec.cls)
            expected = {k: v for k, v in comp.config().items() if k != "_target_"}
            assert {k: est.get_params()[k] for k in expected} == expected


def test_duplicate_kind_name_names_both_providers():
    class Other(PlKnnLearner):
        pass

    reg = Registry()
    reg.register(plugin_with(ComponentSpec("learner", "plknn", Other)), name="other-plugin",
                 distribution="plcore-other", version="9.9")
    with pytest.raises(PluginError) as err:
        reg.load(entry_points=False)
    msg = str(err.value)
    assert "plknn" in msg and "plcore-other" in msg and "plcore.run.builtins" in msg


def test_wrong_base_class_and_unknown_kind_are_reported_and_skipped():
    reg = Registry()
    reg.register(plugin_with(ComponentSpec("learner", "bad", dict),
                             ComponentSpec("scorer", "x", PlKnnLearner),
                             ComponentSpec("learner", "good", PlKnnLearner)), name="p1", distribution="d1")
    reg.load(entry_points=False, builtins=False)
    assert reg.names("learner") == ["good"]
    msgs = [e.error for e in reg.errors]
    assert any("does not subclass plcore.base.BaseLearner" in m for m in msgs)
    assert any("unknown kind 'scorer'" in m for m in msgs)
    assert all(e.distribution == "d1" for e in reg.errors)


def test_component_that_cannot_be_created_with_defaults_is_reported_not_fatal():
    class NeedsArgument(PlKnnLearner):
        def __init__(self, required):
            self.required = required

    class Abstract(BaseLearner):  # _fit/_scores missing: cannot be instantiated
        pass

    reg = Registry()
    reg.register(plugin_with(ComponentSpec("learner", "needs", NeedsArgument),
                             ComponentSpec("learner", "abstract", Abstract),
                             ComponentSpec("learner", "good", PlKnnLearner)), name="p2", distribution="d2")
    reg.load(entry_points=False, builtins=False)
    assert reg.names("learner") == ["good"]
    msgs = " | ".join(e.error for e in reg.errors)
    assert "'needs'" in msgs and "cannot be created with its default parameters" in msgs
    assert "'abstract'" in msgs and "abstract" in msgs.lower()


def test_failing_experiments_hook_is_reported():
    class Broken:
        @hookimpl
        def plcore_experiments(self):
            raise RuntimeError("no presets today")

    reg = Registry()
    reg.register(Broken(), name="b", distribution="plcore-b")
    reg.load(entry_points=False)
    assert "plknn" in reg.names("learner")
    assert "no presets today" in reg.errors[0].error


def test_failing_hook_is_reported_and_others_survive():
    class Broken:
        @hookimpl
        def plcore_components(self):
            raise RuntimeError("boom")

    reg = Registry()
    reg.register(Broken(), name="broken", distribution="plcore-broken", version="0.0.1")
    reg.load(entry_points=False)
    assert "plknn" in reg.names("learner")
    assert len(reg.errors) == 1 and "boom" in reg.errors[0].error
    assert reg.errors[0].distribution == "plcore-broken"


def test_broken_entry_point_is_reported(monkeypatch):
    class EP:
        name = "kaputt"
        dist = types.SimpleNamespace(name="plcore-kaputt", version="1.0")

        def load(self):
            raise ImportError("No module named 'missing_dependency'")

    import plcore.registry._registry as registry_mod

    monkeypatch.setattr(registry_mod.metadata, "entry_points", lambda group: [EP()])
    reg = Registry().load()
    assert "plknn" in reg.names("learner")
    (err,) = reg.errors
    assert err.distribution == "plcore-kaputt" and "missing_dependency" in err.error


def test_unknown_component_lists_options():
    reg = Registry().load(entry_points=False)
    with pytest.raises(ConfigError, match="available: conformal_sets, plknn"):
        reg.get("learner", "plknnn")


def test_default_config_derived_from_get_params():
    class Tiny(BaseLearner):
        """Tiny learner."""

        def __init__(self, alpha=0.5):
            self.alpha = alpha

        def _fit(self, X, S):
            pass

        def _scores(self, X):
            pass

    reg = Registry()
    reg.register(plugin_with(ComponentSpec("learner", "tiny", Tiny)), name="t", distribution="plcore-tiny")
    reg.load(entry_points=False, builtins=False)
    comp = reg.get("learner", "tiny")
    assert comp.config() == {"_target_": f"{Tiny.__module__}.{Tiny.__qualname__}", "alpha": 0.5}
    assert comp.description == "Tiny learner."
    assert reg.table()[0]["distribution"] == "plcore-tiny"


def test_create_instantiates_estimators_and_preprocessors():
    reg = Registry().load(entry_points=False)
    est = reg.create("learner", "plknn", k=3)
    assert isinstance(est, PlKnnLearner) and est.k == 3
    from sklearn.preprocessing import StandardScaler

    assert isinstance(reg.create("preprocessor", "standardize"), StandardScaler)
    with pytest.raises(ConfigError, match="not estimators"):
        reg.create("protocol", "kfold")
    with pytest.raises(ConfigError, match="unknown learner"):
        reg.create("learner", "nope")


def test_invalid_preprocessor_and_protocol_specs_are_reported():
    from plcore.registry.hookspecs import hookimpl

    class Plugin:
        @hookimpl
        def plcore_components(self):
            return [ComponentSpec("preprocessor", "bad", object),
                    ComponentSpec("protocol", "bad", lambda setup, ds: None),
                    ComponentSpec("learner", "badkernel", PlKnnLearner, prequential=3)]

    reg = Registry()
    reg.register(Plugin(), "bad-plugin")
    reg.load(entry_points=False)
    messages = " | ".join(e.error for e in reg.errors)
    assert "not a transformer class" in messages and "expected a plcore.registry.ProtocolSpec" in messages
    assert "prequential kernel that is not callable" in messages
    assert "bad" not in reg.names("preprocessor") and "bad" not in reg.names("protocol")


def test_report_writers_are_registered_by_name():
    reg = Registry().load(entry_points=False)
    from plcore.run.report import reproduction_page

    assert reg.report_writers["reproduction"] == "plcore.run.report:reproduction_page"  # declared by path
    assert reg.report_writer("reproduction") is reproduction_page


def test_a_component_declares_its_display_name_once_and_the_registry_names_it():
    """``ComponentSpec(display_name=...)``: how results name the method (PL-KNN, not plknn), found
    by option name or by the class a run logs as ``learner._target_``; default: the option name.
    A display name that is not one non-empty line is reported and the component skipped."""
    class Plain(PlKnnLearner):
        pass

    reg = Registry()
    reg.register(plugin_with(
        ComponentSpec("learner", "mine", "plcore.learners.plknn:PlKnnLearner", display_name="My PL-KNN",
                      config={"k": 10, "metric": "euclidean", "n_jobs": None, "weights": "linear"}, description="x"),
        ComponentSpec("learner", "plain", Plain),
        ComponentSpec("learner", "empty", Plain, display_name=""),
        ComponentSpec("learner", "lines", Plain, display_name="two\nlines"),
        ComponentSpec("learner", "padded", Plain, display_name=" PL-KNN"),
        ComponentSpec("learner", "number", Plain, display_name=3)), name="p", distribution="d")
    reg.load(entry_points=False, builtins=False)
    assert reg.names("learner") == ["mine", "plain"]
    assert sorted(e.error.split("'")[1] for e in reg.errors) == ["empty", "lines", "number", "padded"]
    assert all("a display name is one non-empty line" in e.error for e in reg.errors)
    assert reg.get("learner", "mine").spec.display_name == "My PL-KNN"
    assert reg.display_name(name="mine") == "My PL-KNN"
    assert reg.display_name(target="plcore.learners.plknn.PlKnnLearner") == "My PL-KNN"
    assert reg.display_name(name="plain") == "plain"                    # the default: the option name
    assert reg.display_name(name="mine", kinds=("reducer",)) is None
    assert reg.display_name(name="unknown") is None and reg.display_name() is None
