"""The kit's own tiny algorithm: a linear categorical policy and a REINFORCE-style loss (imports torch)."""

from __future__ import annotations

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import InteractionType, TensorDictModuleBase, interaction_type
from torch import nn


class TinyPolicy(TensorDictModuleBase):
    """A categorical policy over one linear layer; it samples, or takes the argmax in ``DETERMINISTIC`` mode.

    :param obs_dim: the size of a (flat) observation.
    :param n_actions: how many discrete actions there are.
    """

    def __init__(self, obs_dim: int, n_actions: int) -> None:
        super().__init__()
        self.in_keys = ["observation"]
        self.out_keys = ["action", "sample_log_prob"]
        self.net = nn.Linear(obs_dim, n_actions)

    def log_probs(self, observation: torch.Tensor) -> torch.Tensor:
        """The log-probabilities of every action.

        :param observation: ``[..., obs_dim]``.
        """
        return torch.log_softmax(self.net(observation.flatten(-1).float()), -1)

    def forward(self, td: TensorDictBase) -> TensorDictBase:
        log_probs = self.log_probs(td["observation"])
        if interaction_type() == InteractionType.DETERMINISTIC:
            action = log_probs.argmax(-1)
        else:
            action = torch.multinomial(log_probs.exp().reshape(-1, log_probs.shape[-1]), 1).reshape(log_probs.shape[:-1])
        td["action"] = action
        td["sample_log_prob"] = log_probs.gather(-1, action.unsqueeze(-1)).squeeze(-1)
        return td


class TinyLoss(nn.Module):
    """``-mean(log pi(a|s) * reward)``: enough to move the parameters and log ``loss/objective``.

    Its ``policy`` attribute is the :class:`TinyPolicy` that acts, as an algorithm's loss module has.

    :param obs_dim: the size of a (flat) observation.
    :param n_actions: how many discrete actions there are.
    """

    def __init__(self, obs_dim: int, n_actions: int) -> None:
        super().__init__()
        self.policy = TinyPolicy(obs_dim, n_actions)

    def forward(self, batch: TensorDictBase) -> TensorDict:
        log_probs = self.policy.log_probs(batch["observation"])
        taken = log_probs.gather(-1, batch["action"].unsqueeze(-1)).squeeze(-1)
        reward = batch["next", "reward"].squeeze(-1)
        entropy = -(log_probs.exp() * log_probs).sum(-1).mean()
        return TensorDict({"loss_objective": -(taken * reward).mean(), "entropy": entropy.detach()}, batch_size=[])
