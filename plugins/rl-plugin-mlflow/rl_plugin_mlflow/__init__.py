"""rl-core plugin: the ``mlflow`` logger.

This module stays light: MLflow is imported only when a logger is created.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from rlcore import LoggerFactory, hookimpl

if TYPE_CHECKING:
    from ._logger import MLflowLogger

__all__ = ["make_logger"]


def make_logger(
    exp_name: str,
    log_dir: str | os.PathLike[str],
    experiment: str = "rlcore",
    run_name: str | None = None,
    tags: dict[str, Any] | list[str] | None = None,
    tracking_uri: str | None = None,
    flush_secs: float = 5.0,
) -> MLflowLogger:
    """Create a :class:`~rl_plugin_mlflow._logger.MLflowLogger`, which starts one MLflow run.

    :param exp_name: the run's name (the MLflow run's name unless ``run_name`` is given).
    :param log_dir: the run directory (the local store lives there unless ``MLFLOW_TRACKING_URI`` is set).
    :param experiment: the MLflow experiment's name (reused when it exists).
    :param run_name: the MLflow run's name; default ``exp_name``.
    :param tags: run tags, ``{key: value}`` or a list of names.
    :param tracking_uri: where to log, overriding ``MLFLOW_TRACKING_URI``.
    :param flush_secs: the longest time a metric waits in the buffer (``0`` sends every call).
    """
    from ._logger import MLflowLogger

    return MLflowLogger(exp_name, log_dir, experiment=experiment, run_name=run_name, tags=tags, tracking_uri=tracking_uri, flush_secs=flush_secs)


@hookimpl
def rl_register_loggers() -> dict[str, LoggerFactory]:
    return {"mlflow": make_logger}
