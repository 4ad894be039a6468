"""Moved to :mod:`plcore.feature_columns` (a table's feature columns read by name, and the model
that reads new rows through them); this module re-exports its names for one release, so that a
model an earlier plcore logged (its type ``plcore.tables.PredictionModel``) still loads, and warns
on import."""

import warnings

from plcore.feature_columns import *  # noqa: F401,F403
from plcore.feature_columns import __all__  # noqa: F401

warnings.warn("plcore.tables moved to plcore.feature_columns; import from there (this alias goes in the next "
              "release)", DeprecationWarning, stacklevel=2)
