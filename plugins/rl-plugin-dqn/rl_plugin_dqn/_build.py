"""From an ``algo`` config section to the DQN loss module."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

import numpy as np
import torch

from rl_plugin_nets import ENCODER_KEYS, MultiInputEncoder, image_encoder
from rlcore import ConfigError, validate_options

from . import DQNOptions
from ._loss import DQNLoss
from ._networks import QNetwork

#: the ``algo`` keys that shape the Q-network, not the loss
NETWORK_KEYS = ("hidden_sizes", "net_arch", "activation", "dueling", *ENCODER_KEYS)
#: the ``algo`` keys of the loss module's training, not of its math
TRAINING_KEYS = ("compile",)


def parse_options(config: Mapping[str, Any]) -> DQNOptions:
    """Check an ``algo`` section against :class:`DQNOptions` and fill in the defaults.

    :raises rlcore.ConfigError: naming the bad key and what it accepts.
    """
    return DQNOptions(**validate_options("algo", DQNOptions, {k: v for k, v in config.items() if k != "name"}))


def build_loss(config: Mapping[str, Any], observation_space: Any, action_space: Any, device: str | torch.device = "cpu") -> DQNLoss:
    """The DQN loss module for an env's spaces (see :func:`rl_plugin_dqn.build_dqn`)."""
    from gymnasium import spaces

    opts = parse_options(config)
    if not isinstance(action_space, spaces.Discrete):
        raise ConfigError(f"algo.name: dqn needs a Discrete action space, the env has {action_space}")
    if not isinstance(observation_space, spaces.Box | spaces.Dict):
        raise ConfigError(f"algo.name: dqn needs a Box or a Dict observation space, the env has {type(observation_space).__name__}")
    encoder = image_encoder(observation_space, **{key: getattr(opts, key) for key in ENCODER_KEYS}, action_space=action_space)
    encoded = encoder is not None and not isinstance(encoder, MultiInputEncoder)  # (a Dict's encoder hands on some entries as they are)
    hidden = opts.net_arch.get("qf", [] if encoded else opts.hidden_sizes)
    qnet = QNetwork(int(np.prod(observation_space.shape or ())), int(action_space.n), hidden, opts.activation, opts.dueling, encoder)
    kwargs = {f.name: getattr(opts, f.name) for f in fields(opts) if f.name not in (*NETWORK_KEYS, *TRAINING_KEYS)}
    kwargs["init_random_frames"] = kwargs["init_random_frames"] or 0
    loss = DQNLoss(qnet, action_space, **kwargs).to(device)
    loss.compiled_update = opts.compile
    return loss
