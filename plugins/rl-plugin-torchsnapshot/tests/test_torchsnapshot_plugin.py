"""Discovery through the ``rlcore.plugins`` entry point, a light import, blocking: rl-core's PluginConformance."""

from __future__ import annotations

from pathlib import Path

import rlcore
from rlcore_testing import PluginConformance


class TestTorchSnapshotPlugin(PluginConformance):
    plugin = "torchsnapshot"
    distribution = "rl-plugin-torchsnapshot"
    provides = {"checkpoint_backends": ["torchsnapshot"]}
    hooks = ("rl_register_checkpoint_backends",)
    heavy_modules = ("torch", "torchsnapshot", "numpy")


def test_factory_builds_the_backend(tmp_path: Path) -> None:
    from rl_plugin_torchsnapshot._backend import TorchSnapshotBackend

    factory = rlcore.get_plugin_manager(only=["torchsnapshot"]).factory("checkpoint_backends", "torchsnapshot")
    backend = factory(directory=tmp_path, keep_last=2)

    assert isinstance(backend, TorchSnapshotBackend)
    assert (backend.directory, backend.keep_last, backend.suffix) == (tmp_path, 2, "")
    backend.save({"frames": 3}, frames=3)
    assert backend.load()[1] == {"frames": 3}
