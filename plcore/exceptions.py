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


try:  # scikit-learn's type, so that code catching it (and its estimator checks) keep working
    from sklearn.utils._param_validation import InvalidParameterError as _SklearnInvalidParameterError
except ImportError:  # pragma: no cover - scikit-learn is a dependency
    _SklearnInvalidParameterError = ValueError


class InvalidParameterError(DataValidationError, _SklearnInvalidParameterError):
    """A constructor parameter violates the estimator's ``_parameter_constraints``."""


class TrackingError(PlcoreError):
    """The tracking store cannot be reached or failed during a run."""


class RunInterrupted(KeyboardInterrupt):
    """A run was stopped by a signal (SIGTERM, SIGINT); ``signum`` says which."""

    def __init__(self, signum: int):
        import signal

        self.signum = int(signum)
        super().__init__(signal.Signals(self.signum).name)
