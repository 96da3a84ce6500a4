"""The pluggy markers of the ``rlcore`` project."""

from __future__ import annotations

import pluggy

PROJECT = "rlcore"

hookspec = pluggy.HookspecMarker(PROJECT)
"""Marks a function of :mod:`rlcore.hookspecs` as a hook specification."""

hookimpl = pluggy.HookimplMarker(PROJECT)
"""Marks a function or method as a hook implementation (``@rlcore.hookimpl``)."""
