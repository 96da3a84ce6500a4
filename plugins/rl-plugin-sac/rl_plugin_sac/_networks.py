"""SAC's networks: a tanh-squashed Gaussian actor and twin critics computed as one batched module."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from tensordict import TensorDictBase
from tensordict.nn import InteractionType, TensorDictModuleBase, interaction_type
from torch import nn

from rl_plugin_nets import ACTIVATIONS, MLP, linear_parameter

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


class TwinQ(nn.Module):
    """Two critics ``Q_i(s, a)``, ``[x, action] -> hidden_sizes -> 1``, computed together as batched matrix products.

    ``x`` is what :meth:`encode` makes of an observation: the observation itself, or the features of
    the ``encoder`` (a CNN of image observations) that both critics share and the critics' loss trains.
    Each layer holds both critics' weights ``[2, in, out]``: one ``torch.baddbmm`` computes the layer for both.

    :param obs_dim: size of ``x``: of an observation, or the encoder's ``out_dim``.
    :param action_dim: size of an action.
    :param hidden_sizes: hidden layer widths of each critic.
    :param activation: a name of ``rl_plugin_nets.ACTIVATIONS``.
    :param encoder: a module ``[B, *obs_shape] -> [B, obs_dim]``, or ``None``.
    """

    def __init__(self, obs_dim: int, action_dim: int, hidden_sizes: Sequence[int], activation: str = "relu", encoder: nn.Module | None = None) -> None:
        super().__init__()
        self.encoder = encoder
        sizes = [obs_dim + action_dim, *hidden_sizes, 1]
        self.layers = [(f"weight{i}", f"bias{i}") for i in range(len(sizes) - 1)]
        for i, (weight, bias) in enumerate(self.layers):
            self.register_parameter(weight, linear_parameter((2, sizes[i], sizes[i + 1]), sizes[i]))
            self.register_parameter(bias, linear_parameter((2, 1, sizes[i + 1]), sizes[i]))
        self.activation = ACTIVATIONS[activation]

    def encode(self, obs: torch.Tensor) -> torch.Tensor:
        """The critics' input ``x`` of observations ``[B, *obs_shape]``: the encoder's features, or the observations."""
        return obs if self.encoder is None else self.encoder(obs)

    def forward(self, x: torch.Tensor, action: torch.Tensor, params: Mapping[str, Any] | None = None) -> torch.Tensor:
        """``[Q_1(s, a), Q_2(s, a)]`` as ``[2, B, 1]``.

        :param x: encoded observations ``[B, obs_dim]`` (:meth:`encode`).
        :param action: actions in ``[-1, 1]``, ``[B, action_dim]``.
        :param params: weights of the layers to use instead of the module's own (e.g. detached ones).
        """
        weights: Mapping[str, Any] = params if params is not None else self._parameters or self._buffers  # a target: buffers
        x = torch.cat([x, action], dim=-1)
        h = x.unsqueeze(0).expand(2, *x.shape)
        last = len(self.layers) - 1
        for i, (weight, bias) in enumerate(self.layers):
            h = torch.baddbmm(weights[bias], h, weights[weight])
            if i < last:
                h = self.activation(h)
        return h

    def detached(self) -> dict[str, torch.Tensor]:
        """The module's weights, cut from the autograd graph (gradients reach the inputs, not the critics)."""
        return {name: p.detach() for name, p in self._parameters.items() if p is not None}


class SACPolicy(TensorDictModuleBase):
    """Acts with the actor: samples under ``InteractionType.RANDOM``, ``tanh(mean)`` otherwise; ``action`` in the env's bounds.

    :param actor: the actor.
    :param low: the action space's lower bounds.
    :param high: the action space's upper bounds.
    :param encoder: the critics' encoder, which the actor reads observations through, or ``None``.
    """

    in_keys = ["observation"]
    out_keys = ["action"]
    center: torch.Tensor
    half_range: torch.Tensor

    def __init__(self, actor: Actor, low: torch.Tensor, high: torch.Tensor, encoder: nn.Module | None = None) -> None:
        super().__init__()
        self.actor = actor
        self.encoder = encoder
        self.register_buffer("center", (high + low) / 2, persistent=False)
        self.register_buffer("half_range", (high - low) / 2, persistent=False)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        obs = tensordict.get("observation")
        mean, log_std = self.actor.forward(obs if self.encoder is None else self.encoder(obs))
        if interaction_type() == InteractionType.RANDOM:  # a sample; acting needs no log-probability
            mean = mean + log_std.exp() * torch.randn_like(mean)  # as in sample()
        unit = torch.tanh(mean)
        tensordict.set("action", torch.addcmul(self.center, unit, self.half_range))
        return tensordict
