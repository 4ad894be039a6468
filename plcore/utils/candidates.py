"""Moved to :mod:`plcore.utils.matrices` (it converts and normalises candidate and confidence
matrices; it generates no candidate sets, :mod:`plcore.datasets.bags` does); this module
re-exports its names for one release and warns on import."""

import warnings

from plcore.utils.matrices import *  # noqa: F401,F403
from plcore.utils.matrices import __all__  # noqa: F401

warnings.warn("plcore.utils.candidates moved to plcore.utils.matrices; import from there (or from plcore.utils); "
              "this alias goes in the next release", DeprecationWarning, stacklevel=2)
