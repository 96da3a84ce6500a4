"""From an ``algo`` config section to the TD3 (or DDPG) loss module and its exploring collection policy."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from rl_plugin_nets import ActionBounds, TwinQ, acting_space, continuous_control
from rl_plugin_replay import GaussianNoise, OrnsteinUhlenbeck
from rlcore import ConfigError, validate_options

from . import TD3Options
from ._loss import TD3Loss
from ._networks import Actor, DeterministicPolicy


def parse_options(config: Mapping[str, Any]) -> TD3Options:
    """Check an ``algo`` section against :class:`TD3Options` and fill in the defaults.

    :raises rlcore.ConfigError: naming the bad key and what it accepts.
    """
    opts = TD3Options(**validate_options("algo", TD3Options, {k: v for k, v in config.items() if k != "name"}))
    if opts.exploration_sigma_end is not None and opts.exploration_annealing_frames is None:
        raise ConfigError(
            f"algo.exploration_annealing_frames: algo.exploration_sigma_end ({opts.exploration_sigma_end}) is reached over "
            "this many frames: set it, or leave exploration_sigma_end null for a constant noise"
        )
    return opts


def exploration(opts: TD3Options, policy: DeterministicPolicy, action_space: Any) -> GaussianNoise | OrnsteinUhlenbeck:
    """The collection policy: ``policy`` with ``init_random_frames`` of random actions, then its noise (``algo.exploration``)."""
    sigma_end = opts.exploration_sigma if opts.exploration_sigma_end is None else opts.exploration_sigma_end
    warmup = opts.init_random_frames or 0
    if opts.exploration == "ou":
        return OrnsteinUhlenbeck(
            policy,
            action_space,
            theta=opts.ou_theta,
            sigma=opts.exploration_sigma,
            dt=opts.ou_dt,
            sigma_end=sigma_end,
            annealing_frames=opts.exploration_annealing_frames,
            init_random_frames=warmup,
        )
    return GaussianNoise(
        policy,
        action_space,
        sigma_init=opts.exploration_sigma,
        sigma_end=sigma_end,
        annealing_frames=opts.exploration_annealing_frames,
        init_random_frames=warmup,
    )


def build_loss(
    config: Mapping[str, Any], observation_space: Any, action_space: Any, device: str | torch.device = "cpu", algorithm: str = "td3"
) -> TD3Loss:
    """The TD3 loss module for an env's spaces (see :func:`rl_plugin_td3.build_td3`); ``algorithm`` names it in errors."""
    opts = parse_options(config)
    action_space = acting_space(algorithm, action_space)  # (finite bounds, where the env's have none)
    cnn, obs_dim, action_dim = continuous_control(algorithm, opts, observation_space, action_space)
    pi, qf = opts.net_arch.get("pi", opts.hidden_sizes), opts.net_arch.get("qf", opts.hidden_sizes)
    actor = Actor(obs_dim, action_dim, pi, opts.activation)
    critic = TwinQ(obs_dim, action_dim, qf, opts.activation, encoder=cnn, critics=2 if opts.twin else 1)
    actor_encoder = None if cnn is None or opts.share_encoder else continuous_control(algorithm, opts, observation_space, action_space)[0]
    acting_encoder = critic.encoder if actor_encoder is None else actor_encoder
    policy = exploration(opts, DeterministicPolicy(actor, ActionBounds(action_space), acting_encoder), action_space)
    return TD3Loss(
        actor,
        critic,
        policy,
        action_space,
        actor_encoder=actor_encoder,
        gamma=opts.gamma,
        policy_delay=opts.policy_delay,
        target_noise=opts.target_noise,
        noise_clip=opts.noise_clip,
        n_step=opts.n_step,
        init_random_frames=opts.init_random_frames or 0,
    ).to(device)
