"""The Q-network: an MLP from observations to one value per action, with an optional dueling head,
and the greedy policy that acts with it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModuleBase
from torch import nn

from rl_plugin_nets import MLP, float_observations


class QNetwork(nn.Module):
    """``Q(s, .)``: one value per action.

    Plain: an MLP ``obs -> hidden_sizes -> actions``. Dueling: a trunk ``obs -> hidden_sizes``
    (activated) with two linear heads, ``Q(s, a) = V(s) + A(s, a) - mean_a' A(s, a')``. With an
    ``encoder`` (a CNN), the encoder is the trunk and the heads are linear on its features: the
    Nature DQN, or its dueling variant.

    :param obs_dim: size of a (flattened) observation.
    :param num_actions: number of discrete actions.
    :param hidden_sizes: hidden layer widths: of the MLP (of the trunk, when dueling); with an encoder, of the head on its features.
    :param activation: a name of ``rl_plugin_nets.ACTIVATIONS``.
    :param dueling: use the dueling head.
    :param encoder: a module ``[B, *obs_shape] -> [B, encoder.out_dim]`` (activated features) instead of the MLP trunk.
    """

    def __init__(
        self,
        obs_dim: int,
        num_actions: int,
        hidden_sizes: Sequence[int],
        activation: str = "relu",
        dueling: bool = False,
        encoder: nn.Module | None = None,
    ) -> None:
        super().__init__()
        self.dueling = dueling
        self.num_actions = num_actions
        self.encoder = encoder
        if encoder is not None:
            self.heads = MLP([cast(int, encoder.out_dim), *hidden_sizes, 1 + num_actions if dueling else num_actions], activation)
        elif dueling:
            self.trunk = MLP([obs_dim, *hidden_sizes], activation, activate_last=True)
            width = hidden_sizes[-1] if hidden_sizes else obs_dim
            self.heads = MLP([width, 1 + num_actions])  # [value, advantages...] in one layer
        else:
            self.net = MLP([obs_dim, *hidden_sizes, num_actions], activation)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Q-values ``[B, num_actions]`` of observations ``[B, *obs_shape]``."""
        if self.encoder is not None:
            features = self.encoder(obs)  # activated
        else:
            obs = float_observations(obs.reshape(obs.shape[0], -1))
            if not self.dueling:
                return self.net.forward(obs)
            features = self.trunk.forward(obs)
        out = self.heads.forward(features)
        if not self.dueling:
            return out
        value, advantage = out.split([1, self.num_actions], dim=-1)
        return value + advantage - advantage.mean(-1, keepdim=True)


class GreedyPolicy(TensorDictModuleBase):
    """Acts greedily: ``action = argmax_a Q(observation, a)`` (exploration wraps it, see ``rl_plugin_replay.EGreedy``).

    :param qnet: the Q-network.
    """

    in_keys = ["observation"]
    out_keys = ["action"]

    def __init__(self, qnet: QNetwork) -> None:
        super().__init__()
        self.qnet = qnet

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        tensordict.set("action", self.qnet.forward(tensordict.get("observation")).argmax(-1))
        return tensordict
