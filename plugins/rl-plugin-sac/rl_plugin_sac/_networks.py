"""SAC's networks: a tanh-squashed Gaussian actor, and the policy acting with it (the twin critics are rl-plugin-nets' ``TwinQ``)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from tensordict import TensorDictBase
from tensordict.nn import InteractionType, interaction_type

from rl_plugin_nets import MLP, ActorPolicy

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)
_LOG_2 = math.log(2.0)


class Actor(MLP):
    """``obs -> hidden_sizes -> (mean, log_std)`` per action dimension; actions are ``tanh(mean + std * noise)``.

    :param obs_dim: size of an observation.
    :param action_dim: size of an action.
    :param hidden_sizes: hidden layer widths.
    :param activation: a name of ``rl_plugin_nets.ACTIVATIONS``.
    :param log_std_min: lower clamp of the log standard deviation.
    :param log_std_max: upper clamp of the log standard deviation.
    """

    def __init__(
        self,
        obs_dim: int,
        action_dim: int,
        hidden_sizes: Sequence[int],
        activation: str = "relu",
        log_std_min: float = -20.0,
        log_std_max: float = 2.0,
    ) -> None:
        super().__init__([obs_dim, *hidden_sizes, 2 * action_dim], activation)
        self.log_std_min, self.log_std_max = log_std_min, log_std_max

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:  # type: ignore[override]
        """``(mean, log_std)``, each ``[B, action_dim]``, of observations ``[B, obs_dim]``."""
        mean, log_std = super().forward(obs).chunk(2, dim=-1)
        return mean, log_std.clamp(self.log_std_min, self.log_std_max)

    def sample(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """A reparameterised action in ``[-1, 1]`` and its log-probability ``[B, 1]``.

        ``u = mean + std * noise``, ``a = tanh(u)``,
        ``log pi(a|s) = log N(u; mean, std) - sum log(1 - tanh(u)^2)``, with
        ``log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u))`` (exact and stable).
        """
        mean, log_std = self.forward(obs)
        noise = torch.randn_like(mean)
        u = mean + log_std.exp() * noise
        log_prob = (-0.5 * noise.pow(2) - log_std - _LOG_SQRT_2PI - 2 * (_LOG_2 - u - F.softplus(-2 * u))).sum(-1, keepdim=True)
        return torch.tanh(u), log_prob


class SACPolicy(ActorPolicy):
    """Acts with the actor: samples under ``InteractionType.RANDOM``, ``tanh(mean)`` otherwise; ``action`` in the env's bounds.

    ``SACPolicy(actor, bounds, encoder)``, as :class:`rl_plugin_nets.ActorPolicy`.
    """

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        obs = tensordict.get("observation")
        mean, log_std = self.actor.forward(self.features(obs))
        if interaction_type() == InteractionType.RANDOM:  # a sample; acting needs no log-probability
            mean = mean + log_std.exp() * torch.randn_like(mean)  # as in sample()
        unit = torch.tanh(mean)
        tensordict.set("action", self.bounds.to_env(unit))
        return tensordict
