"""Errors that ``rlctl`` turns into a one-line message and an exit code."""

from __future__ import annotations


class RLCoreError(Exception):
    """Base class of rl-core's own errors."""


class ConfigError(RLCoreError):
    """A bad config key, value, file or plugin name (``rlctl`` exits with 2)."""


class PluginError(RLCoreError):
    """A plugin the run needs is missing, blocked or broken (``rlctl`` exits with 2)."""
