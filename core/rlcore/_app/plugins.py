"""What ``rlctl`` says of the installed plugins: what each provides, the names given to load or block that none has."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

from .._kernel.deadline import plugin_timeout, within
from .._kernel.errors import one_line
from .._kernel.manager import CORE_DISTRIBUTION, PluginInfo, PluginManager, first_party
from .._kernel.registry import entries
from ..hookspecs import REGISTRIES


def describe(pm: PluginManager, commands: Callable[[Any], list[str]]) -> list[PluginInfo]:
    """Every plugin of ``pm`` with what it provides (registry hooks are called one plugin at a time), and a status
    that says so when a plugin registers a name another registers too (a run refuses both, see
    :func:`rlcore._kernel.registry.collect`): a third party's, or each one's when no clashing plugin is rl-core's own.

    :param commands: what a plugin's ``rl_register_commands`` adds to ``rlctl``.
    """
    seconds = plugin_timeout()
    for info in pm.infos.values():
        plugin = pm.get_plugin(info.name)
        if plugin is None or not info.ok:
            continue
        for kind, hook_name in REGISTRIES.items():
            impl = getattr(plugin, hook_name, None)
            if impl is None or hook_name not in info.hooks:
                continue
            try:
                names = [name for name, _ in entries(within(impl, seconds), kind)]
            except TypeError as err:
                info.status = f"error: {hook_name} {err}"
                break
            except Exception as err:
                info.status = f"error: {hook_name} failed: {one_line(err)}"
                break
            info.provides[kind] = sorted(names)
        if "rl_register_commands" in info.hooks and info.ok:
            try:
                info.provides["commands"] = within(functools.partial(commands, plugin), seconds)
            except Exception as err:
                info.status = f"error: rl_register_commands failed: {one_line(err)}"
    providers: dict[tuple[str, str], list[PluginInfo]] = {}
    for info in pm.infos.values():
        for kind, names in info.provides.items():
            for name in names:
                providers.setdefault((kind, name), []).append(info)
    for (kind, name), infos in providers.items():
        if len(infos) < 2 or kind == "commands":
            continue
        ours = [i for i in infos if first_party(i.entry_name, i.distribution)]
        for info in infos:
            if info not in ours and info.ok:
                others = ", ".join(repr(i.entry_name) for i in infos if i is not info)
                info.status = f"error: {kind} name {name!r} is also registered by {others}; block one with --no-plugin"
    return list(pm.infos.values())


def unknown_names(pm: PluginManager) -> tuple[list[str], list[str]]:
    """The names given to load only (``--plugin``, ``RLCORE_PLUGINS``) and to block (``--no-plugin``) that name no
    discovered plugin (by entry-point or distribution name): ``(only, block)``."""
    known = {CORE_DISTRIBUTION} | {n for i in pm.infos.values() for n in (i.entry_name, i.distribution)}
    return sorted((pm.only or set()) - known), sorted(pm.block - known)


def known_names(pm: PluginManager) -> list[str]:
    """The entry-point names of the discovered third-party plugins (the valid ``--plugin`` names)."""
    return sorted({i.entry_name for i in pm.infos.values() if not i.builtin and i.distribution})


def warn_broken(pm: PluginManager) -> None:
    """Warn about every broken plugin of ``pm``, once each (one whose registry hook failed was warned about then)."""
    for info in pm.broken():
        if info.name not in pm.warned:
            pm.warned.add(info.name)
            warnings.warn(f"plugin {info.name!r} ({info.distribution}) is not loaded: {info.status[7:]}", stacklevel=2)
