"""The command line checked before Hydra composes it: a misspelled component, group or parameter is
one line (exit 2) instead of Hydra's several, and a run with no learner gets the built-in PL-KNN."""

from __future__ import annotations

import re
from pathlib import Path

from plcore.exceptions import ConfigError
from plcore.registry import Registry
from plcore.run.resolve import OPTIONAL_KINDS

__all__ = ["check_component_overrides", "check_overrides", "compose_default_learner", "preset_groups"]


_OVERRIDE = re.compile(r"^[+~]{0,2}(learner|reducer|clusterer|bags|dataset|protocol|tracking)=(.+)$")


#: the primary config's top-level keys and groups (conf/config.yaml)
_TOP_LEVEL = frozenset({"seed", "progress", "resume", "dataset", "bags", "protocol", "tracking", "report", "experiment",
                        "learner", "reducer", "clusterer", "hydra"})
_SELECT = re.compile(r"^(\+{0,2})(learner|reducer|clusterer)=(.*)$")
_PARAM = re.compile(r"^(\+{0,2})(learner|reducer|clusterer|bags)\.([A-Za-z_][\w]*)(\S*?)=(.*)$")


def _swept(value: str) -> bool:
    """Whether an override's value names several options (a sweep) or an interpolation."""
    return any(ch in value for ch in ",()[]{}$*")


def preset_groups(registry: Registry, name: str, _seen=None) -> set:
    """The groups (``learner``, ``clusterer``, ...) that experiment preset ``name`` selects in its
    defaults list, through the presets it extends; an unknown name selects none."""
    seen = set() if _seen is None else _seen
    if name in seen or name not in registry.experiments:
        return set()
    seen.add(name)
    groups = set()
    for entry in registry.experiments[name].get("defaults") or []:
        if isinstance(entry, dict):
            for key in entry:
                groups.add(key.removeprefix("override ").strip().lstrip("/").split("/")[0].split("@")[0])
        elif isinstance(entry, str) and entry != "_self_":
            groups |= preset_groups(registry, entry.lstrip("/").removeprefix("experiment/"), seen)
    return groups


def compose_default_learner(argv: list[str], registry: Registry | None = None) -> list[str]:
    """The command line as Hydra composes it: ``learner=X`` (no ``+``) selects a component
    as ``+learner=X`` does (components are added, not in the primary defaults) -- unless the
    chosen preset selects that group itself, when it replaces the preset's choice
    (``experiment=deep_published learner=cc``) -- and a run that selects no learner, clusterer
    or preset gets the built-in PL-KNN as the composed group ``+learner=plknn`` -- so
    ``learner.k=5`` works on the default run and in sweeps."""
    in_preset = set()
    if registry is not None:
        for arg in argv:
            key, _, value = arg.partition("=")
            if key.lstrip("+") == "experiment":  # a sweep (experiment=a,b): every preset's groups
                for name in value.split(","):
                    in_preset |= preset_groups(registry, name.strip())
    out, chosen = [], set()
    for arg in argv:
        m = _SELECT.match(arg)
        if m:
            chosen.add(m.group(2))
            if not m.group(1) and m.group(2) not in in_preset:
                arg = "+" + arg
        out.append(arg)
    presets = any(a.split("=", 1)[0].lstrip("+~") == "experiment" for a in argv)
    if not ({"learner", "clusterer"} & chosen) and not presets:
        # beside the other overrides: Hydra's parser takes them as one run of positional arguments
        last = max((i for i, a in enumerate(out) if "=" in a and not a.startswith("-")), default=len(out) - 1)
        out.insert(last + 1, "+learner=plknn")
    return out


def _check_group_keys(argv, registry: Registry, group: str, default: str, what: str, noun: str) -> None:
    """``group.key=value`` overrides checked against the node of the chosen ``group`` option."""
    chosen = next((a.split("=", 1)[1] for a in argv if a.startswith(f"{group}=")), default)
    if chosen not in registry.names(group):  # a sweep, or a name check_overrides reports
        return
    known = [k for k in registry.get(group, chosen).config() if k not in ("_target_", "name")]
    for arg in argv:
        m = re.match(rf"^{group}\.(\w+)\S*?=", arg)
        if m and m.group(1) not in known:
            raise ConfigError(f"{what} {chosen!r} has no {noun} {m.group(1)!r}; its {noun}s: {', '.join(known)}")


def check_component_overrides(argv: list[str], registry: Registry) -> None:
    """One line for a parameter override that Hydra would reject in several: ``learner.kk=5``
    (no such parameter), ``+learner.k=5`` (``+`` adds a new key: the parameter exists) or
    ``reducer.thr=0.9`` without ``+reducer=NAME``. Runs with a preset are left to Hydra (the
    preset chooses the components), and so are the keys of a group swept over several options."""
    if any(a.split("=", 1)[0].lstrip("+~") == "experiment" for a in argv):
        return
    selected = {}
    for arg in argv:
        m = _SELECT.match(arg) or re.match(r"^(\+{0,2})(bags)=(.+)$", arg)
        if m and m.group(3):
            selected[m.group(2)] = "*" if _swept(m.group(3)) else m.group(3)
    selected.setdefault("bags", "uniform")
    for arg in argv:  # a class of the user's own (learner._target_=...): its parameters are its own
        m = _PARAM.match(arg)
        if m and m.group(3) == "_target_":
            selected[m.group(2)] = "none"
    for arg in argv:  # a top-level key Hydra does not know (seed, progress and the groups)
        key = arg.split("=", 1)[0]
        root = re.split(r"[./]", key, maxsplit=1)[0]
        if "=" in arg and not arg.startswith(("+", "~", "-")) and root not in _TOP_LEVEL:
            raise ConfigError(f"unknown setting {key!r}; the settings are {', '.join(sorted(_TOP_LEVEL - {'hydra'}))} "
                              f"and hydra.*; a new key needs a '+' (+{arg})")
    _check_group_keys(argv, registry, "dataset", "digits", "data set", "setting")
    _check_group_keys(argv, registry, "protocol", "kfold", "protocol", "parameter")
    for arg in argv:
        m = _PARAM.match(arg)
        if not m:
            continue
        plus, kind, key = m.group(1), m.group(2), m.group(3)
        name = selected.get(kind)
        if name is None:
            raise ConfigError(f"{arg} sets a parameter of a {kind}, but no {kind} is selected: add +{kind}=NAME "
                              f"({', '.join(registry.names(kind))})")
        if name in ("none", "*"):
            continue
        params = [k for k in registry.get(kind, name).config() if k != "_target_"]
        if key not in params:
            raise ConfigError(f"{kind} {name!r} has no parameter {key!r}; its parameters: {', '.join(params)}")
        if plus == "+":
            raise ConfigError(f"{arg}: {kind}.{key} exists already ('+' adds a new key): write "
                              f"{arg[1:]}")


def check_overrides(argv, registry: Registry) -> None:
    """Fail fast, in one line, on a misspelled component name (``+learner=plknnn``) and on a
    component parameter Hydra would reject (:func:`check_component_overrides`)."""
    for arg in argv:
        m = re.match(r"^\+(dataset|bags|protocol|tracking|report|experiment)=(.*)$", arg)
        if m:
            raise ConfigError(f"{arg}: {m.group(1)} is in the defaults, so it is chosen without '+': "
                              f"{m.group(1)}={m.group(2)}")
    check_component_overrides(argv, registry)
    for arg in argv:
        m = _OVERRIDE.match(arg)
        if not m:
            continue
        kind, value = m.groups()
        if kind == "tracking":
            names = ["mlflow", "none"]
        else:
            names = registry.names(kind) + (["none"] if kind in OPTIONAL_KINDS else [])
        if any(ch in value for ch in "()[]{}$*"):
            continue  # sweep functions / interpolations: let Hydra handle them
        for v in value.split(","):
            if v and v not in names:
                hint = ""
                if kind == "dataset" and ("/" in v or "\\" in v
                                          or Path(v).suffix in (".mat", ".arff", ".csv", ".parquet", ".npz")):
                    hint = f"; a file is loaded with dataset=file dataset.name_or_path={v}"
                raise ConfigError(f"unknown {kind} {v!r}; available {kind} options: {', '.join(names)}{hint}")

