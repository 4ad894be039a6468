"""Exception hierarchy of plcore.

Every error raised on purpose by plcore derives from :class:`PlcoreError`; input
validation errors additionally derive from :class:`ValueError` so that
scikit-learn's conventions (``ValueError`` for bad input) keep holding.
"""


class PlcoreError(Exception):
    """Base class of all plcore errors."""


class DataValidationError(PlcoreError, ValueError):
    """Features, candidate sets or labels are malformed."""


class DatasetNotFoundError(PlcoreError, FileNotFoundError):
    """A named data set could not be found in the data home."""


class PluginError(PlcoreError):
    """A plugin failed to load or registered something invalid."""


class ConfigError(PlcoreError, ValueError):
    """A run configuration is invalid."""
