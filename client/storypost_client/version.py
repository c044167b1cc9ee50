"""The SDK's version: the distribution's (client/pyproject.toml reads it from here)."""

__version__ = "0.1.0"
