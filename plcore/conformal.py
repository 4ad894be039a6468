"""Moved to :mod:`plcore.prediction_sets` (split-conformal prediction sets; not the conformal
candidate cleaning of plcore-deep's ``Conf+X`` learners); this module re-exports its names for one
release and warns on import."""

import warnings

from plcore.prediction_sets import *  # noqa: F401,F403
from plcore.prediction_sets import __all__  # noqa: F401

warnings.warn("plcore.conformal moved to plcore.prediction_sets; import from there (this alias goes in the next "
              "release)", DeprecationWarning, stacklevel=2)
