"""``RewardNormalizer``: TorchRL's running reward normalisation inside the batch."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from tensordict import TensorDictBase

from rlcore import REWARD_KEY, OffPolicyLoss, OnPolicyLoss, TrainerHookBase, as_key

from ._options import RewardNormalizerOptions

if TYPE_CHECKING:
    from rlcore import Trainer

MASK_KEY = ("collector", "mask")


class RewardNormalizer(RewardNormalizerOptions, TrainerHookBase):
    """Normalises rewards with running statistics (TorchRL's ``RewardNormalizer``).

    :meth:`update_reward_stats` (at ``batch_process``) folds each collected batch's rewards ``r`` into
    exponential moving sums, ``decay`` per batch::

        sum   = decay * sum   + r.sum()
        ssq   = decay * ssq   + (r ** 2).sum()
        count = decay * count + r.numel()
        mean  = sum / count
        var   = (ssq - sum ** 2 / count) / (count - 1)      (0 while count <= 1)
        std   = sqrt(max(var, eps))

    and :meth:`normalize_reward` (at ``process_optim_batch``) hands each optimisation step a copy of its
    sub-batch with ``reward = scale * (reward - mean) / std``; the collected batch itself is left as it
    is. A loss that does not read its steps' rewards one by one from the sub-batches gets the normalised
    copy at ``batch_process`` instead, right after the statistics are updated: one that learns from each
    batch as collected (``on_policy = True``: rl-plugin-pg's, whose advantages and value targets are
    computed from the batch's rewards there), and one of n-step transitions (``n_step > 1``: the replay
    buffer stores sums of ``n`` rewards, which one-step statistics do not describe). At
    ``process_optim_batch`` it would be too late, or wrong. The statistics are the hook's state (checkpointed).
    The options are those of :class:`~rl_plugin_hooks.RewardNormalizerOptions`.
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        #: the reward's key, as tensordict takes it (also :attr:`reward_key`, as in TorchRL)
        self.key = REWARD_KEY if self.reward_key is None else as_key(self.reward_key)
        self.reward_key = self.key
        if self.eps is None:
            self.eps = torch.finfo(torch.get_default_dtype()).eps
        self._reward_stats: dict[str, Any] = {"decay": self.decay}
        self._update_has_been_called = False
        self._normalize_has_been_called = False

    @torch.no_grad()
    def update_reward_stats(self, batch: TensorDictBase) -> None:
        """Fold the rewards of ``batch`` into the running statistics.

        :param batch: a collected batch (only its valid steps count when it has TorchRL's ``("collector", "mask")``).
        """
        reward = batch.get(self.key)
        if MASK_KEY in batch.keys(include_nested=True):
            reward = reward[batch.get(MASK_KEY)]
        stats = self._reward_stats
        decay = stats.get("decay", 0.999)
        total = stats["sum"] = decay * stats.get("sum", 0.0) + reward.sum()
        ssq = stats["ssq"] = decay * stats.get("ssq", 0.0) + reward.pow(2).sum()
        count = stats["count"] = decay * stats.get("count", 0.0) + reward.numel()
        stats["mean"] = total / count
        if count > 1:
            var = stats["var"] = (ssq - total.pow(2) / count) / (count - 1)
        else:
            var = stats["var"] = torch.zeros_like(total)
        stats["std"] = var.clamp_min(self.eps).sqrt()
        self._update_has_been_called = True

    def normalize_reward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """A copy of ``tensordict`` with its reward normalised.

        :param tensordict: a sub-batch of one optimisation step.
        :raises RuntimeError: before any statistics were gathered (:meth:`update_reward_stats` never ran).
        """
        if "mean" not in self._reward_stats:
            raise RuntimeError("RewardNormalizer: no reward statistics yet; register update_reward_stats at batch_process first")
        tensordict = tensordict.copy()  # the caller's batch keeps its rewards
        reward = tensordict.get(self.key)
        mean, std = self._reward_stats["mean"].to(reward.device), self._reward_stats["std"].to(reward.device)
        tensordict.set(self.key, (reward - mean) / std * self.scale)
        self._normalize_has_been_called = True
        return tensordict

    def update_and_normalize(self, batch: TensorDictBase) -> TensorDictBase:
        """:meth:`update_reward_stats`, then :meth:`normalize_reward` of the same batch (see the class).

        :param batch: a collected batch.
        """
        self.update_reward_stats(batch)
        return self.normalize_reward(batch)

    @property
    def stats(self) -> dict[str, Any]:
        """The running statistics: ``decay``, ``sum``, ``ssq``, ``count``, ``mean``, ``var``, ``std``."""
        return self._reward_stats

    def state_dict(self) -> dict[str, Any]:
        return {
            "_reward_stats": {key: value.clone() if isinstance(value, torch.Tensor) else value for key, value in self._reward_stats.items()},
            "scale": self.scale,
            "_normalize_has_been_called": self._normalize_has_been_called,
            "_update_has_been_called": self._update_has_been_called,
        }

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._reward_stats = dict(state_dict["_reward_stats"])
        self.scale = float(state_dict["scale"])
        self._normalize_has_been_called = bool(state_dict["_normalize_has_been_called"])
        self._update_has_been_called = bool(state_dict["_update_has_been_called"])

    def register(self, trainer: Trainer, name: str = "reward_normalizer") -> None:
        """Update the statistics at ``batch_process`` and normalise at ``process_optim_batch`` of ``trainer``
        (both at ``batch_process`` for an on-policy loss or n-step transitions, see the class).

        :param trainer: the trainer.
        :param name: the name of its state in checkpoints.
        """
        loss = trainer.loss_module
        if isinstance(loss, OnPolicyLoss) or (isinstance(loss, OffPolicyLoss) and loss.n_step > 1):
            trainer.register_op("batch_process", self.update_and_normalize)
        else:
            trainer.register_op("batch_process", self.update_reward_stats)
            trainer.register_op("process_optim_batch", self.normalize_reward)
        trainer.register_module(name, self)


__all__ = ["RewardNormalizer"]
