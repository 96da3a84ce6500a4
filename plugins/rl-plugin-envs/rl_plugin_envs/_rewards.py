"""Reward wrappers for vector envs: affine scaling (TorchRL's ``RewardScaling``) and clipping (Gymnasium's ``ClipReward``).

Both keep the env's own rewards in ``info["raw_reward"]`` (the first wrapper that changes them
sets it), so that episode returns are logged in the env's scale.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.vector import VectorWrapper
from gymnasium.wrappers.vector import ClipReward as GymnasiumClipReward


def with_raw(info: dict[str, Any], reward: Any) -> dict[str, Any]:
    return {**info, "raw_reward": info.get("raw_reward", reward)}


class ScaleReward(VectorWrapper):
    """``reward * scale + loc``.

    :param env: the vector env.
    :param scale: the factor.
    :param loc: the offset.
    """

    def __init__(self, env: Any, scale: float = 1.0, loc: float = 0.0) -> None:
        super().__init__(env)
        self.scale, self.loc = scale, loc

    def step(self, actions: Any) -> tuple[Any, ...]:
        obs, reward, terminated, truncated, info = self.env.step(actions)
        return obs, reward * self.scale + self.loc, terminated, truncated, with_raw(info, reward)


class ClipReward(GymnasiumClipReward):
    """Gymnasium's vector ``ClipReward`` (rewards clipped to ``[min_reward, max_reward]``), keeping ``info["raw_reward"]``.

    :param env: the vector env.
    :param min_reward: the lower bound; ``None``: none.
    :param max_reward: the upper bound; ``None``: none.
    """

    def step(self, actions: Any) -> tuple[Any, ...]:
        obs, reward, terminated, truncated, info = self.env.step(actions)
        clipped = self.rewards(np.array(reward, dtype=np.float64))  # (a copy: Gymnasium's clips in place)
        return obs, clipped, terminated, truncated, with_raw(info, reward)


__all__ = ["ClipReward", "ScaleReward"]
