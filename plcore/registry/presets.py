"""Experiment presets shipped by the package that owns their components.

A plugin keeps its presets as YAML files (Hydra's ``experiment`` group syntax, with
``# @package _global_``) in a folder of its package and returns them from its
``plcore_experiments`` hook::

    @hookimpl
    def plcore_experiments():
        return load_presets("plcore_mymethod")          # plcore_mymethod/experiments/*.yaml

``defaults`` entries keep working as in ``conf/experiment/``: ``- other_preset`` names a
preset of the same group (core or any installed plugin), ``- /learner: plknn`` a component.
"""

from __future__ import annotations

from importlib import resources

__all__ = ["load_presets"]


def load_presets(package: str, folder: str = "experiments") -> dict[str, dict]:
    """``{name: config dict}`` for every ``<folder>/<name>.yaml`` inside ``package``."""
    from omegaconf import OmegaConf

    root = resources.files(package).joinpath(folder)
    out = {}
    if not root.is_dir():
        return out
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml"):
            node = OmegaConf.create(entry.read_text(encoding="utf-8"))
            out[entry.name[: -len(".yaml")]] = OmegaConf.to_container(node, resolve=False)
    return out
