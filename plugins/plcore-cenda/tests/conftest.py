"""Put this tests folder on ``sys.path``: the tests import the literal reference implementation
(``cenda_reference.py``) by its plain name, ``from cenda_reference import ...`` (pytest runs with
``--import-mode=importlib``, which adds no folder to ``sys.path``)."""

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
