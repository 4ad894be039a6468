"""pluggy hook specifications of plcore.

A plugin is a module (or object) with ``@hookimpl``-decorated functions, made
discoverable through an entry point in the group ``plcore``::

    [project.entry-points.plcore]
    mymethod = "plcore_mymethod.plugin"
"""

from __future__ import annotations

import pluggy

PROJECT = "plcore"
ENTRY_POINT_GROUP = "plcore"

hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def plcore_components():
    """Return a list of :class:`plcore.registry.ComponentSpec` this plugin provides.

    Declare each class by its import path (``"package.module:Class"``) with its config node
    and description, so that listing and composing runs import none of your modules.
    """


@hookspec
def plcore_experiments():
    """Return a dict ``{preset_name: config_dict}`` of experiment presets (group ``experiment``)."""


@hookspec
def plcore_report_writers():
    """Return a dict ``{writer_name: f(runs) -> markdown}`` of report writers (the function
    or its import path ``"module:function"``, imported when the writer is used).

    ``python -m plcore report --writer NAME`` and :class:`plcore.run.callbacks.ReportCallback`
    resolve ``NAME`` here first (the core provides ``reproduction``).
    """
