"""Hooks that reshape the data: ``SelectKeys`` at ``batch_process``, ``BatchSubSampler`` at ``process_optim_batch``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from tensordict import TensorDictBase

from rlcore import ConfigError, TrainerHookBase, as_key, shown

from ._options import BatchSubSamplerOptions, SelectKeysOptions

if TYPE_CHECKING:
    from rlcore import Trainer

#: TorchRL's mask of valid steps in a batch of padded trajectories (a collector with ``split_trajs=True``)
MASK_KEY = ("collector", "mask")
DONE_KEY = ("next", "done")


class SelectKeys(SelectKeysOptions, TrainerHookBase):
    """Keeps only ``keys`` of each collected batch (TorchRL's ``SelectKeys``), at ``batch_process``.

    ``SelectKeys(["observation", ("next", "reward")]).register(trainer)``; the options are those of
    :class:`~rl_plugin_hooks.SelectKeysOptions` (a key given as one string is refused, as TorchRL does).
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        self.keys = [as_key(key) for key in self.keys]
        self._name = "select_keys"

    def __call__(self, batch: TensorDictBase) -> TensorDictBase:
        """The batch with only :attr:`keys`.

        :param batch: the collected batch.
        :raises rlcore.ConfigError: naming a key the batch does not have, and those it has.
        """
        try:
            return batch.select(*self.keys)
        except KeyError:
            have = sorted(".".join(key) if isinstance(key, tuple) else key for key in batch.keys(include_nested=True, leaves_only=True))
            missing = next(key for key in self.keys if key not in batch.keys(include_nested=True))
            name = ".".join(missing) if isinstance(missing, tuple) else missing
            raise ConfigError(f"hooks.{self._name}.keys: the batch has no key {shown(name)} (valid choices: {', '.join(have)})") from None

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        pass

    def register(self, trainer: Trainer, name: str = "select_keys") -> None:
        """Run at ``batch_process`` of ``trainer``.

        :param trainer: the trainer.
        :param name: the name of its (empty) state in checkpoints.
        """
        self._name = name
        trainer.register_op("batch_process", self)
        trainer.register_module(name, self)


class BatchSubSampler(BatchSubSamplerOptions, TrainerHookBase):
    """Sub-trajectories of the batch for each optimisation step (TorchRL's ``BatchSubSampler``), at ``process_optim_batch``.

    A batch ``[envs, time]`` is first cut into its trajectories where episodes end (``("next", "done")``),
    as TorchRL's collector with ``split_trajs=True`` hands them to the hook (a batch that carries
    TorchRL's ``("collector", "mask")`` is read as those padded trajectories). Then, as TorchRL does:
    ``sub_traj_len`` (the whole time dimension when ``0``) is cut down to the shortest trajectory but
    not below ``min_sub_traj_len``; ``batch_size // sub_traj_len`` trajectories at least that long are
    drawn with replacement, and from each a window of ``sub_traj_len`` consecutive steps starting at
    ``int(u * (length - sub_traj_len))``, ``u`` uniform in ``[0, 1)``. A window never crosses an episode
    boundary. The sub-batch is ``[batch_size // sub_traj_len, sub_traj_len]``; a batch of one dimension
    gives ``batch_size`` random rows instead. Random numbers come from torch's generator (checkpointed
    by the trainer). The options are those of :class:`~rl_plugin_hooks.BatchSubSamplerOptions`.
    """

    def __call__(self, batch: TensorDictBase) -> TensorDictBase:
        """A random sub-batch of ``batch``.

        :param batch: ``[envs, time]`` (or padded trajectories with TorchRL's mask, or one dimension).
        :raises RuntimeError: when ``batch_size`` is below the sub-trajectory length (TorchRL's error).
        :raises ValueError: when no trajectory is ``min_sub_traj_len`` steps long.
        """
        device = batch.device
        if batch.ndim == 1:
            return batch[torch.randperm(batch.shape[0], device=device)[: self.batch_size]]
        rows, starts, lengths = trajectories(batch)
        sub_traj_len = self.sub_traj_len if self.sub_traj_len > 0 else batch.shape[1]
        sub_traj_len = max(self.min_sub_traj_len, min(sub_traj_len, int(lengths.min())))
        valid = (lengths >= sub_traj_len).nonzero().squeeze(-1)
        if sub_traj_len < 1 or not valid.numel():
            raise ValueError(
                f"BatchSubSampler: no trajectory of the batch is {sub_traj_len} steps long "
                f"(min_sub_traj_len={self.min_sub_traj_len}, the longest has {int(lengths.max())})"
            )
        count = self.batch_size // sub_traj_len
        if count == 0:
            raise RuntimeError(
                "Resulting batch size is zero. The batch size given to BatchSubSampler must be equal to the total "
                "number of elements that will result in a batch provided to the loss function."
            )
        chosen = valid[torch.randint(valid.numel(), (count,), device=lengths.device)]
        offset = (torch.rand(count, device=lengths.device) * (lengths[chosen] - sub_traj_len)).int()
        steps = (starts[chosen] + offset).unsqueeze(-1) + torch.arange(sub_traj_len, device=lengths.device)
        return batch[rows[chosen].unsqueeze(-1).expand_as(steps), steps]

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        pass

    def register(self, trainer: Trainer, name: str = "batch_subsampler") -> None:
        """Run at ``process_optim_batch`` of ``trainer``.

        :param trainer: the trainer.
        :param name: the name of its (empty) state in checkpoints.
        """
        trainer.register_op("process_optim_batch", self)
        trainer.register_module(name, self)


def trajectories(batch: TensorDictBase) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The trajectories of a batch ``[envs, time]``: for each, its row, first step and length.

    A trajectory ends where an episode ends (``("next", "done")``) or at the end of the batch. A batch
    with TorchRL's ``("collector", "mask")`` holds one padded trajectory per row, its valid steps first.

    :param batch: the batch.
    :return: ``(rows, starts, lengths)``, three ``int64`` tensors of one entry per trajectory, ordered by row then time.
    """
    envs, steps = batch.shape[:2]
    keys = batch.keys(include_nested=True)
    if MASK_KEY in keys:
        lengths = batch.get(MASK_KEY).reshape(envs, steps).sum(-1)
        rows = torch.arange(envs, device=lengths.device)
        return rows, torch.zeros_like(rows), lengths
    ends = batch.get(DONE_KEY).reshape(envs, steps).clone() if DONE_KEY in keys else torch.zeros(envs, steps, dtype=torch.bool, device=batch.device)
    ends[:, -1] = True
    rows, last = ends.nonzero(as_tuple=True)  # row-major: by row, then time
    previous = torch.cat([last.new_full((1,), -1), last[:-1]])
    same_row = torch.cat([rows.new_zeros((1,), dtype=torch.bool), rows[1:] == rows[:-1]])
    starts = torch.where(same_row, previous + 1, torch.zeros_like(last))
    return rows, starts, last - starts + 1


__all__ = ["BatchSubSampler", "SelectKeys", "trajectories"]
