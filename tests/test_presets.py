"""Presets live with the package that owns their components; every one composes."""

from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra

from plcore.run.app import find_conf_dir, store_configs
from plcore.registry.presets import load_presets
from plcore.registry import Registry, get_registry

CORE_PRESETS = find_conf_dir() / "experiment"


def _core_presets():
    return sorted(p.stem for p in CORE_PRESETS.glob("*.yaml"))


def _defaults(node):
    for entry in node.get("defaults", []) or []:
        yield from (entry.items() if isinstance(entry, dict) else [(None, entry)])


@pytest.mark.parametrize("name", _core_presets())
def test_core_presets_name_only_core_components_and_core_presets(name):
    core = Registry().load(entry_points=False)  # the core alone
    node = yaml.safe_load((CORE_PRESETS / f"{name}.yaml").read_text())
    for key, value in _defaults(node):
        if key is None:  # another preset of the group: it must be a core one
            assert value in _core_presets(), f"{name} includes {value!r}, which conf/experiment/ does not hold"
            continue
        kind = key.split()[-1].strip("/")
        if kind in ("learner", "reducer", "clusterer", "bags", "dataset", "protocol"):
            assert value in core.names(kind), f"{name} names {kind} {value!r}, which the core does not provide"


def test_plugins_own_their_presets():
    reg = get_registry()
    owners = {c.spec.cls.__module__.split(".")[0] for c in reg.components.values() if c.distribution != "plcore"}
    from_files = {}
    for package in owners:
        for preset in load_presets(package):
            from_files[preset] = package
    assert set(from_files) <= set(reg.experiments)
    assert not set(reg.experiments) & set(_core_presets()), "a preset is both in conf/experiment/ and a plugin"


def _all_presets():
    return _core_presets() + sorted(get_registry().experiments)


@pytest.fixture(scope="module")
def hydra_conf():
    store_configs(get_registry())
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(find_conf_dir()), version_base="1.3"):
        yield
    GlobalHydra.instance().clear()


@pytest.mark.parametrize("name", _all_presets())
def test_every_preset_composes(name, hydra_conf):
    cfg = compose(config_name="config", overrides=[f"experiment={name}"])
    assert cfg.protocol.name and cfg.dataset
    assert cfg.get("learner") or cfg.get("clusterer") or name.startswith("cenda_table")


def test_load_presets_reads_package_yaml(tmp_path, monkeypatch):
    pkg = tmp_path / "fakepkg"
    (pkg / "experiments").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "experiments" / "demo.yaml").write_text(
        "# @package _global_\ndefaults:\n  - /learner: plknn\nlearner:\n  k: ${oc.env:K,3}\n")
    (pkg / "experiments" / "notes.txt").write_text("ignored")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert load_presets("fakepkg") == {"demo": {"defaults": [{"/learner": "plknn"}],
                                                "learner": {"k": "${oc.env:K,3}"}}}
    assert load_presets("fakepkg", folder="missing") == {}


def test_glob_over_presets_sees_plugin_presets(hydra_conf):
    """``-m 'experiment=glob(paper_*)'`` (the reproduction sweep) expands over plugin presets too."""
    cl = GlobalHydra.instance().config_loader()
    options = cl.get_group_options("experiment")
    papers = {n for n in _all_presets() if n.startswith("paper_")}
    assert papers and papers <= set(options)


def _named_components(node) -> set:
    """``(kind, name)`` of every component a preset names: in its defaults list (``/learner: x``,
    ``override /reducer: y``) and in its sweeper's parameters (``learner: a,b``)."""
    kinds = ("learner", "reducer", "clusterer", "bags")
    named = set()
    for item in node.get("defaults", []) or []:
        for key, value in (item.items() if isinstance(item, dict) else []):
            kind = key.replace("override", "").strip().strip("/").lstrip("+")
            if kind in kinds and isinstance(value, str):
                named.add((kind, value))
    for key, value in (node.get("hydra", {}) or {}).get("sweeper", {}).get("params", {}).items():
        kind = key.lstrip("+")
        if kind in kinds:
            named.update((kind, v.strip()) for v in str(value).split(","))
    return named


def test_the_cores_presets_name_no_plugin_component():
    """Issue 15's layout rule (kept again by issue 56): the core's conf/ names only core components;
    the field table's rows come from the registry (``leaderboard``), not from hand lists."""
    reg = get_registry()
    named = {}
    for path in sorted(find_conf_dir().rglob("*.yaml")):
        for kind, name in _named_components(yaml.safe_load(path.read_text()) or {}):
            named.setdefault((kind, name), []).append(path.name)
    assert named, "no preset names a component: the check reads nothing"
    plugin = {k: v for k, v in named.items() if k in reg.components and reg.components[k].distribution != "plcore"}
    assert not plugin, f"core presets name plugin components: {plugin}"
    assert not list(find_conf_dir().rglob("field_*.yaml"))