"""From an ``algo`` config section to the SAC loss module."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from rl_plugin_nets import TwinQ, acting_space, continuous_control
from rlcore import ConfigError, validate_options

from . import SACOptions
from ._loss import SACLoss
from ._networks import Actor


def parse_options(config: Mapping[str, Any]) -> SACOptions:
    """Check an ``algo`` section against :class:`SACOptions` and fill in the defaults.

    :raises rlcore.ConfigError: naming the bad key and what it accepts.
    """
    opts = SACOptions(**validate_options("algo", SACOptions, {k: v for k, v in config.items() if k != "name"}))
    if opts.log_std_min >= opts.log_std_max:
        raise ConfigError(f"algo.log_std_min: expected less than algo.log_std_max ({opts.log_std_max}), got {opts.log_std_min}")
    return opts


def build_loss(config: Mapping[str, Any], observation_space: Any, action_space: Any, device: str | torch.device = "cpu") -> SACLoss:
    """The SAC loss module for an env's spaces (see :func:`rl_plugin_sac.build_sac`)."""
    opts = parse_options(config)
    action_space = acting_space("sac", action_space)  # (finite bounds, where the env's have none)
    cnn, obs_dim, action_dim = continuous_control("sac", opts, observation_space, action_space)
    pi, qf = opts.net_arch.get("pi", opts.hidden_sizes), opts.net_arch.get("qf", opts.hidden_sizes)
    actor = Actor(obs_dim, action_dim, pi, opts.activation, opts.log_std_min, opts.log_std_max)
    critic = TwinQ(obs_dim, action_dim, qf, opts.activation, encoder=cnn)
    actor_encoder = None if cnn is None or opts.share_encoder else continuous_control("sac", opts, observation_space, action_space)[0]
    loss = SACLoss(
        actor,
        critic,
        action_space,
        actor_encoder=actor_encoder,
        gamma=opts.gamma,
        init_alpha=opts.init_alpha,
        learn_alpha=opts.learn_alpha,
        target_entropy=opts.target_entropy,
        n_step=opts.n_step,
        init_random_frames=opts.init_random_frames or 0,
    ).to(device)
    loss.compiled_update = opts.compile
    return loss
