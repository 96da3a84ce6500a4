"""rl-core plugin: the ``tensorboard`` logger.

This module stays light: torch and TensorBoard are imported only when a logger is created.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated

from rlcore import LoggerFactory, Range, hookimpl

if TYPE_CHECKING:
    from ._logger import TensorBoardLogger

__all__ = ["make_logger"]


def make_logger(
    exp_name: str,
    log_dir: str | os.PathLike[str],
    flush_secs: Annotated[float, Range(gt=0)] = 10.0,
    max_queue: Annotated[int, Range(ge=1)] = 100,
) -> TensorBoardLogger:
    """Create a :class:`~rl_plugin_tensorboard._logger.TensorBoardLogger` writing to ``<log_dir>/tensorboard/``.

    :param exp_name: the run's name.
    :param log_dir: the run directory.
    :param flush_secs: how often the background writer flushes to disk, in seconds.
    :param max_queue: events queued before a flush is forced.
    """
    from ._logger import TensorBoardLogger

    return TensorBoardLogger(exp_name, log_dir, flush_secs=flush_secs, max_queue=max_queue)


@hookimpl
def rl_register_loggers() -> dict[str, LoggerFactory]:
    return {"tensorboard": make_logger}
