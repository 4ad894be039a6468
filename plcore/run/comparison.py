"""Moved to :mod:`plcore.stats` (the statistics shared by ``run`` and ``leaderboard``); this
module re-exports its names for one release and warns on import."""

import warnings

from plcore.stats import *  # noqa: F401,F403
from plcore.stats import __all__  # noqa: F401

warnings.warn("plcore.run.comparison moved to plcore.stats; import from there (this alias goes in the next release)",
              DeprecationWarning, stacklevel=2)
