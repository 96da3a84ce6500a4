"""rl-plugin-torchrun: data-parallel learners under ``torchrun``, as an :class:`rlcore.World`.

``torchrun --nproc_per_node N -m rlcore train CONFIG`` starts N processes (ranks) that train one config
together; ``rlctl train CONFIG`` is the same run with one rank. See :class:`~rl_plugin_torchrun._world.Ranks`.

Importing this module imports no torch: it is imported when a launcher started several processes.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from rlcore import ConfigError, hookimpl, lazy_getattr

if TYPE_CHECKING:
    from ._world import GradientAverager, Ranks, RanksCheckpoint

__version__ = "0.1.0"
__all__ = ["GradientAverager", "Ranks", "RanksCheckpoint", "launched_ranks", "rl_world"]
__getattr__ = lazy_getattr(__name__, {"GradientAverager": "._world", "Ranks": "._world", "RanksCheckpoint": "._world"})


def launched_ranks() -> int:
    """How many ranks ``torchrun`` (or another launcher) started, from ``WORLD_SIZE``; 1 outside one."""
    size = os.environ.get("WORLD_SIZE", "1") if "RANK" in os.environ else "1"
    return max(int(size), 1) if size.isdigit() else 1


@hookimpl
def rl_world(config: dict[str, Any]) -> Ranks | None:
    """The ranks ``torchrun`` started, once the config is known to split over them; ``None`` outside ``torchrun``.

    :raises ConfigError: for envs that do not split evenly over the ranks, or a collector that steps its envs elsewhere.
    """
    world_size = launched_ranks()
    if world_size <= 1:
        return None
    num_envs = config["env"]["num_envs"]
    if num_envs % world_size:
        raise ConfigError(
            f"env.num_envs: {num_envs} envs do not split over {world_size} torchrun ranks (each runs env.num_envs / {world_size}; "
            f"valid choices: a multiple of {world_size}, e.g. --set env.num_envs={-(-num_envs // world_size) * world_size})"
        )
    if config["collector"]["name"] != "local":
        raise ConfigError(
            f"collector.name: {config['collector']['name']!r} with torchrun is not supported (valid choices: local); "
            "each torchrun rank collects in its own process"
        )
    from ._world import Ranks  # (lazy: torch, once a launcher started ranks)

    return Ranks.from_environment(config["trainer"]["device"])
