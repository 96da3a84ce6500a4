"""From an ``algo`` config section to the loss module and its policy."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import torch

from rl_plugin_nets import ENCODER_KEYS

from . import DEFAULTS, OBJECTIVE, OPTIONS
from ._losses import PolicyGradientLoss
from ._policies import RECURRENT, make_actor_critic

#: ``algo`` keys that configure the actor-critic rather than the loss
POLICY_KEYS = ("hidden_sizes", "net_arch", "activation", "shared_trunk", "share_encoder", "log_std_init", "action_bounds", "recurrent", *ENCODER_KEYS)


def build_loss(
    name: str,
    config: Mapping[str, Any],
    observation_space: Any,
    action_space: Any,
    device: str | torch.device = "cpu",
) -> PolicyGradientLoss:
    """Build algorithm ``name``'s loss module, its ``policy`` built from the env's spaces.

    :param name: a key of :data:`rl_plugin_pg.OPTIONS`.
    :param config: the ``algo`` section; missing keys take the algorithm's defaults.
    :param observation_space: the single env's observation space.
    :param action_space: the single env's action space.
    :param device: where the modules live.
    :raises ValueError: for a key the algorithm does not accept.
    """
    declared = dataclasses.asdict(OPTIONS[name]())
    options = {**declared, **DEFAULTS[name]["algo"], **{k: v for k, v in config.items() if k != "name"}}
    unknown = sorted(set(options) - set(declared))
    if unknown:
        raise ValueError(f"algo: unknown key(s) {', '.join(unknown)} for {name!r}; valid keys: {', '.join(sorted(declared))}")
    recurrent = options["recurrent"]
    policy = make_actor_critic(observation_space, action_space, **{k: options.pop(k) for k in POLICY_KEYS})
    seq_len = None if recurrent is None else recurrent.get("seq_len", RECURRENT["seq_len"])
    return PolicyGradientLoss(policy, objective=OBJECTIVE[name], seq_len=seq_len, **options).to(device)
