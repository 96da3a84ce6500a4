"""rl-core plugin: the ``wandb`` logger.

This module stays light: wandb is imported only when a logger is created.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from rlcore import hookimpl

if TYPE_CHECKING:
    from ._logger import WandbLogger

__all__ = ["make_logger"]


def make_logger(exp_name: str, log_dir: str | os.PathLike[str], **options: Any) -> WandbLogger:
    """Create a :class:`~rl_plugin_wandb._logger.WandbLogger`, which starts one W&B run.

    :param exp_name: the run's name (the W&B run's display name).
    :param log_dir: the run directory; W&B writes its files under ``<log_dir>/wandb/``.
    :param options: ``project``, ``entity``, ``tags``, ``group``, ``mode``, ``notes`` (see the logger).
    """
    from ._logger import WandbLogger

    return WandbLogger(exp_name, log_dir, **options)


@hookimpl
def rl_register_loggers() -> dict[str, Any]:
    return {"wandb": make_logger}
