"""The package version, in one place below every module that reports it."""

__version__ = "0.1.0"
