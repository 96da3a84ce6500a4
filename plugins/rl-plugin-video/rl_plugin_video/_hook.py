"""What the three hooks share: registration with a trainer and where their files go."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from rlcore import ConfigError, TrainerHookBase

if TYPE_CHECKING:
    from rlcore import Trainer


class PluginHook(TrainerHookBase):
    """A TorchRL-style hook that takes part in the loop through its ``@rlcore.hookimpl`` methods.

    :meth:`register` saves its state in every checkpoint (``trainer.register_module``) and
    registers it as a plugin of that trainer only, so it can also implement lifecycle hooks
    such as ``rl_setup`` and ``rl_shutdown``. Of data-parallel learners (``torchrun``), only rank 0's
    hook runs, since rank 0 alone writes the run directory, unless the hook runs on ``every_rank``.
    """

    #: run on every rank of data-parallel learners (to gather their data), not on rank 0 alone
    every_rank: ClassVar[bool] = False

    def register(self, trainer: Trainer, name: str) -> None:
        """Attach to ``trainer`` under ``name``.

        :param trainer: an :class:`rlcore.Trainer`.
        :param name: the hook's name in the config (``evaluation``, ...).
        """
        trainer.register_module(name, self)
        if not trainer.world.is_main and not self.every_rank:
            return
        if not trainer.plugin_manager.is_registered(self):
            trainer.register_plugin(self, f"hooks.{name}")


def output_directory(trainer: Trainer, directory: str | None, default: str, key: str) -> Path:
    """Where a hook writes: ``RUN_DIR/<directory>``, or ``directory`` itself (in the working directory) for a
    trainer without a run directory; ``RUN_DIR/<default>`` when it is ``None``.

    :param trainer: the trainer.
    :param directory: the hook's ``directory`` option (a :data:`rlcore.RunPath`, checked with the options).
    :param default: the folder inside the run directory.
    :param key: the option's config key, for the error.
    :raises rlcore.ConfigError: without a run directory nor a ``directory``.
    """
    run_dir = getattr(trainer, "run_dir", None)
    if directory is not None:
        return Path(directory) if run_dir is None else Path(run_dir) / directory
    if run_dir is None:
        raise ConfigError(f"{key}: the trainer has no run directory; set this option to a folder")
    return Path(run_dir) / default


__all__ = ["PluginHook", "output_directory"]
