"""The policy-gradient loss module: one module, four objectives, the loop's hooks as methods.

Per batch (the trainer calls these hooks on the loss module, see :mod:`rlcore.hookspecs`):

1. ``rl_batch_process``: values of ``observation`` (``state_value``) and ``("next", "observation")``, GAE
   advantages and value targets, with no gradient; the batch is flattened to ``[envs * time]`` (for a
   recurrent policy, cut into sequences ``[envs * time / seq_len, seq_len]``); the coefficient schedules
   are applied.
2. ``rl_process_optim_batch``: step ``j`` of the batch takes minibatch ``j % minibatches`` of a
   fresh permutation of the batch's rows (or sequences) drawn at the start of each epoch.
3. ``forward``: the losses of one minibatch (below).
4. ``rl_post_loss``: adaptive-KL stops the batch's remaining steps when the KL runs far past its target.
5. ``rl_post_steps``: adaptive-KL doubles or halves its penalty coefficient.
6. ``rl_post_steps_log``: explained variance, the KL coefficient, the scheduled coefficients.

The objectives (``A`` the advantage, ``r = pi(a|s) / pi_old(a|s)`` the probability ratio):

- ``"pg"``      REINFORCE with a learned baseline / A2C: ``-log pi(a|s) * A``
- ``"surrogate"`` the surrogate policy gradient: ``-r * A``
- ``"clip"``    PPO clip: ``-min(r * A, clip(r, 1 - eps, 1 + eps) * A)``
- ``"kl"``      PPO adaptive-KL: ``-r * A + beta * KL(pi_old || pi)``

plus ``value_coef * (V(s) - target)^2`` (optionally clipped around the collected value) and
``-entropy_coef * entropy``. ``KL`` is estimated from the samples as ``(r - 1) - log r``
(non-negative, unbiased).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
import torch.nn.functional as F
from tensordict import TensorDict, TensorDictBase
from torch import nn

from rlcore import ConfigError, Gauge, hookimpl, require_keys, shown

from ._advantages import gae
from ._policies import ActorCritic

OBJECTIVES = ("pg", "surrogate", "clip", "kl")
#: coefficients that ``schedule`` may anneal linearly over the run's frames
SCHEDULABLE = ("entropy_coef", "value_coef", "clip_range", "value_clip_range", "kl_target")


class PolicyGradientLoss(nn.Module):
    """Losses and batch processing of the policy-gradient family.

    :param policy: the actor-critic; it is also the collection policy (``loss.policy``).
    :param objective: one of :data:`OBJECTIVES`.
    :param gamma: the discount.
    :param gae_lambda: GAE's lambda.
    :param epochs: passes over each batch.
    :param minibatches: minibatches per epoch.
    :param normalize_advantage: standardise advantages within each minibatch.
    :param value_coef: weight of the value loss.
    :param value_clip_range: clip new values to this distance from the collected ones
        (PPO2-style, the larger of the clipped and unclipped errors); ``None`` for plain MSE.
    :param entropy_coef: weight of the entropy bonus.
    :param clip_range: PPO's ratio clipping ``eps`` (also defines the logged clip fraction).
    :param kl_target: adaptive-KL's target KL per batch.
    :param kl_penalty: adaptive-KL's initial penalty coefficient ``beta``.
    :param kl_stop_factor: stop a batch's remaining steps when a minibatch's KL exceeds
        ``kl_stop_factor * kl_target``; ``None`` never stops.
    :param schedule: ``{coefficient: final value}``: anneal these coefficients linearly from
        their configured value to the final one over the trainer's ``total_frames``.
    :param seq_len: a recurrent policy's sequence length, in steps of each env (``None``: each env's whole rollout).
    """

    #: learns from each batch as collected (its advantages are the batch's): an rlcore.OnPolicyLoss, which a replay buffer refuses
    on_policy = True
    kl_coef: torch.Tensor  # adaptive-KL's penalty coefficient (a buffer: checkpointed)

    def __init__(
        self,
        policy: ActorCritic,
        *,
        objective: str = "clip",
        gamma: float = 0.99,
        gae_lambda: float = 0.95,
        epochs: int = 4,
        minibatches: int = 4,
        normalize_advantage: bool = True,
        value_coef: float = 0.5,
        value_clip_range: float | None = None,
        entropy_coef: float = 0.0,
        clip_range: float = 0.2,
        kl_target: float = 0.01,
        kl_penalty: float = 1.0,
        kl_stop_factor: float | None = None,
        schedule: Mapping[str, float | None] | None = None,
        seq_len: int | None = None,
    ) -> None:
        super().__init__()
        if objective not in OBJECTIVES:
            raise ValueError(f"unknown objective {objective!r}; valid choices: {', '.join(OBJECTIVES)}")
        if epochs < 1 or minibatches < 1:
            raise ValueError(f"epochs and minibatches must be >= 1, got {epochs} and {minibatches}")
        schedule = {name: end for name, end in (schedule or {}).items() if end is not None}  # null: not scheduled
        for name in schedule:
            if name not in SCHEDULABLE:
                raise ConfigError(f"algo.schedule: cannot schedule {shown(name)} (valid choices: {', '.join(SCHEDULABLE)})")
        if "value_clip_range" in schedule and value_clip_range is None:
            raise ConfigError("algo.schedule.value_clip_range: value_clip_range is null, so it cannot be scheduled")
        self.policy = policy
        self.objective = objective
        self.gamma = gamma
        self.gae_lambda = gae_lambda
        self.epochs = epochs
        self.minibatches = minibatches
        #: read by the trainer when ``trainer.optim_steps_per_batch`` is left null
        self.optim_steps_per_batch = epochs * minibatches
        self.normalize_advantage = normalize_advantage
        self.value_coef = value_coef
        self.value_clip_range = value_clip_range
        self.entropy_coef = entropy_coef
        self.clip_range = clip_range
        self.kl_target = kl_target
        self.kl_stop_factor = kl_stop_factor
        self.schedule = {name: (getattr(self, name), end) for name, end in schedule.items()}
        self.recurrent = policy.lstm is not None
        self.seq_len = seq_len
        # adaptive state lives in buffers so that checkpoints carry it
        self.register_buffer("kl_coef", torch.tensor(float(kl_penalty)))
        self._batch: TensorDictBase | None = None
        self._minibatches: list[TensorDict] = []

    # ------------------------------------------------------------------ the losses
    def forward(self, batch: TensorDictBase) -> TensorDict:
        """The losses of one minibatch of the processed batch.

        :param batch: rows with ``observation``, the action, ``sample_log_prob``, ``state_value``,
            ``advantage`` and ``value_target``.
        :return: ``loss_policy``, ``loss_value``, ``loss_entropy`` (and ``loss_kl``), plus
            ``entropy``, ``kl_approx`` and ``clip_fraction`` to log.
        """
        log_prob, entropy, value = self.policy.evaluate(batch)
        if not self.entropy_coef:  # a bonus of weight 0 is only logged: no gradient to carry back
            entropy = entropy.detach()
        advantage = batch["advantage"].squeeze(-1)
        if self.normalize_advantage and advantage.numel() > 1:
            std, mean = torch.std_mean(advantage)
            advantage = (advantage - mean) / (std + 1e-8)
        log_ratio = log_prob - batch["sample_log_prob"]
        ratio = log_ratio.exp()
        with torch.set_grad_enabled(self.objective == "kl" and torch.is_grad_enabled()):
            kl = ((ratio - 1) - log_ratio).mean()

        if self.objective == "pg":
            loss_policy = -(log_prob * advantage).mean()
        elif self.objective == "clip":
            clipped = ratio.clamp(1 - self.clip_range, 1 + self.clip_range)
            loss_policy = -torch.min(ratio * advantage, clipped * advantage).mean()
        else:  # surrogate and kl
            loss_policy = -(ratio * advantage).mean()

        target = batch["value_target"]
        if self.value_clip_range is None:
            value_mse = F.mse_loss(value, target)
        else:
            old = batch["state_value"]
            value_clipped = old + (value - old).clamp(-self.value_clip_range, self.value_clip_range)
            value_mse = torch.max((value - target).pow(2), (value_clipped - target).pow(2)).mean()

        entropy = entropy.mean()
        losses = {
            "loss_policy": loss_policy,
            "loss_value": self.value_coef * value_mse,
            "loss_entropy": -self.entropy_coef * entropy,
        }
        if self.objective == "kl":
            losses["loss_kl"] = self.kl_coef * kl
        with torch.no_grad():
            losses["entropy"] = entropy.detach()
            losses["kl_approx"] = kl.detach()
            losses["clip_fraction"] = ((ratio - 1).abs() > self.clip_range).float().mean()
        return TensorDict(losses, batch_size=[])

    # ------------------------------------------------------------------ batch processing
    @hookimpl
    def rl_setup(self, trainer: Any) -> None:
        """Refuse more minibatches than a batch has transitions (the extra ones would be empty, their losses NaN)."""
        rows = getattr(trainer.collector, "frames_per_batch", None)  # (under torchrun: this rank's share)
        if rows is not None and self.minibatches > rows:
            raise ConfigError(f"algo.minibatches: {self.minibatches} minibatches of a batch of {rows} transitions leave some empty: at most {rows}")

    @hookimpl
    def rl_batch_process(self, trainer: Any, batch: TensorDictBase) -> TensorDictBase:
        """Apply the schedules, compute advantages and value targets, flatten the batch to ``[envs * time]``.

        :raises rlcore.ConfigError: when the batch lacks a key the loss reads (a ``select_keys`` hook that left it out).
        """
        needed: tuple[str | tuple[str, ...], ...] = ("observation", "sample_log_prob", *(("next", k) for k in ("observation", "reward", "terminated", "done")))
        require_keys(batch, needed, "algo", "the policy-gradient loss")
        self.apply_schedule((trainer.collected_frames - trainer.batch_frames) / max(trainer.total_frames, 1))
        with torch.no_grad():  # one critic call values every observation and next observation
            value, next_value = self.policy.batch_values(batch)
            advantage = gae(
                batch["next", "reward"],
                value,
                next_value,
                batch["next", "terminated"],
                batch["next", "done"],
                self.gamma,
                self.gae_lambda,
            )
        batch.set("state_value", value)
        batch.set("advantage", advantage)
        batch.set("value_target", advantage + value)
        self._batch = batch = batch.reshape(-1) if not self.recurrent else self._sequences(batch)
        return batch

    def _sequences(self, batch: TensorDictBase) -> TensorDictBase:
        """The batch ``[envs, time]`` cut into sequences ``[envs * time / seq_len, seq_len]`` of each env's steps.

        :raises rlcore.ConfigError: when ``seq_len`` does not divide the steps of each env, or gives fewer sequences than minibatches.
        """
        envs, steps = batch.shape
        seq_len = self.seq_len or steps
        if steps % seq_len or envs * steps // seq_len < self.minibatches:
            raise ConfigError(
                f"algo.recurrent.seq_len: {seq_len} must divide each env's {steps} steps of a batch and leave at least "
                f"algo.minibatches={self.minibatches} sequences (collector.frames_per_batch / env.num_envs = {steps})"
            )
        return batch.reshape(envs * steps // seq_len, seq_len)

    @hookimpl
    def rl_process_optim_batch(self, trainer: Any, batch: TensorDictBase) -> TensorDictBase:
        """Minibatch ``j % minibatches`` of this epoch's permutation, ``j = trainer.optim_step_in_batch``."""
        if self.minibatches == 1:
            return batch
        step = trainer.optim_step_in_batch % self.minibatches
        if step == 0:  # a new epoch: shuffle the columns the loss reads, cut them into the epoch's minibatches
            rows, device = batch.shape[0], batch.device
            sizes = [rows // self.minibatches + (i < rows % self.minibatches) for i in range(self.minibatches)]
            order = torch.randperm(rows, device=device)
            keys = ["observation", self.policy.action_key, "sample_log_prob", "state_value", "advantage", "value_target"]
            keys += ["is_init", "recurrent_state_h", "recurrent_state_c"] if self.recurrent else []
            columns = {key: batch.get(key)[order].split(sizes) for key in keys}  # (a Dict's observations: a TensorDict)
            self._minibatches = [
                TensorDict({key: parts[i] for key, parts in columns.items()}, batch_size=[size], device=device, non_blocking=False)
                for i, size in enumerate(sizes)
            ]
        return self._minibatches[step]

    def apply_schedule(self, progress: float) -> None:
        """Set each scheduled coefficient to its value at ``progress`` (0 at the start, 1 at ``total_frames``)."""
        progress = min(max(progress, 0.0), 1.0)
        for name, (start, end) in self.schedule.items():
            setattr(self, name, start + (end - start) * progress)

    # ------------------------------------------------------------------ adaptive KL
    @hookimpl
    def rl_post_loss(self, trainer: Any, losses: TensorDictBase) -> None:
        """Stop the batch's remaining steps when the KL runs far past its target (adaptive-KL)."""
        if self.kl_stop_factor is not None and float(losses["kl_approx"]) > self.kl_stop_factor * self.kl_target:
            trainer.stop_optim_steps()

    @hookimpl
    def rl_post_steps(self) -> None:
        """Adaptive-KL: halve ``beta`` when the batch's KL < target / 1.5, double it when > 1.5 x target."""
        if self.objective != "kl" or self._batch is None:
            return
        kl = self.batch_kl(self._batch)
        if kl < self.kl_target / 1.5:
            self.kl_coef.mul_(0.5)
        elif kl > self.kl_target * 1.5:
            self.kl_coef.mul_(2.0)

    @torch.no_grad()
    def batch_kl(self, batch: TensorDictBase) -> float:
        """``KL(pi_old || pi)`` over a processed batch, estimated from its samples."""
        log_prob, _, _ = self.policy.evaluate(batch)
        log_ratio = log_prob - batch["sample_log_prob"]
        return float((log_ratio.exp() - 1 - log_ratio).mean())

    # ------------------------------------------------------------------ logging
    @hookimpl
    def rl_post_steps_log(self, batch: TensorDictBase) -> dict[str, float]:
        """Explained variance of the collected values, the KL coefficient and the scheduled coefficients."""
        values: dict[str, float] = {}
        if "value_target" in batch.keys() and "state_value" in batch.keys():
            values["train/explained_variance"] = explained_variance(batch["state_value"], batch["value_target"])
        if self.objective == "kl":
            values["train/kl_coef"] = Gauge(self.kl_coef)
        for name in self.schedule:
            values[f"train/{name}"] = Gauge(getattr(self, name))
        return {k: v for k, v in values.items() if v == v}  # drop NaN


def explained_variance(prediction: torch.Tensor, target: torch.Tensor) -> float:
    """``1 - Var(target - prediction) / Var(target)``; NaN when the target does not vary."""
    variance = target.var()
    if variance == 0:
        return float("nan")
    return float(1 - (target - prediction).var() / variance)
