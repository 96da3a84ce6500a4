"""Frames of a vector env whose envs do not render (EnvPool's, ale-py's): what the policy sees, as RGB frames."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium.vector import VectorWrapper

from rlcore import ConfigError


class ObservationFrames(VectorWrapper):
    """``render()`` of a C++ vector env: each env's latest image observation, the newest frame of its stack, in RGB.

    EnvPool's and ale-py's envs step in C++ threads and draw nothing; their observations are the
    preprocessed screens (84 x 84 grey, 4 stacked). ``rlctl eval --video`` and a ``render`` video
    recorder get those frames, what the policy saw.

    :param env: the vector env, with image observations ``[stack, height, width]`` or ``[stack, height, width, 3]``.
    """

    def __init__(self, env: Any) -> None:
        shape = env.single_observation_space.shape
        if env.single_observation_space.dtype != np.uint8 or len(shape) not in (3, 4):
            raise ConfigError(f"env.kwargs.render_mode: the envs do not render, and their observations {shape} are no frames to show")
        super().__init__(env)
        self.metadata = {**env.metadata, "render_modes": ["rgb_array"]}
        self._obs: np.ndarray | None = None

    @property
    def render_mode(self) -> str:  # type: ignore[override]  # (Gymnasium declares it an attribute; here it is fixed)
        return "rgb_array"

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        obs, info = self.env.reset(**kwargs)
        self._obs = np.asarray(obs)
        return obs, info

    def step(self, actions: Any) -> tuple[Any, ...]:
        result = self.env.step(actions)
        self._obs = np.asarray(result[0])
        return result

    def render(self) -> tuple[np.ndarray, ...] | None:
        """Each env's newest observed frame, ``[height, width, 3]`` ``uint8``; ``None`` before the first reset."""
        if self._obs is None:
            return None
        newest = self._obs[:, -1]
        if newest.ndim == 3:  # grey: [envs, height, width]
            newest = np.repeat(newest[..., None], 3, axis=-1)
        return tuple(newest)


def rendering(env: Any, render_mode: Any, backend: str) -> Any:
    """``env``, drawing its observation frames when ``render_mode`` is ``rgb_array``; ``env`` itself when it is ``None``.

    :raises ConfigError: for another render mode.
    """
    if render_mode is None:
        return env
    if render_mode != "rgb_array":
        env.close()
        raise ConfigError(f"env.kwargs.render_mode: the {backend} vectorization draws its observation frames only (valid choices: rgb_array)")
    try:
        return ObservationFrames(env)
    except ConfigError:
        env.close()
        raise


__all__ = ["ObservationFrames", "rendering"]
