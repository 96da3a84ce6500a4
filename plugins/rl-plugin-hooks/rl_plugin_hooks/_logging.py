"""Logging hooks at ``pre_steps_log``: ``LogScalar`` (the mean of a batch key) and ``CountFramesLog``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tensordict import TensorDictBase

from rlcore import REWARD_KEY, TrainerHookBase, as_key

from ._options import CountFramesLogOptions, LogScalarOptions

if TYPE_CHECKING:
    from rlcore import Trainer

MASK_KEY = ("collector", "mask")


class LogScalar(LogScalarOptions, TrainerHookBase):
    """Logs the mean of ``reward_key`` over the batch as ``logname`` (TorchRL's reward logger), at ``pre_steps_log``.

    Only the valid steps count when the batch carries TorchRL's ``("collector", "mask")``. The options
    are those of :class:`~rl_plugin_hooks.LogScalarOptions`; the value is averaged over ``log_interval``
    like every logged scalar.
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        #: the logged key, as tensordict takes it (also :attr:`reward_key`, as in TorchRL)
        self.key = REWARD_KEY if self.reward_key is None else as_key(self.reward_key)
        self.reward_key = self.key

    def __call__(self, batch: TensorDictBase) -> dict[str, Any]:
        """``{logname: mean, "log_pbar": log_pbar}``.

        :param batch: the processed batch.
        """
        value = batch.get(self.key)
        if MASK_KEY in batch.keys(include_nested=True):
            value = value[batch.get(MASK_KEY)]
        return {self.logname: value.float().mean().item(), "log_pbar": self.log_pbar}

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        pass

    def register(self, trainer: Trainer, name: str = "log_reward") -> None:
        """Run at ``pre_steps_log`` of ``trainer``.

        :param trainer: the trainer.
        :param name: the name of its (empty) state in checkpoints (TorchRL's default).
        """
        trainer.register_op("pre_steps_log", self)
        trainer.register_module(name, self)


class CountFramesLog(CountFramesLogOptions, TrainerHookBase):
    """Counts the frames collected, ``frame_skip`` per step, and logs the count as ``n_frames`` (TorchRL's), at ``pre_steps_log``.

    Only the valid steps count when the batch carries TorchRL's ``("collector", "mask")``. The count is
    its state, so a resumed run goes on counting. The options are those of
    :class:`~rl_plugin_hooks.CountFramesLogOptions`.
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        #: frames counted so far
        self.frame_count = 0

    def __call__(self, batch: TensorDictBase) -> dict[str, Any]:
        """Count the batch's frames; ``{"n_frames": count, "log_pbar": log_pbar}``.

        :param batch: the processed batch.
        """
        if MASK_KEY in batch.keys(include_nested=True):
            frames = int(batch.get(MASK_KEY).sum().item()) * self.frame_skip
        else:
            frames = batch.numel() * self.frame_skip
        self.frame_count += frames
        return {"n_frames": self.frame_count, "log_pbar": self.log_pbar}

    def state_dict(self) -> dict[str, Any]:
        return {"frame_count": self.frame_count}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.frame_count = int(state_dict["frame_count"])

    def register(self, trainer: Trainer, name: str = "count_frames_log") -> None:
        """Run at ``pre_steps_log`` of ``trainer``.

        :param trainer: the trainer.
        :param name: the name of its state in checkpoints.
        """
        trainer.register_op("pre_steps_log", self)
        trainer.register_module(name, self)


__all__ = ["CountFramesLog", "LogScalar"]
