"""A tiny REINFORCE-style algorithm for kernel tests: a categorical policy and a policy-gradient loss."""

from __future__ import annotations

from typing import Any

import gymnasium
import torch
from tensordict import TensorDict
from tensordict.nn import InteractionType, TensorDictModuleBase, interaction_type
from torch import nn

from rlcore import TrainerHookBase


class ToyPolicy(TensorDictModuleBase):
    """Categorical policy over a linear layer; deterministic mode takes the argmax."""

    in_keys = ["observation"]
    out_keys = ["action", "sample_log_prob"]

    def __init__(self, obs_dim: int, n_actions: int) -> None:
        super().__init__()
        self.net = nn.Linear(obs_dim, n_actions)

    def forward(self, td: TensorDict) -> TensorDict:
        logits = self.net(td["observation"])
        if interaction_type() == InteractionType.DETERMINISTIC:
            action = logits.argmax(-1)
        else:
            action = torch.distributions.Categorical(logits=logits).sample()
        td["action"] = action
        td["sample_log_prob"] = torch.log_softmax(logits, -1).gather(-1, action.unsqueeze(-1)).squeeze(-1)
        return td


class ToyLoss(nn.Module):
    """``-mean(log pi(a|s) * reward)``: enough to move parameters and produce loss keys."""

    def __init__(self, obs_dim: int, n_actions: int) -> None:
        super().__init__()
        self.policy = ToyPolicy(obs_dim, n_actions)

    def forward(self, batch: TensorDict) -> TensorDict:
        logits = self.policy.net(batch["observation"])
        logp = torch.log_softmax(logits, -1).gather(-1, batch["action"].unsqueeze(-1)).squeeze(-1)
        reward = batch["next", "reward"].squeeze(-1)
        return TensorDict({"loss_objective": -(logp * reward).mean(), "entropy": -logp.mean().detach()}, [])


def build(config: dict[str, Any], observation_space: Any, action_space: Any, device: Any) -> ToyLoss:
    return ToyLoss(observation_space.shape[0], action_space.n)


class Counter(TrainerHookBase):
    """A named hook from the registry: counts optimizer steps, its count checkpointed."""

    def __init__(self, start: int = 0) -> None:
        self.count = start

    def register(self, trainer: Any, name: str) -> None:
        trainer.register_op("post_optim", self.step)
        trainer.register_module(name, self)

    def step(self) -> None:
        self.count += 1

    def state_dict(self) -> dict[str, Any]:
        return {"count": self.count}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.count = state["count"]


class Opaque(gymnasium.Wrapper):
    """A wrapper whose state rl-core cannot read (a third party's env it knows nothing of)."""

    def __init__(self, env: Any) -> None:
        super().__init__(env)
        self.secret = object()
