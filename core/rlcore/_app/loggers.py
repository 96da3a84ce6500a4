"""TorchRL's helpers of the seed API for loggers: a logger made by its registered name, a run's unique name."""

from __future__ import annotations

import os
import uuid
from datetime import datetime
from typing import Any

from .._kernel.logger import Logger
from .._kernel.manager import PluginManager, get_plugin_manager
from .._kernel.options import validate_options


def generate_exp_name(prefix: str = "run", suffix: str = "") -> str:
    """Return a unique run name that sorts by creation time: ``prefix_YYmmdd-HHMMSS_xxxxxx[_suffix]``.

    :param prefix: leading part, e.g. the algorithm and env.
    :param suffix: trailing part.
    """
    stamp = datetime.now().strftime("%y%m%d-%H%M%S")
    name = f"{prefix}_{stamp}_{uuid.uuid4().hex[:6]}"
    return f"{name}_{suffix}" if suffix else name


def get_logger(
    name: str,
    *,
    exp_name: str,
    log_dir: str | os.PathLike[str],
    plugin_manager: PluginManager | None = None,
    **options: Any,
) -> Logger:
    """Create a logger by its registered name.

    :param name: a name from ``rl_register_loggers`` (``csv``, ``tensorboard``, ...).
    :param exp_name: the run's name.
    :param log_dir: the run directory.
    :param plugin_manager: where to look the name up; the default loads installed plugins.
    :param options: the logger's own options, checked as a config's are.
    :raises rlcore.ConfigError: when no plugin registers ``name``, or for a bad option.
    """
    pm = plugin_manager or get_plugin_manager()
    factory = pm.factory("loggers", name)
    options = validate_options(f"loggers.{name}", factory, options, skip=("exp_name", "log_dir"))
    return factory(exp_name=exp_name, log_dir=log_dir, **options)
