"""rl-core plugin: the ``mlflow`` logger.

This module stays light: MLflow is imported only when a logger is created.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from rlcore import hookimpl

if TYPE_CHECKING:
    from ._logger import MLflowLogger

__all__ = ["make_logger"]


def make_logger(exp_name: str, log_dir: str | os.PathLike[str], **options: Any) -> MLflowLogger:
    """Create a :class:`~rl_plugin_mlflow._logger.MLflowLogger`, which starts one MLflow run.

    :param exp_name: the run's name (the MLflow run's name unless ``run_name`` is given).
    :param log_dir: the run directory (the local store lives there unless ``MLFLOW_TRACKING_URI`` is set).
    :param options: ``experiment``, ``run_name``, ``tags``, ``tracking_uri``, ``flush_secs`` (see the logger).
    """
    from ._logger import MLflowLogger

    return MLflowLogger(exp_name, log_dir, **options)


@hookimpl
def rl_register_loggers() -> dict[str, Any]:
    return {"mlflow": make_logger}
