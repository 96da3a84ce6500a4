"""Shared fixtures: the test plugins of tests/plugins/ (and tests/mistakes/), pip-installed as real distributions into a temporary site.

The installing is rl-core's author kit's (``rlcore_testing.pip_install`` and ``use_site``), as a
plugin author's tests would do it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import rlcore
from rlcore_testing import pip_install, run_rlctl, use_site

TEST_PLUGINS = Path(__file__).parent / "plugins"
#: a plugin that makes every mistake an author can (tests/test_plugin_mistakes.py)
INTRUDER = Path(__file__).parent / "mistakes" / "rl-plugin-intruder"
#: plugins that never return (tests/test_plugin_mistakes.py)
STUCK = Path(__file__).parent / "mistakes" / "rl-plugin-stuck"


def _site(tmp_path_factory: pytest.TempPathFactory, name: str, projects: list[Path]) -> Path:
    """A directory holding ``projects``, installed by one pip run (``--target``) with their entry points."""
    site = tmp_path_factory.mktemp(name)
    pip_install(projects, site)
    return site


def _discoverable(site: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Make the plugins of ``site`` discoverable in this process (and in subprocesses through PYTHONPATH), for one test."""
    use_site(site, monkeypatch)
    monkeypatch.delenv("RLCORE_PLUGINS", raising=False)
    return site


@pytest.fixture(scope="session")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test plugins of tests/plugins/, installed."""
    return _site(tmp_path_factory, "site", sorted(TEST_PLUGINS.iterdir()))


@pytest.fixture
def with_plugins(plugin_site: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test plugins, discoverable."""
    return _discoverable(plugin_site, monkeypatch)


@pytest.fixture(scope="session")
def intruder_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """rl-plugin-intruder, installed."""
    return _site(tmp_path_factory, "intruder", [INTRUDER])


@pytest.fixture
def intruder(intruder_site: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """rl-plugin-intruder, discoverable."""
    return _discoverable(intruder_site, monkeypatch)


@pytest.fixture
def stuck(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """rl-plugin-stuck, installed and discoverable."""
    return _discoverable(_site(tmp_path_factory, "stuck", [STUCK]), monkeypatch)


@pytest.fixture
def toy_pm(with_plugins: Path) -> rlcore.PluginManager:
    """A plugin manager with the hook recorder (and its toy algorithm), without the broken test plugins."""
    import rl_plugin_hookrecorder

    rl_plugin_hookrecorder.CALLS.clear()
    return rlcore.get_plugin_manager(block=["broken", "badhook", "badsig"])


@pytest.fixture
def rlctl(with_plugins: Path) -> Any:
    """``rlctl(*args, env=None, cwd=None, subprocess=False)``: run rlctl (:func:`rlcore_testing.run_rlctl`) where the test plugins are seen."""
    return run_rlctl


@pytest.fixture
def rlctl_bare() -> Any:
    """``rlctl(*args, env=None, cwd=None, subprocess=False)``: run rlctl where what the test's own fixtures installed is seen."""
    return run_rlctl
