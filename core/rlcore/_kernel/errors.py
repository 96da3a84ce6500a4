"""Errors that ``rlctl`` turns into a one-line message and an exit code."""

from __future__ import annotations

import reprlib
from typing import Any

_SHOWN = reprlib.Repr()  # (keyword arguments from Python 3.12 only)
_SHOWN.maxlevel, _SHOWN.maxdict, _SHOWN.maxlist, _SHOWN.maxtuple, _SHOWN.maxset = 3, 6, 6, 6, 6
_SHOWN.maxstring, _SHOWN.maxlong, _SHOWN.maxother = 80, 40, 80


class RLCoreError(Exception):
    """Base class of rl-core's own errors."""


class ConfigError(RLCoreError):
    """A bad config key, value, file or plugin name (``rlctl`` exits with 2)."""


class PluginError(RLCoreError):
    """A plugin the run needs is missing, blocked or broken (``rlctl`` exits with 2)."""


def first_line(err: BaseException) -> str:
    """The first line of an error's message, or its type's name when it has none (for one-line messages)."""
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def error_line(err: BaseException) -> str:
    """``Type: first line of the message`` (``Type`` alone when it has none): an unexpected error, in one line."""
    text = str(err).strip()
    return f"{type(err).__name__}: {text.splitlines()[0]}" if text else type(err).__name__


def one_line(err: BaseException) -> str:
    """``Type: first line`` of an error, with its last line too when it has several (pluggy's validation errors)."""
    lines = [line.strip() for line in str(err).strip().splitlines() if line.strip()]
    if not lines:
        return type(err).__name__
    text = lines[0] if len(lines) == 1 else f"{lines[0]}: {lines[-1]}"
    return f"{type(err).__name__}: {text}"


def shown(value: Any) -> str:
    """``repr(value)`` cut to a bounded length, computed in bounded time (a config's value in a message: an alias bomb's
    expansion, a 5,000-digit integer)."""
    try:
        return _SHOWN.repr(value)
    except ValueError:  # an integer past the conversion limit of int -> str
        return f"<an integer of {value.bit_length()} bits>"
