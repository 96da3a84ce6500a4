"""TD3's networks: a deterministic tanh actor, and the policy acting with it.

The critics are rl-plugin-nets' ``TwinQ``, with ``critics=2`` (TD3) or ``1`` (DDPG): the loss reads
``[K, B, 1]`` critic values.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModuleBase
from torch import nn

from rl_plugin_nets import MLP, ActionBounds


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


class DeterministicPolicy(TensorDictModuleBase):
    """Acts with the actor: ``action`` = the actor's, rescaled to the env's bounds; exploration wraps it.

    :param actor: the actor.
    :param bounds: the map from the actor's ``[-1, 1]`` to the env's bounds.
    :param encoder: the critics' encoder, which the actor reads observations through, or ``None``.
    """

    in_keys = ["observation"]
    out_keys = ["action"]

    def __init__(self, actor: Actor, bounds: ActionBounds, encoder: nn.Module | None = None) -> None:
        super().__init__()
        self.actor = actor
        self.bounds = bounds
        self.encoder = encoder

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        obs = tensordict.get("observation")
        unit = self.actor(obs if self.encoder is None else self.encoder(obs))
        tensordict.set("action", self.bounds.to_env(unit))
        return tensordict
