"""Docs stay in sync with the code: hooks and public metric names are documented."""

import inspect
from pathlib import Path

from plcore.registry import hookspecs
from plcore.run.protocols import PROTOCOLS

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_every_hook_is_documented_with_its_signature():
    text = (DOCS / "plugin_hooks.md").read_text()
    hooks = [n for n, f in vars(hookspecs).items() if n.startswith("plcore_") and inspect.isfunction(f)]
    assert hooks
    for name in hooks:
        sig = f"{name}{inspect.signature(getattr(hookspecs, name))}"
        assert sig in text, f"{sig} is not documented in docs/plugin_hooks.md"


def test_public_summary_metrics_are_documented():
    text = (DOCS / "configuration.md").read_text()
    for spec in PROTOCOLS.values():
        for key in (*spec.summary_keys, *spec.label_free_keys):
            assert f"`{key}`" in text, f"summary metric {key} missing from docs/configuration.md"
    assert "`transductive_accuracy_mean`" in text and "`fit_time_mean`" in text
