"""Lazy exports: a package's public names imported from its private modules on first use (PEP 562)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_getattr(package: str, lazy: Mapping[str, str]) -> Callable[[str], Any]:
    """The module ``__getattr__`` of a package that imports its public names only when they are used.

    So that importing a plugin (which ``rlctl`` does for every installed one) costs no torch::

        _LAZY = {"NatureCNN": "._cnn", "InteractionType": "tensordict.nn"}
        __getattr__ = rlcore.lazy_getattr(__name__, _LAZY)

    :param package: the package's ``__name__``.
    :param lazy: ``{name: module}``, the module relative to the package (``._cnn``) or absolute; a
        ``module:attribute`` value exports ``attribute`` under ``name``.
    :return: the ``__getattr__``; an attribute, once imported, is kept in the package.
    """

    def __getattr__(name: str) -> Any:
        if name not in lazy:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = lazy[name].partition(":")
        value = getattr(import_module(module, package), attribute or name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
