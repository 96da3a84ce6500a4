"""The SAC loss module, top to bottom.

For a sample of transitions ``(s, a, r, s', terminated)`` from the replay buffer (actions in the
env's bounds, rescaled to ``[-1, 1]`` for the critics; ``m`` steps for n-step transitions),
``alpha = exp(log_alpha)`` taken as a constant::

    a~, log pi(a~|s)    = actor.sample(s)                               reparameterised
    a'~, log pi(a'~|s') = actor.sample(s')                              no gradient
    y          = r + gamma**m * (1 - terminated) * (min_i Q'_i(s', a'~) - alpha * log pi(a'~|s'))
    loss_qvalue = 0.5 * sum_i mean (Q_i(s, a) - y)^2                     the twin critics
    loss_actor  = mean (alpha * log pi(a~|s) - min_i Q_i(s, a~))        critics' weights detached
    loss_alpha  = -mean log_alpha * (log pi(a~|s) + target_entropy)     log pi detached

The three losses have disjoint gradients (each reaches only its own parameters), so one
optimizer step on their sum (unclipped, the default) equals three separate steps of the same optimizer, as TorchRL's SAC
does: all three from the same parameters. ``Q'`` are the target critics, moved towards the
critics by the ``target_updater`` hook (:meth:`SACLoss.target_networks`). With a prioritized
buffer the critics' squared errors are weighted by the importance weights, and the larger of
the two ``|y - Q_i|`` goes back as each item's priority.

Image observations go through the critics' encoder first (``s`` above is its features): the
critics' loss trains it, the actor reads its features detached, and the target critics have
their own copy, moved with theirs (SAC-AE's and DrQ's arrangement); or, with an encoder of its own
(``share_encoder: false``), the actor reads that one, trained by the actor's loss. For vector
observations the encoding is the observation itself.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from rl_plugin_nets import ActionBounds, TwinQ
from rl_plugin_replay import OffPolicyLoss, RandomWarmup, bootstrap_target, critics_loss, make_target

from ._networks import Actor, SACPolicy


class SACLoss(OffPolicyLoss, nn.Module):
    """SAC's three losses over replay samples.

    :param actor: the tanh-Gaussian actor.
    :param critic: the twin critics.
    :param action_space: the single env's ``Box`` action space.
    :param gamma: the discount.
    :param init_alpha: the initial entropy temperature.
    :param learn_alpha: learn the temperature (else it stays ``init_alpha``).
    :param target_entropy: the entropy the temperature aims at; default ``-action_dim``.
    :param n_step: steps of the n-step transitions (read by the replay hook).
    :param init_random_frames: random actions and no learning for this many frames (read by the replay hook).
    :param actor_encoder: the actor's own encoder; ``None``: it reads the critics' features, detached.
    """

    def __init__(
        self,
        actor: Actor,
        critic: TwinQ,
        action_space: Any,
        *,
        actor_encoder: nn.Module | None = None,
        gamma: float = 0.99,
        init_alpha: float = 1.0,
        learn_alpha: bool = True,
        target_entropy: float | None = None,
        n_step: int = 1,
        init_random_frames: int = 0,
    ) -> None:
        super().__init__()
        self.bounds = ActionBounds(action_space)
        self.actor = actor
        self.actor_encoder = actor_encoder
        self.critic = critic
        self.target_critic = make_target(critic)
        acting_encoder = critic.encoder if actor_encoder is None else actor_encoder
        self.policy = RandomWarmup(SACPolicy(actor, self.bounds, acting_encoder), action_space, init_random_frames)
        self.log_alpha = nn.Parameter(torch.tensor(math.log(init_alpha)), requires_grad=learn_alpha)
        self.target_entropy = float(-action_space.shape[0] if target_entropy is None else target_entropy)
        self.gamma = gamma
        self.n_step = n_step
        self.init_random_frames = init_random_frames

    def target_networks(self) -> list[tuple[nn.Module, nn.Module]]:
        """``(critic, target_critic)``, for the ``target_updater`` hook."""
        return [(self.critic, self.target_critic)]

    def _actor_reads(self, observation: torch.Tensor) -> torch.Tensor:
        """What the actor reads of observations: its own encoder's features, or the critics' encoding."""
        return self.critic.encode(observation) if self.actor_encoder is None else self.actor_encoder(observation)

    def forward(self, batch: TensorDictBase) -> TensorDict:
        """The critic, actor and temperature losses of a replay sample.

        :return: ``loss_qvalue``, ``loss_actor``, ``loss_alpha``, and ``alpha``, ``entropy``, ``q_value``,
            ``td_error`` to log.
        """
        observation = batch.get("observation")
        obs = self.critic.encode(observation)  # the observations, or the critics' encoder's features
        action = self.bounds.to_unit(batch.get("action"))  # env bounds -> [-1, 1]
        alpha = self.log_alpha.detach().exp()

        # the critics' target, from the target critics and a fresh action at s'
        with torch.no_grad():
            next_obs = batch.get(("next", "observation"))
            next_action, next_log_pi = self.actor.sample(self._actor_reads(next_obs))
            next_q = self.target_critic.forward(self.target_critic.encode(next_obs), next_action).amin(0)  # [B, 1]
            target = bootstrap_target(batch, self.gamma, next_q - alpha * next_log_pi)

        # the twin critics (and their encoder)
        q = self.critic.forward(obs, action)  # [2, B, 1]
        summed, td_error = critics_loss(batch, q, target)  # (weighted, and new priorities sent back, when prioritized)
        loss_qvalue = 0.5 * summed

        # the actor, through the critics' (detached) weights, on the (detached) encoding, or on its own encoder's
        obs = obs.detach()
        pi_action, log_pi = self.actor.sample(obs if self.actor_encoder is None else self.actor_encoder(observation))
        q_pi = self.critic.forward(obs, pi_action, self.critic.detached()).amin(0)
        loss_actor = (alpha * log_pi - q_pi).mean()

        # the temperature
        loss_alpha = -(self.log_alpha * (log_pi.detach() + self.target_entropy)).mean()

        return TensorDict(
            {
                "loss_qvalue": loss_qvalue,
                "loss_actor": loss_actor,
                "loss_alpha": loss_alpha,
                "alpha": alpha,
                "entropy": -log_pi.detach().mean(),
                "q_value": q.detach().mean(),
                "td_error": td_error.mean(),
            },
            batch_size=[],
        )

