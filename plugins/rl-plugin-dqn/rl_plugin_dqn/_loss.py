"""The DQN loss module, top to bottom.

For a sample of transitions ``(s, a, r, s', terminated)`` from the replay buffer (``r`` summed
over ``m`` steps and ``s'`` taken ``m`` steps ahead for n-step transitions)::

    Q(s, a)       = qnet(s)[a]
    a*            = argmax_a' qnet(s')[a']              double DQN (else argmax of target_qnet)
    y             = r + gamma**m * (1 - terminated) * target_qnet(s')[a*]
    loss_q        = mean_i  w_i * huber(Q(s_i, a_i) - y_i)     (or the squared error)

``w_i`` are the importance weights of a prioritized sample (1 otherwise); ``|y - Q(s, a)|``
goes back to the buffer as the new priorities (``"td_error"``, read by the replay hook at
``post_loss``). ``target_qnet`` follows ``qnet`` through the ``target_updater`` hook
(:meth:`DQNLoss.target_networks`). The collection policy is epsilon-greedy over ``qnet``;
evaluation is greedy.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from tensordict import TensorDict, TensorDictBase
from torch import nn

from rl_plugin_replay import PRIORITY_KEY, WEIGHT_KEY, EGreedy, OffPolicyLoss, bootstrap_target, make_target

from ._networks import GreedyPolicy, QNetwork


class DQNLoss(OffPolicyLoss, nn.Module):
    """DQN's TD loss over replay samples.

    :param qnet: the online Q-network.
    :param action_space: the single env's ``Discrete`` action space.
    :param gamma: the discount.
    :param double_dqn: pick the next action with ``qnet``, value it with ``target_qnet``.
    :param n_step: steps of the n-step transitions (read by the replay hook).
    :param loss: ``"huber"`` or ``"mse"``.
    :param eps_init: epsilon at frame 0.
    :param eps_end: epsilon after ``eps_annealing_frames``.
    :param eps_annealing_frames: frames of epsilon's linear annealing.
    :param init_random_frames: random actions and no learning for this many frames (read by the replay hook).
    """

    def __init__(
        self,
        qnet: QNetwork,
        action_space: Any,
        *,
        gamma: float = 0.99,
        double_dqn: bool = True,
        n_step: int = 1,
        loss: str = "huber",
        eps_init: float = 1.0,
        eps_end: float = 0.05,
        eps_annealing_frames: int | None = 10_000,
        init_random_frames: int = 0,
    ) -> None:
        super().__init__()
        self.qnet = qnet
        self.target_qnet = make_target(qnet)
        self.policy = EGreedy(GreedyPolicy(qnet), action_space, eps_init, eps_end, eps_annealing_frames, init_random_frames)
        self.gamma = gamma
        self.double_dqn = double_dqn
        self.n_step = n_step
        self.init_random_frames = init_random_frames
        self.td_loss = F.smooth_l1_loss if loss == "huber" else F.mse_loss

    def target_networks(self) -> list[tuple[nn.Module, nn.Module]]:
        """``(qnet, target_qnet)``, for the ``target_updater`` hook."""
        return [(self.qnet, self.target_qnet)]

    def forward(self, batch: TensorDictBase) -> TensorDict:
        """The TD loss of a replay sample; a prioritized one gets each item's ``|TD error|`` under ``"td_error"``.

        :return: ``loss_q``, and ``q_value``, ``target_value``, ``td_error`` (batch means) to log.
        """
        q = self.qnet.forward(batch.get("observation")).gather(1, batch.get("action").reshape(-1, 1).long())  # Q(s, a) [B, 1]
        with torch.no_grad():
            next_obs = batch.get(("next", "observation"))
            if self.double_dqn:
                next_action = self.qnet.forward(next_obs).argmax(1, keepdim=True)
                next_value = self.target_qnet.forward(next_obs).gather(1, next_action)
            else:
                next_value = self.target_qnet.forward(next_obs).amax(1, keepdim=True)
            target = bootstrap_target(batch, self.gamma, next_value)  # r + gamma^m (1 - terminated) Q'
        td_error = (target - q.detach()).abs_()
        weight = batch.get(WEIGHT_KEY, None)  # a prioritized sample: weight the errors, send back new priorities
        if weight is None:
            loss = self.td_loss(q, target)
        else:
            loss = (self.td_loss(q, target, reduction="none").reshape(-1) * weight).mean()
            batch.set(PRIORITY_KEY, td_error.reshape(-1))
        return TensorDict(
            {"loss_q": loss, "q_value": q.detach().mean(), "target_value": target.mean(), "td_error": td_error.mean()},
            batch_size=[],
        )
