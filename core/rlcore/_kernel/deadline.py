"""A plugin's import, registry hook or command registration under a deadline: one that never returns is given up on
(and left out, as one that raises), so that no plugin hangs ``rlctl --help``, ``rlctl plugins list`` or a run's start."""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from .errors import ConfigError

T = TypeVar("T")
#: seconds a plugin's import or registry hook may take (``inf``: no deadline)
ENV_PLUGIN_TIMEOUT = "RLCORE_PLUGIN_TIMEOUT"
DEFAULT_PLUGIN_TIMEOUT = 60.0


def plugin_timeout() -> float:
    """``RLCORE_PLUGIN_TIMEOUT`` in seconds (default 60).

    :raises ConfigError: for a value that is not a number of seconds > 0.
    """
    text = os.environ.get(ENV_PLUGIN_TIMEOUT)
    if text is None:
        return DEFAULT_PLUGIN_TIMEOUT
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not seconds > 0:
        raise ConfigError(f"{ENV_PLUGIN_TIMEOUT}: expected a number of seconds > 0 (or inf), got {text[:40]!r}")
    return seconds


def within(call: Callable[[], T], seconds: float) -> T:
    """``call()``, waited for ``seconds`` at most.

    It runs in a daemon thread of its own, so that the wait ends at the deadline whatever ``call`` is stuck in
    (a lock, a socket, C code); the thread is then left behind, and the process may still exit.

    :return: what ``call`` returned.
    :raises TimeoutError: past the deadline; else what ``call`` raised.
    """
    if math.isinf(seconds):
        return call()
    outcome: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as err:  # (re-raised in the caller's thread)
            outcome.append((False, err))

    thread = threading.Thread(target=run, name="rlcore-plugin-call", daemon=True)
    thread.start()
    thread.join(seconds)
    if not outcome:
        raise TimeoutError(f"did not return within {seconds:g} s ({ENV_PLUGIN_TIMEOUT})")
    ok, value = outcome[0]
    if ok:
        result: T = value
        return result
    raise value
