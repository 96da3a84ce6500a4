"""rl-core plugin: the ``wandb`` logger.

This module stays light: wandb is imported only when a logger is created.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Literal

from rlcore import LoggerFactory, hookimpl

if TYPE_CHECKING:
    from ._logger import WandbLogger

__all__ = ["make_logger"]


def make_logger(
    exp_name: str,
    log_dir: str | os.PathLike[str],
    project: str | None = None,
    entity: str | None = None,
    tags: list[str] | str | None = None,
    group: str | None = None,
    mode: Literal["online", "offline", "shared", "disabled"] | None = None,
    notes: str | None = None,
) -> WandbLogger:
    """Create a :class:`~rl_plugin_wandb._logger.WandbLogger`, which starts one W&B run.

    :param exp_name: the run's name (the W&B run's display name).
    :param log_dir: the run directory; W&B writes its files under ``<log_dir>/wandb/``.
    :param project: the W&B project; default ``WANDB_PROJECT``, else ``"rlcore"``.
    :param entity: the W&B user or team.
    :param tags: run tags.
    :param group: the run group, e.g. to gather the seeds of one experiment.
    :param mode: ``"online"``, ``"offline"``, ``"shared"`` or ``"disabled"``; default ``WANDB_MODE``, else online.
    :param notes: a description of the run.
    """
    from ._logger import WandbLogger

    return WandbLogger(exp_name, log_dir, project=project, entity=entity, tags=tags, group=group, mode=mode, notes=notes)


@hookimpl
def rl_register_loggers() -> dict[str, LoggerFactory]:
    return {"wandb": make_logger}
