"""Small envs that tell a learning network from one that only moves: an agent can do better than chance on them only
by reading its observation through the encoder under test.

Importing this module registers them with Gymnasium, so a config names them by import path::

    env: {id: "rlcore_testing.envs:PixelBandit-v0"}             # discrete actions: PPO, DQN, ...
    env: {id: "rlcore_testing.envs:PixelBanditContinuous-v0"}   # a Box action: SAC, TD3, ...
    env: {id: "rlcore_testing.envs:DictBandit-v0"}              # a Dict observation: an image and a vector
    env: {id: "rlcore_testing.envs:DictBanditContinuous-v0"}
"""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

__all__ = ["DictBandit", "PixelBandit"]


class PixelBandit(gymnasium.Env[np.ndarray, Any]):
    """One step an episode, on a 10 x 10 RGB image whose lit 3 x 3 block sits in its left or its right half.

    Discrete (``Discrete(2)``): the reward is 1 when the action names the side (0: left, 1: right), else 0; chance
    earns 0.5 an episode. Continuous (a ``Box`` in [-1, 1]): the reward is ``1 - |action - target|``, the target
    -0.5 for left and 0.5 for right; the action 0 earns 0.5, a uniform random one 0.375. Either way, only a policy
    that reads the image earns about 1.

    :param continuous: a ``Box`` action instead of a discrete one.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, continuous: bool = False) -> None:
        self.continuous = continuous
        self.observation_space = spaces.Box(0, 255, (10, 10, 3), np.uint8)
        self.action_space: spaces.Space[Any] = spaces.Box(-1.0, 1.0, (1,), np.float32) if continuous else spaces.Discrete(2)
        self._side = 0

    def _image(self) -> np.ndarray:
        image = np.zeros((10, 10, 3), np.uint8)
        column = 1 if self._side == 0 else 6
        row = int(self.np_random.integers(0, 8))
        image[row : row + 3, column : column + 3] = 255
        return image

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self._side = int(self.np_random.integers(0, 2))
        return self._image(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self.continuous:
            target = -0.5 if self._side == 0 else 0.5
            reward = 1.0 - abs(float(np.asarray(action).reshape(-1)[0]) - target)
        else:
            reward = float(int(action) == self._side)
        self._side = int(self.np_random.integers(0, 2))
        return self._image(), reward, True, False, {}


class DictBandit(PixelBandit):
    """:class:`PixelBandit` with a ``Dict`` observation: ``image``, the lit block, and ``flip``, a ``Box`` of one entry,
    0 or 1. The side that pays is the block's, swapped when ``flip`` is 1 (the target -0.5 or 0.5 of a continuous action
    too): a policy that reads one entry alone earns what chance does, only one that reads both earns about 1.

    :param continuous: a ``Box`` action instead of a discrete one.
    """

    def __init__(self, continuous: bool = False) -> None:
        super().__init__(continuous)
        entries: dict[str, spaces.Space[Any]] = {"image": spaces.Box(0, 255, (10, 10, 3), np.uint8), "flip": spaces.Box(0.0, 1.0, (1,), np.float32)}
        self.observation_space = spaces.Dict(entries)  # type: ignore[assignment]
        self._flip = 0

    def _observe(self) -> dict[str, np.ndarray]:
        self._flip = int(self.np_random.integers(0, 2))
        return {"image": self._image(), "flip": np.array([self._flip], np.float32)}

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        return self._observe(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        paying = self._side ^ self._flip
        if self.continuous:
            reward = 1.0 - abs(float(np.asarray(action).reshape(-1)[0]) - (-0.5 if paying == 0 else 0.5))
        else:
            reward = float(int(action) == paying)
        self._side = int(self.np_random.integers(0, 2))
        return self._observe(), reward, True, False, {}


gymnasium.register("PixelBandit-v0", entry_point="rlcore_testing.envs:PixelBandit", max_episode_steps=1)
gymnasium.register("PixelBanditContinuous-v0", entry_point="rlcore_testing.envs:PixelBandit", kwargs={"continuous": True}, max_episode_steps=1)
gymnasium.register("DictBandit-v0", entry_point="rlcore_testing.envs:DictBandit", max_episode_steps=1)
gymnasium.register("DictBanditContinuous-v0", entry_point="rlcore_testing.envs:DictBandit", kwargs={"continuous": True}, max_episode_steps=1)
