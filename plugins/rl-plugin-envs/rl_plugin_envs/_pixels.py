"""Rendered frames into the batch: TorchRL's ``PixelRenderTransform`` for rl-core's vector envs.

The :class:`PixelRender` wrapper renders every env just before each training step (the frame of
the observation the action is taken on) and keeps the frames; the plugin's ``rl_batch_process``
(``tryfirst``, so before an algorithm flattens the batch) writes them into the batch as
``pixels`` ``[envs, time, height, width, 3]`` ``uint8``. Evaluation envs (``training`` false)
render nothing.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np
from gymnasium.vector import VectorWrapper

from rlcore import ConfigError, env_layers


class PixelRender(VectorWrapper):
    """Renders the envs (``render_mode="rgb_array"``) before each step while ``training``; :meth:`take` hands the frames over.

    :param env: the vector env, made with ``env.kwargs.render_mode: rgb_array``.
    :param key: the batch key the frames go to.
    :param height: resize frames to this height (OpenCV's area interpolation); ``None``: as rendered.
    :param width: resize frames to this width; ``None``: as rendered.
    :param max_steps: the most steps of frames kept between two batches (the oldest are dropped).
    """

    def __init__(self, env: Any, key: str = "pixels", height: int | None = None, width: int | None = None, max_steps: int = 4096) -> None:
        if getattr(env, "render_mode", None) != "rgb_array":
            raise ConfigError("env.wrappers.pixels: needs envs that render frames (set env.kwargs.render_mode: rgb_array)")
        if (height is None) != (width is None):
            raise ConfigError("env.wrappers.pixels: set both height and width, or neither")
        super().__init__(env)
        self.key = key
        self.size = None if height is None or width is None else (height, width)
        self.training = True
        self.max_steps = max_steps
        self._frames: deque[np.ndarray] = deque(maxlen=max_steps)

    def render_frames(self) -> np.ndarray:
        """The envs' frames now, ``[envs, height, width, 3]`` ``uint8`` (an env's float frames are read in ``[0, 1]``, MinAtar's)."""
        rendered = self.env.render()
        assert rendered is not None, "the envs rendered nothing (render_mode rgb_array is checked when the wrapper is made)"
        frames = [np.asarray(frame) for frame in rendered]
        frames = [np.rint(np.clip(f, 0.0, 1.0) * 255.0) if np.issubdtype(f.dtype, np.floating) else f for f in frames]
        if self.size is not None:
            import cv2

            frames = [cv2.resize(frame, (self.size[1], self.size[0]), interpolation=cv2.INTER_AREA) for frame in frames]
        return np.stack(frames).astype(np.uint8, copy=False)

    def step(self, actions: Any) -> tuple[Any, ...]:
        if self.training:
            self._frames.append(self.render_frames())
        return self.env.step(actions)

    def take(self, steps: int) -> np.ndarray:
        """The frames of the last ``steps`` steps, ``[envs, steps, height, width, 3]``, and forget them.

        :raises ConfigError: when fewer were kept (``max_steps`` below the batch's steps).
        """
        if len(self._frames) < steps:
            have = len(self._frames)
            self._frames.clear()
            raise ConfigError(f"env.wrappers.pixels.max_steps: {have} steps of frames kept, the batch has {steps}; raise max_steps")
        frames = list(self._frames)[-steps:]
        self._frames.clear()
        return np.stack(frames, axis=1)

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Nothing to restore: frames are rendered again from the restored envs."""


def find_pixel_render(env: Any) -> PixelRender | None:
    """The :class:`PixelRender` among ``env``'s wrappers, or ``None``."""
    return next((layer for layer in env_layers(env) if isinstance(layer, PixelRender)), None)


def add_pixels(trainer: Any, batch: Any) -> None:
    """Write the training env's rendered frames into ``batch`` (``[envs, time]``) under the wrapper's key."""
    wrapper = find_pixel_render(getattr(getattr(trainer, "collector", None), "env", None))
    if wrapper is None or batch.batch_dims != 2:
        return
    import torch

    frames = torch.from_numpy(wrapper.take(int(batch.batch_size[1])))
    batch.set(wrapper.key, frames.to(batch.device) if batch.device is not None else frames)


__all__ = ["PixelRender", "add_pixels", "find_pixel_render"]
