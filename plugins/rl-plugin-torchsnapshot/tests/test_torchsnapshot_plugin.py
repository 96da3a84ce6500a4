"""Discovery through the ``rlcore.plugins`` entry point, and a light import."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import rlcore


@pytest.fixture(autouse=True)
def _no_plugin_restriction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RLCORE_PLUGINS", raising=False)


def test_plugin_is_discovered_with_its_backend() -> None:
    pm = rlcore.get_plugin_manager()
    infos = {info.name: info for info in pm.describe()}

    info = infos["torchsnapshot"]
    assert info.status == "ok"
    assert info.distribution == "rl-plugin-torchsnapshot"
    assert info.hooks == ["rl_register_checkpoint_backends"]
    assert info.provides == {"checkpoint_backends": ["torchsnapshot"]}


def test_factory_builds_the_backend(tmp_path: Path) -> None:
    from rl_plugin_torchsnapshot._backend import TorchSnapshotBackend

    factory = rlcore.get_plugin_manager().factory("checkpoint_backends", "torchsnapshot")
    backend = factory(directory=tmp_path, keep_last=2)

    assert isinstance(backend, TorchSnapshotBackend) and isinstance(backend, rlcore.CheckpointBackend)
    assert (backend.directory, backend.keep_last, backend.suffix) == (tmp_path, 2, "")
    backend.save({"frames": 3}, frames=3)
    assert backend.load()[1] == {"frames": 3}


def test_blocked_plugin_gives_a_one_line_error() -> None:
    pm = rlcore.get_plugin_manager(block=["rl-plugin-torchsnapshot"])

    with pytest.raises(rlcore.PluginError, match="blocked"):
        pm.factory("checkpoint_backends", "torchsnapshot")


def test_listing_does_not_import_torch() -> None:
    code = (
        "import sys, rlcore\n"
        "pm = rlcore.get_plugin_manager(only=['torchsnapshot'], block=['rl-core'])\n"
        "info = {i.name: i for i in pm.describe()}['torchsnapshot']\n"
        "assert info.provides == {'checkpoint_backends': ['torchsnapshot']}, info\n"
        "heavy = sorted({'torch', 'torchsnapshot', 'numpy'} & set(sys.modules))\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
