"""The TD3 (and DDPG) loss module, top to bottom.

For a sample of transitions ``(s, a, r, s', terminated)`` from the replay buffer (actions in the
env's bounds, rescaled to ``[-1, 1]`` for the networks; ``m`` steps for n-step transitions), ``K``
critics ``Q_i`` (TD3: 2, ``twin``; DDPG: 1), the deterministic actor ``mu`` and target networks
``Q'_i``, ``mu'``::

    eps         = clip(target_noise * N(0, 1), -noise_clip, noise_clip)     target policy smoothing
    a'          = clip(mu'(s') + eps, -1, 1)                                no gradient
    y           = r + gamma**m * (1 - terminated) * min_i Q'_i(s', a')     clipped double Q (K = 1: Q'_1)
    loss_qvalue = sum_i mean (Q_i(s, a) - y)^2                              every step
    loss_actor  = -mean Q_1(s, mu(s))                                       every policy_delay-th step,
                                                                            the critic's weights detached

(Fujimoto et al., 2018, Algorithm 1; ``twin=False, policy_delay=1, target_noise=0`` is DDPG,
Lillicrap et al., 2016, with its target ``r + gamma Q'_1(s', mu'(s'))``.) The two losses reach
disjoint parameters, so one step of the run's single optimizer on their sum is the two steps of
TD3's two optimizers (unless ``trainer.clip_norm`` clips their gradients by one norm; the
``optimizer_hook`` with an actor and a critic group clips each on its own).

The delay. The run has one optimizer over all parameters, and the kernel sets every gradient to
``None`` before each backward pass (``zero_grad(set_to_none=True)``). On the steps where the actor
is not updated, the loss returns no ``loss_actor`` at all (and computes none): no gradient reaches
the actor, its parameters keep ``grad=None``, and torch's Adam, and the kernel's direct fused Adam
call alike, step only the parameters that have a gradient: the actor's weights, its moments and its
Adam step count stay exactly as they were, as with TD3's separate actor optimizer stepped every
``policy_delay`` iterations (TorchRL's TD3 example does the same with its own actor optimizer). A
zero gradient instead would move the actor through Adam's momentum. The steps counted are this
module's calls (its ``_extra_state``, checkpointed with the module): the actor steps at calls
``policy_delay, 2 policy_delay, ...``, as the ``target_updater`` hook, counting optimizer steps,
moves the targets (actor's and critics') at its steps ``interval, 2 interval, ...``: with
``interval == policy_delay`` (the defaults) both happen on the same steps, as in TD3.

``Q'`` and ``mu'`` are frozen copies (:func:`rl_plugin_replay.make_target`) moved towards the
online networks by the ``target_updater`` hook (:meth:`TD3Loss.target_networks`). With a prioritized
buffer the critics' squared errors are weighted by the importance weights, and the larger of the
``|y - Q_i|`` goes back as each item's priority.

Image observations go through the critics' encoder first (``s`` above is its features): the
critics' loss trains it, the actor reads its features detached (the target actor those of the
online encoder, without gradient), and the target critics have their own copy, moved with theirs
(rl-plugin-sac's arrangement). With an encoder of its own (``share_encoder: false``) the actor reads
that one, trained by the actor's loss, and the target actor a target copy of it, moved with the
target actor. For vector observations the encoding is the observation itself.
"""

from __future__ import annotations

import warnings
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from torch import nn

from rl_plugin_nets import ActionBounds, TwinQ
from rl_plugin_replay import OffPolicyLoss, bootstrap_target, critics_loss, make_target
from rlcore import hookimpl

from ._networks import Actor


class TD3Loss(OffPolicyLoss, nn.Module):
    """TD3's critic and (delayed) actor losses over replay samples; DDPG's with one critic and no delay.

    :param actor: the deterministic actor (actions in ``[-1, 1]``).
    :param critic: the critics: ``rl_plugin_nets.TwinQ``, two (TD3) or one (DDPG).
    :param policy: the collection policy: the actor wrapped in exploration noise.
    :param action_space: the single env's ``Box`` action space.
    :param gamma: the discount.
    :param policy_delay: the actor is updated at every ``policy_delay``-th call.
    :param target_noise: the target smoothing noise's standard deviation (in ``[-1, 1]`` action units).
    :param noise_clip: the bound of the target smoothing noise.
    :param n_step: steps of the n-step transitions (read by the replay hook).
    :param init_random_frames: random actions and no learning for this many frames (read by the replay hook).
    :param actor_encoder: the actor's own encoder (with a target copy, moved with the target actor); ``None``: it reads
        the critics' features, detached.
    """

    def __init__(
        self,
        actor: Actor,
        critic: TwinQ,
        policy: nn.Module,
        action_space: Any,
        *,
        actor_encoder: nn.Module | None = None,
        gamma: float = 0.99,
        policy_delay: int = 2,
        target_noise: float = 0.2,
        noise_clip: float = 0.5,
        n_step: int = 1,
        init_random_frames: int = 0,
    ) -> None:
        super().__init__()
        self.bounds = ActionBounds(action_space)
        self.actor = actor
        self.critic = critic
        self.target_actor = make_target(actor)
        self.actor_encoder = actor_encoder
        self.target_actor_encoder = None if actor_encoder is None else make_target(actor_encoder)
        self.target_critic = make_target(critic)
        self.policy = policy
        self.gamma = gamma
        self.policy_delay = policy_delay
        self.target_noise = target_noise
        self.noise_clip = noise_clip
        self.n_step = n_step
        self.init_random_frames = init_random_frames
        #: calls so far: critic updates (checkpointed, see :meth:`get_extra_state`)
        self.updates = 0

    def target_networks(self) -> list[tuple[nn.Module, nn.Module]]:
        """``(critic, target_critic)``, ``(actor, target_actor)`` (and the actor's encoder's), for the ``target_updater`` hook."""
        pairs = [(self.critic, self.target_critic), (self.actor, self.target_actor)]
        if self.actor_encoder is not None and self.target_actor_encoder is not None:
            pairs.append((self.actor_encoder, self.target_actor_encoder))
        return pairs

    def forward(self, batch: TensorDictBase) -> TensorDict:
        """The critics' loss of a replay sample, and the actor's at every ``policy_delay``-th call.

        :return: ``loss_qvalue``, ``loss_actor`` (only when the actor is updated), and ``q_value``, ``td_error`` to log.
        """
        self.updates += 1
        observation = batch.get("observation")
        obs = self.critic.encode(observation)  # the observations, or the critics' encoder's features
        action = self.bounds.to_unit(batch.get("action"))  # env bounds -> [-1, 1]

        # the critics' target: the target critics at the target actor's smoothed action
        with torch.no_grad():
            next_obs = batch.get(("next", "observation"))
            next_reads = self.critic.encode(next_obs) if self.target_actor_encoder is None else self.target_actor_encoder(next_obs)
            next_action = self.target_actor(next_reads)
            if self.target_noise > 0:
                noise = (torch.randn_like(next_action) * self.target_noise).clamp(-self.noise_clip, self.noise_clip)
                next_action = (next_action + noise).clamp(-1.0, 1.0)
            next_q = self.target_critic.forward(self.target_critic.encode(next_obs), next_action).amin(0)  # [B, 1]; one critic: Q'_1
            target = bootstrap_target(batch, self.gamma, next_q)

        # the critics (and their encoder)
        q = self.critic.forward(obs, action)  # [K, B, 1]
        loss_qvalue, td_error = critics_loss(batch, q, target)  # (weighted, and new priorities sent back, when prioritized)
        out = {"loss_qvalue": loss_qvalue, "q_value": q.detach().mean(), "td_error": td_error.mean()}

        # the actor, every policy_delay-th call only, through the first critic's (detached) weights on the (detached)
        # encoding, or on its own encoder's
        if self.updates % self.policy_delay == 0:
            obs = obs.detach()
            pi_action = self.actor(obs if self.actor_encoder is None else self.actor_encoder(observation))
            out["loss_actor"] = -self.critic.forward(obs, pi_action, self.critic.detached())[0].mean()
        return TensorDict(out, batch_size=[])

    def get_extra_state(self) -> dict[str, Any]:
        """The call count, which says when the actor is next updated (in ``state_dict``, so checkpoints carry it)."""
        return {"updates": self.updates}

    def set_extra_state(self, state: dict[str, Any]) -> None:
        """Restore :meth:`get_extra_state`."""
        self.updates = int(state["updates"])

    @hookimpl
    def rl_setup(self, trainer: Any) -> None:
        """The replay plugin's checks; then a word when the targets and the actor move on different steps."""
        super().rl_setup(trainer)
        interval = getattr(self.target_hook, "interval", None)
        if interval is not None and interval != self.policy_delay:
            warnings.warn(
                f"hooks.target_updater.interval ({interval}) differs from algo.policy_delay ({self.policy_delay}): the target networks "
                "move on other steps than the actor (TD3 moves them together)",
                stacklevel=2,
            )
