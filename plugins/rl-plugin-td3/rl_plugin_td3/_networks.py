"""TD3's networks: a deterministic tanh actor, and the policy acting with it.

The critics are rl-plugin-nets' ``TwinQ``, with ``critics=2`` (TD3) or ``1`` (DDPG): the loss reads
``[K, B, 1]`` critic values.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase

from rl_plugin_nets import MLP, ActorPolicy


class Actor(MLP):
    """``obs -> hidden_sizes -> action_dim``, squashed by ``tanh``: a deterministic action in ``[-1, 1]``.

    :param obs_dim: size of an observation (or of the critics' encoder's features).
    :param action_dim: size of an action.
    :param hidden_sizes: hidden layer widths.
    :param activation: a name of ``rl_plugin_nets.ACTIVATIONS``.
    """

    def __init__(self, obs_dim: int, action_dim: int, hidden_sizes: Sequence[int], activation: str = "relu") -> None:
        super().__init__([obs_dim, *hidden_sizes, action_dim], activation)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Actions ``[B, action_dim]`` in ``[-1, 1]`` of observations ``[B, obs_dim]``."""
        return torch.tanh(super().forward(obs))


class DeterministicPolicy(ActorPolicy):
    """Acts with the actor: ``action`` = the actor's, rescaled to the env's bounds; exploration wraps it.

    ``DeterministicPolicy(actor, bounds, encoder)``, as :class:`rl_plugin_nets.ActorPolicy`.
    """

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        obs = tensordict.get("observation")
        unit = self.actor(self.features(obs))
        tensordict.set("action", self.bounds.to_env(unit))
        return tensordict
