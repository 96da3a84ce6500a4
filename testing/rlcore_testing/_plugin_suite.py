"""``PluginConformance``: an installed plugin is discovered, listed lightly, and blockable."""

from __future__ import annotations

from typing import ClassVar

import pytest

from ._install import rlctl_plugins_list


class PluginConformance:
    """What every installed plugin owes its users, as tests: subclass it in a test module as ``TestMyPlugin``.

    The plugin must be installed (``pip install -e .``, or the ``rl_install_plugin`` fixture)::

        class TestMyPlugin(PluginConformance):
            plugin = "myhook"
            distribution = "rl-plugin-myhook"
            provides = {"hooks": ["myhook"]}
    """

    #: the entry-point name (what ``rlctl plugins list`` shows)
    plugin: ClassVar[str] = ""
    #: the distribution that declares it
    distribution: ClassVar[str] = ""
    #: ``{registry kind: [names]}``, exactly as ``rlctl plugins list --json`` shows it
    provides: ClassVar[dict[str, list[str]]] = {}
    #: hooks it must implement (it may implement more)
    hooks: ClassVar[tuple[str, ...]] = ()
    #: modules that listing plugins must not import (the entry-point module stays light)
    heavy_modules: ClassVar[tuple[str, ...]] = ("torch",)

    def _check(self, entry: dict[str, object]) -> None:
        assert entry["status"] == "ok", entry["status"]
        assert entry["distribution"] == self.distribution
        assert entry["provides"] == self.provides
        missing = sorted(set(self.hooks) - set(entry["hooks"]))  # type: ignore[call-overload]
        assert not missing, f"hooks not implemented: {missing}"

    def test_listed_by_rlctl_without_heavy_imports(self) -> None:
        listing = rlctl_plugins_list("--plugin", self.distribution)
        self._check(listing.entry(self.plugin))
        assert not listing.imported(*self.heavy_modules), "rlctl plugins list imported " + ", ".join(listing.imported(*self.heavy_modules))

    def test_its_factories_are_found_by_name(self) -> None:
        import rlcore
        from rlcore.hookspecs import REGISTRIES

        pm = rlcore.get_plugin_manager(only=[self.plugin])
        info = {i.name: i for i in rlcore.describe_plugins(pm)}[self.plugin]
        self._check(info.to_dict())
        for kind, names in self.provides.items():
            for name in names if kind in REGISTRIES else ():  # "commands" are rlctl's, not a registry
                assert pm.registry(kind)[name][0] == self.plugin, f"{kind} {name!r} comes from {pm.registry(kind)[name][0]}"

    def test_blocked_it_gives_a_one_line_error(self) -> None:
        import rlcore
        from rlcore.hookspecs import REGISTRIES

        pm = rlcore.get_plugin_manager(block=[self.distribution])
        assert {i.name: i for i in rlcore.describe_plugins(pm)}[self.plugin].status == "blocked"
        for kind, names in self.provides.items():
            for name in names if kind in REGISTRIES else ():
                with pytest.raises((rlcore.PluginError, rlcore.ConfigError)) as info:
                    pm.factory(kind, name)
                assert name in str(info.value) and "\n" not in str(info.value), str(info.value)


__all__ = ["PluginConformance"]
