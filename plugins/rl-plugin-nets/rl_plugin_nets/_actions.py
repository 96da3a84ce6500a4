"""Bounded continuous actions: what an actor-critic over a ``Box`` of actions is built from, and the map to ``[-1, 1]``."""

from __future__ import annotations

import warnings
from typing import Any, cast

import numpy as np
import torch
from tensordict.nn import TensorDictModuleBase
from torch import nn

from ._encoders import image_encoder


def acting_space(name: str, action_space: Any) -> Any:
    """The ``Box`` a tanh-squashed actor acts in: ``action_space`` when its bounds are finite; otherwise a copy whose entries
    without bounds get an interval of width 2 (``[-1, 1]``, ``[low, low + 2]`` or ``[high - 2, high]``), which a warning names.

    :param name: the algorithm's name, for the warning.
    :param action_space: a one-dimensional ``Box`` (another space is returned as it is, for :func:`continuous_control` to refuse).
    """
    from gymnasium import spaces

    if not isinstance(action_space, spaces.Box):
        return action_space
    low, high = np.asarray(action_space.low, dtype=np.float64), np.asarray(action_space.high, dtype=np.float64)
    has_low, has_high = np.isfinite(low), np.isfinite(high)
    unbounded = np.flatnonzero(~(has_low & has_high)).tolist()
    if not unbounded:
        return action_space
    low, high = np.where(has_low, low, np.where(has_high, high - 2, -1.0)), np.where(has_high, high, np.where(has_low, low + 2, 1.0))
    intervals = ", ".join(f"{i}: [{low[i]:g}, {high[i]:g}]" for i in unbounded)
    warnings.warn(
        f"algo.name: {name} squashes its actions into bounds, which the action space has not for entries {', '.join(map(str, unbounded))}: "
        f"it acts in {intervals} (to act in others, rescale the env's actions: env.wrappers.\"gymnasium.wrappers.TransformAction\")",
        stacklevel=2,
    )
    return spaces.Box(low.astype(action_space.dtype), high.astype(action_space.dtype), dtype=action_space.dtype)


class ActionBounds(nn.Module):
    """The affine map between a bounded ``Box``'s actions and ``[-1, 1]``, where tanh-squashed actors act.

    Its two buffers are not saved in a ``state_dict`` (the action space gives them again).

    :param action_space: a one-dimensional ``Box`` with finite bounds (:func:`acting_space` gives one for any ``Box``).
    """

    center: torch.Tensor
    half_range: torch.Tensor

    def __init__(self, action_space: Any) -> None:
        super().__init__()
        low = torch.as_tensor(action_space.low, dtype=torch.float32)
        high = torch.as_tensor(action_space.high, dtype=torch.float32)
        self.register_buffer("center", (high + low) / 2, persistent=False)
        self.register_buffer("half_range", (high - low) / 2, persistent=False)

    def to_unit(self, action: torch.Tensor) -> torch.Tensor:
        """Env actions ``[..., action_dim]`` in ``[-1, 1]``."""
        return (action - self.center) / self.half_range

    def to_env(self, unit: torch.Tensor) -> torch.Tensor:
        """Actions in ``[-1, 1]`` in the env's bounds."""
        return torch.addcmul(self.center, unit, self.half_range)


class ActorPolicy(TensorDictModuleBase):
    """What a policy of an actor in ``[-1, 1]`` holds: the actor, the map to the env's bounds, the encoder it reads through.

    Subclasses write ``forward``: ``observation`` in, ``action`` (in the env's bounds) out.

    :param actor: the actor.
    :param bounds: the map from the actor's ``[-1, 1]`` to the env's bounds.
    :param encoder: the critics' encoder, which the actor reads observations through, or ``None``.
    """

    in_keys = ["observation"]
    out_keys = ["action"]

    def __init__(self, actor: nn.Module, bounds: ActionBounds, encoder: nn.Module | None = None) -> None:
        super().__init__()
        self.actor = actor
        self.bounds = bounds
        self.encoder = encoder

    def features(self, obs: torch.Tensor) -> torch.Tensor:
        """What the actor reads of observations: the encoder's features, or the observations."""
        return obs if self.encoder is None else self.encoder(obs)


def continuous_control(name: str, options: Any, observation_space: Any, action_space: Any) -> tuple[nn.Module | None, int, int]:
    """``(cnn, obs_dim, action_dim)`` of an actor-critic over bounded continuous actions: the encoder (the CNN of image
    observations, or the user's ``network``; ``None`` for vectors), the size of what the networks read (its features, or an observation), an action's size.

    :param name: the algorithm's name, for the messages.
    :param options: its ``algo`` options (:class:`~rl_plugin_nets.EncoderOptions` and more).
    :param observation_space: the single env's observation space: a one-dimensional ``Box``, or images.
    :param action_space: the single env's action space: a one-dimensional ``Box`` with finite bounds.
    :raises rlcore.ConfigError: naming ``algo.name`` for spaces the algorithm does not handle, ``algo.<key>`` for a bad encoder option.
    """
    from gymnasium import spaces

    from rlcore import ConfigError

    from . import ENCODER_KEYS

    if not isinstance(action_space, spaces.Box) or len(action_space.shape) != 1:
        raise ConfigError(f"algo.name: {name} needs a one-dimensional Box action space, the env has {action_space}")
    if not (np.all(np.isfinite(action_space.low)) and np.all(np.isfinite(action_space.high))):
        raise ConfigError(f"algo.name: {name} squashes actions into bounds, which {action_space} has not (rl_plugin_nets.acting_space gives some)")
    cnn = image_encoder(observation_space, **{key: getattr(options, key) for key in ENCODER_KEYS}, action_space=action_space)
    if cnn is None and (not isinstance(observation_space, spaces.Box) or len(observation_space.shape) != 1):
        raise ConfigError(f"algo.name: {name} needs a one-dimensional Box observation space or images, the env has {observation_space}")
    obs_dim = int(cast(int, cnn.out_dim) if cnn is not None else observation_space.shape[0])
    return cnn, obs_dim, int(action_space.shape[0])


__all__ = ["ActionBounds", "ActorPolicy", "acting_space", "continuous_control"]
