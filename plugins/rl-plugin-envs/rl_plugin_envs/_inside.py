"""Wrappers that act inside each env of a vector env: frame skip, time limit, frame stack, resize, grayscale, Atari.

They are Gymnasium's own single-env wrappers (``MaxAndSkipObservation``, ``TimeLimit``,
``FrameStackObservation``, ``ResizeObservation``, ``GrayscaleObservation``, ``AtariPreprocessing``),
applied to every env of a Gymnasium ``sync`` or ``async`` vector env by building it again with
each env wrapped (:func:`wrap_each_env`). An episode's end inside the skip or the stack is then
exact, and ``SAME_STEP`` autoreset gives the wrapped final observation. Those with state save it
with ``state_dict``/``load_state_dict``, so that the vector env still checkpoints its envs where
the env under them can be saved.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import gymnasium
import numpy as np
from gymnasium.wrappers import (
    AtariPreprocessing,
    FrameStackObservation,
    GrayscaleObservation,
    MaxAndSkipObservation,
    ResizeObservation,
    TimeLimit,
)

from rlcore import ConfigError, first_line


def _array_state(value: np.ndarray) -> Any:
    import torch

    return torch.from_numpy(np.array(value, copy=True))


class FrameSkip(MaxAndSkipObservation):
    """Gymnasium's ``MaxAndSkipObservation``: the action repeated ``skip`` times, rewards summed, the
    observation the maximum of the last two frames (DQN's flicker fix).

    An episode that ends inside the skip returns the maximum of the last two frames it showed (its
    only frame, when it ends at the first): Gymnasium's keeps only frames ``skip - 2`` and
    ``skip - 1``, and returns an earlier step's there. Nothing is kept from one step to the next.
    """

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        total_reward, total_raw, before, last = 0.0, 0.0, None, None
        for _ in range(self._skip):
            obs, reward, terminated, truncated, info = self.env.step(action)
            total_reward += float(reward)
            total_raw += float(info.get("raw_reward", reward))  # (a reward wrapper inside keeps the env's own there)
            before, last = last, obs
            if terminated or truncated:
                break
        if "raw_reward" in info:
            info = {**info, "raw_reward": total_raw}
        assert last is not None  # (the skip is at least one step)
        return (last if before is None else np.maximum(before, last)), total_reward, terminated, truncated, info

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Nothing to restore."""


class FrameStack(FrameStackObservation):
    """Gymnasium's ``FrameStackObservation``: the last ``stack_size`` observations, ``[stack_size, *obs_shape]``."""

    def state_dict(self) -> dict[str, Any]:
        return {"queue": _array_state(np.stack(list(self.obs_queue))), "padding": _array_state(np.asarray(self.padding_value))}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        queue = np.asarray(state["queue"])
        self.obs_queue.clear()
        self.obs_queue.extend(queue[i].copy() for i in range(len(queue)))
        self.padding_value = np.asarray(state["padding"]).copy()


class Resize(ResizeObservation):
    """Gymnasium's ``ResizeObservation`` (OpenCV's area interpolation); no state."""

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Nothing to restore."""


class Grayscale(GrayscaleObservation):
    """Gymnasium's ``GrayscaleObservation`` of RGB frames; no state."""

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Nothing to restore."""


class KeepEntries(gymnasium.ObservationWrapper[Any, Any, Any]):
    """The entries ``keep`` of each flat ``Box`` observation, in that order; no state.

    :raises ValueError: for an observation space that is no flat ``Box``, or an entry it does not have.
    """

    def __init__(self, env: gymnasium.Env, keep: list[int]) -> None:
        super().__init__(env)
        space = env.observation_space
        if not isinstance(space, gymnasium.spaces.Box) or len(space.shape) != 1:
            raise ValueError(f"keeps entries of a flat Box observation, the env's is {space}")
        size = space.shape[0]
        if not keep or any(not 0 <= i < size for i in keep):
            raise ValueError(f"keep: {keep} names entries the observation has not (valid choices: 0 to {size - 1})")
        self.keep = np.asarray(keep)
        self.observation_space = gymnasium.spaces.Box(space.low[self.keep], space.high[self.keep], dtype=space.dtype)

    def observation(self, observation: Any) -> Any:
        return observation[self.keep]

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Nothing to restore."""


def atari(env: gymnasium.Env, **options: Any) -> gymnasium.Env:
    """Gymnasium's ``AtariPreprocessing`` on an ALE env whose own frame skip is turned off (the wrapper skips, max-pooling
    the last two frames), ``uint8`` frames.

    :param env: one ALE env (``ALE/Pong-v5``).
    :param options: ``AtariPreprocessing``'s (``noop_max``, ``frame_skip``, ``screen_size``, ...).
    """
    base = env.unwrapped
    if not type(base).__module__.startswith("ale_py"):
        raise ValueError(f"needs an Atari env of ale-py (ALE/Pong-v5, ...), got {env.spec.id if env.spec else type(base).__name__}")
    if getattr(base, "_frameskip", 1) != 1:
        base._frameskip = 1  # type: ignore[attr-defined]  # (ale-py's AtariEnv: v5 ids skip 4 frames themselves; the wrapper's frame skip replaces it)
    return AtariPreprocessing(env, **options)


def _wrapped(make_env: Callable[[], Any], wrap: Callable[[Any], Any]) -> Any:
    return wrap(make_env())


#: what Gymnasium's wrappers raise for an env, or options, they do not fit (``InvalidBound``: a ``gamma`` above 1, ...)
MISFIT = (TypeError, ValueError, AssertionError, gymnasium.error.Error)


def does_not_fit(key: str, err: BaseException) -> ConfigError:
    """The one-line error of the wrapper at ``key`` that raised ``err`` (one of :data:`MISFIT`) on the env."""
    return ConfigError(f"{key}: does not fit the env ({first_line(err)})")


def wrap_each_env(env: Any, wrap: Callable[[Any], Any], key: str) -> Any:
    """The vector env ``env`` built again with each of its envs wrapped by ``wrap``; the old envs are closed.

    Vector-env wrappers already around it (earlier in ``env.wrappers``, or an algorithm's preset)
    stay around it when ``wrap`` keeps the envs' observation space (and the action space, if one of
    them sets its own): an action or reward wrapper. They act on the rebuilt envs.

    :param env: a Gymnasium ``SyncVectorEnv`` or ``AsyncVectorEnv`` (the ``sync`` and ``async``
        backends), maybe under vector-env wrappers.
    :param wrap: ``wrap(one_env) -> wrapped env``; picklable for ``async`` (a class or a ``functools.partial``).
    :param key: the config key, for errors.
    :raises ConfigError: when the backend cannot rebuild its envs, or vector-env wrappers are around
        it and ``wrap`` changes the spaces they were built for.
    """
    from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv, VectorWrapper

    outer: list[Any] = []
    base = env
    while isinstance(base, VectorWrapper):
        outer.append(base)
        base = base.env
    fns = getattr(base, "env_fns", None)
    if not isinstance(base, (SyncVectorEnv, AsyncVectorEnv)) or fns is None:
        raise ConfigError(f"{key}: acts inside each env, which the {type(base).__name__} vectorization does not allow (valid choices: sync, async)")
    try:
        rebuilt = type(base)([partial(_wrapped, fn, wrap) for fn in fns])
    except MISFIT as err:
        raise does_not_fit(key, err) from None
    if rebuilt.metadata.get("autoreset_mode") != AutoresetMode.SAME_STEP:
        rebuilt.close()
        raise ConfigError(f"{key}: {type(base).__name__} rebuilt loses SAME_STEP autoreset (valid choices: sync, async)")
    if not outer:
        base.close()
        return rebuilt
    same_action = rebuilt.single_action_space == base.single_action_space or all(getattr(w, "_action_space", None) is None for w in outer)
    if rebuilt.single_observation_space != base.single_observation_space or not same_action:
        rebuilt.close()
        names = ", ".join(type(w).__name__ for w in reversed(outer))
        raise ConfigError(f"{key}: changes what each env observes, so it comes before the vector-env wrappers in env.wrappers (here after {names})")
    base.close()
    outer[-1].env = rebuilt
    return env


def time_limit(env: gymnasium.Env, max_episode_steps: int) -> gymnasium.Env:
    """Gymnasium's ``TimeLimit``: truncate episodes after ``max_episode_steps`` steps (its state is plain attributes)."""
    return TimeLimit(env, max_episode_steps=max_episode_steps)


__all__ = ["FrameSkip", "FrameStack", "Grayscale", "Resize", "atari", "time_limit", "wrap_each_env"]
