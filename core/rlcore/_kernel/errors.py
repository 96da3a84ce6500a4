"""Errors that ``rlctl`` turns into a one-line message and an exit code."""

from __future__ import annotations

import difflib
import reprlib
from collections.abc import Iterable
from typing import Any

_SHOWN = reprlib.Repr()  # (keyword arguments from Python 3.12 only)
_SHOWN.maxlevel, _SHOWN.maxdict, _SHOWN.maxlist, _SHOWN.maxtuple, _SHOWN.maxset = 3, 6, 6, 6, 6
_SHOWN.maxstring, _SHOWN.maxlong, _SHOWN.maxother = 80, 40, 80
#: the characters of valid choices that a message lists, so that its line stays under 300
CHOICES_LENGTH = 160


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


def valid_choices(names: Iterable[object], given: object = None) -> str:
    """The valid choices of a one-line message, comma-separated: all of them where they fit in :data:`CHOICES_LENGTH`
    characters, else those nearest to ``given`` (what the user wrote) first, as many more as fit, and how many are left."""
    texts = [str(name) for name in names]
    listed = ", ".join(texts)
    if len(listed) <= CHOICES_LENGTH:
        return listed
    near = difflib.get_close_matches(str(given)[:100], texts, n=3) if given is not None else []
    kept: list[str] = []
    for text in [*near, *(t for t in texts if t not in near)]:
        if kept and len(", ".join([*kept, text])) > CHOICES_LENGTH:
            break
        kept.append(text)
    return f"{', '.join(kept)}, ... ({len(texts) - len(kept)} more)"
