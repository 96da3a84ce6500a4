"""rl-plugin-torchrun as a plugin: found, listed without torch, and its world refusing configs that do not split.

Training on several ranks is tested under a real ``torchrun`` in the repository's tests/test_distributed.py.
"""

from __future__ import annotations

import pytest

import rlcore
from rl_plugin_torchrun import launched_ranks, rl_world
from rlcore_testing import PluginConformance


class TestTorchrunPlugin(PluginConformance):
    """Found through its entry point, listed without importing torch, blockable."""

    plugin = "torchrun"
    distribution = "rl-plugin-torchrun"
    provides = {}
    hooks = ("rl_world",)


def test_outside_a_launcher_there_is_no_world_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.setenv("WORLD_SIZE", "4")  # (a WORLD_SIZE without RANK is not a launcher's)
    assert launched_ranks() == 1
    assert rl_world(config=rlcore.default_config("ppo")) is None


@pytest.mark.parametrize(("num_envs", "ranks", "suggested"), [(1, 2, 2), (3, 2, 4), (5, 4, 8)])
def test_envs_that_do_not_split_over_the_ranks_say_what_to_set(monkeypatch: pytest.MonkeyPatch, num_envs: int, ranks: int, suggested: int) -> None:
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", str(ranks))
    config = rlcore.default_config("ppo")
    config["env"]["num_envs"] = num_envs
    with pytest.raises(rlcore.ConfigError) as refused:
        rl_world(config=config)
    assert str(refused.value) == (
        f"env.num_envs: {num_envs} envs do not split over {ranks} torchrun ranks (each runs env.num_envs / {ranks}; "
        f"valid choices: a multiple of {ranks}, e.g. --set env.num_envs={suggested})"
    )
