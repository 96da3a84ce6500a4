"""TorchRL's helpers of the seed API for loggers: a logger made by its registered name, a run's unique name."""

from __future__ import annotations

import os
import uuid
from datetime import datetime
from typing import Any

from .._kernel.logger import Logger
from .._kernel.manager import PluginManager, get_plugin_manager
from .._kernel.options import validate_options


def generate_exp_name(model_name: str = "run", experiment_name: str = "") -> str:
    """Return a unique run name that sorts by creation time: ``model_name_YYmmdd-HHMMSS_xxxxxx[_experiment_name]``
    (TorchRL's parameters; the time comes first so that a folder of runs lists them in order).

    :param model_name: leading part, e.g. the algorithm and env.
    :param experiment_name: trailing part.
    """
    stamp = datetime.now().strftime("%y%m%d-%H%M%S")
    name = f"{model_name}_{stamp}_{uuid.uuid4().hex[:6]}"
    return f"{name}_{experiment_name}" if experiment_name else name


def get_logger(
    logger_type: str,
    logger_name: str | os.PathLike[str] | None = None,
    experiment_name: str | None = None,
    *,
    exp_name: str | None = None,
    log_dir: str | os.PathLike[str] | None = None,
    plugin_manager: PluginManager | None = None,
    **options: Any,
) -> Logger:
    """Create a logger by its registered name; TorchRL's call, ``get_logger(logger_type, logger_name, experiment_name,
    wandb_kwargs={...})``, works as written.

    :param logger_type: a name from ``rl_register_loggers`` (``csv``, ``tensorboard``, ...).
    :param logger_name: TorchRL's name of the directory to log to (``log_dir``).
    :param experiment_name: TorchRL's name of the run (``exp_name``).
    :param exp_name: the run's name.
    :param log_dir: the run directory.
    :param plugin_manager: where to look the name up; the default loads installed plugins.
    :param options: the logger's own options, checked as a config's are; TorchRL's ``<logger_type>_kwargs``
        (``wandb_kwargs``, ``mlflow_kwargs``) holds more of them.
    :raises rlcore.ConfigError: when no plugin registers ``logger_type``, or for a bad option.
    :raises TypeError: without a run name or a directory.
    """
    exp_name, log_dir = exp_name or experiment_name, log_dir or logger_name
    if exp_name is None or log_dir is None:
        raise TypeError("get_logger() needs the run's name and directory: exp_name= and log_dir= (TorchRL's experiment_name and logger_name)")
    options.update(options.pop(f"{logger_type}_kwargs", None) or {})
    pm = plugin_manager or get_plugin_manager()
    factory = pm.factory("loggers", logger_type)
    options = validate_options(f"loggers.{logger_type}", factory, options, skip=("exp_name", "log_dir"))
    return factory(exp_name=exp_name, log_dir=log_dir, **options)
