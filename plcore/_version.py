"""plcore's version: the one place it is written (read by hatchling for the package metadata)."""

__version__ = "0.1.0"
