"""Lets ``pytest tests/`` run from a source checkout without installing the plugin.

An installed ``plcore_example`` (``pip install -e .``, or a ``--target`` directory on
``PYTHONPATH``) wins: the source folder is only put on ``sys.path`` when the package
cannot be imported otherwise.
"""

import importlib.util
import sys
from pathlib import Path

if importlib.util.find_spec("plcore_example") is None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
