"""Exception hierarchy of plcore.

Every error raised on purpose by plcore derives from :class:`PlcoreError`; input
validation errors additionally derive from :class:`ValueError` so that
scikit-learn's conventions (``ValueError`` for bad input) keep holding.
"""


def one_line(what) -> str:
    """``what`` on one line, for a message or a record: an exception as ``Type: message``, anything
    else as its text, every run of whitespace (line breaks included) one space."""
    text = f"{type(what).__name__}: {what}" if isinstance(what, BaseException) else str(what)
    return " ".join(text.split())


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


def _invalid_parameter_error():
    # scikit-learn's type as a base, so that code catching it (and its estimator checks) keep
    # working; built on first use so that ``import plcore`` does not import scikit-learn
    from sklearn.utils._param_validation import InvalidParameterError as _SklearnInvalidParameterError

    class InvalidParameterError(DataValidationError, _SklearnInvalidParameterError):
        """A constructor parameter violates the estimator's ``_parameter_constraints``."""

    InvalidParameterError.__module__ = __name__
    InvalidParameterError.__qualname__ = "InvalidParameterError"
    return InvalidParameterError


def __getattr__(name):  # PEP 562: InvalidParameterError is created on first access
    if name == "InvalidParameterError":
        globals()[name] = cls = _invalid_parameter_error()
        return cls
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class TrackingError(PlcoreError):
    """The tracking store cannot be reached or failed during a run."""


class RunInterrupted(KeyboardInterrupt):
    """A run was stopped by a signal (SIGTERM, SIGINT); ``signum`` says which."""

    def __init__(self, signum: int):
        import signal

        self.signum = int(signum)
        super().__init__(signal.Signals(self.signum).name)
