"""rl-core: a reinforcement-learning training loop for PyTorch, built as a pluggy microkernel.

The public API is what this module exports plus :mod:`rlcore.hookspecs`. Importing it stays
light: torch is imported only when something that needs it is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._errors import ConfigError, PluginError, RLCoreError
from ._lazy import lazy_getattr
from ._markers import hookimpl, hookspec

__version__ = "0.1.0"

_LAZY = {
    "Algorithm": "._registry",
    "CheckpointBackend": "._checkpoint",
    "CheckpointError": "._checkpoint",
    "Collector": "._collector",
    "CollectorProtocol": "._collector",
    "EnvWrapperProtocol": "._envs",
    "SaveableVectorEnv": "._envs",
    "Gauge": "._logger",
    "Logger": "._logger",
    "PluginInfo": "._plugins",
    "PluginManager": "._plugins",
    "Trainer": "._trainer",
    "TrainerHookBase": "._trainer",
    "build_trainer": "._run",
    "evaluate": "._evaluate",
    "make_vector_env": "._envs",
    "env_layers": "._envs",
    "env_states": "._envs",
    "load_env_states": "._envs",
    "clip_grad_norm": "._trainer",
    "make_optimizer": "._run",
    "get_stats_random_rollout": "._envs",
    "read_metrics": ".builtins.csv_logger",
    "check_device": "._config",
    "correct_for_frame_skip": "._config",
    "generate_exp_name": "._logger",
    "get_logger": "._logger",
    "get_plugin_manager": "._plugins",
    "load_config": "._config",
    "save_config": "._config",
    "dump_config": "._config",
    "first_line": "._errors",
    "error_line": "._errors",
    "default_config": "._config",
    "Range": "._options",
    "RunPath": "._options",
    "validate_options": "._options",
    "REWARD_KEY": "._keys",
    "as_key": "._keys",
    "key_name": "._keys",
    "require_keys": "._keys",
    "validate_fields": "._options",
    "hook_factory": "._options",
    "check_value": "._options",
    "import_object": "._options",
}

__all__ = [
    "REWARD_KEY",
    "Algorithm",
    "CheckpointBackend",
    "CheckpointError",
    "Collector",
    "CollectorProtocol",
    "ConfigError",
    "EnvWrapperProtocol",
    "Gauge",
    "Logger",
    "PluginError",
    "PluginInfo",
    "PluginManager",
    "RLCoreError",
    "Range",
    "RunPath",
    "SaveableVectorEnv",
    "Trainer",
    "TrainerHookBase",
    "__version__",
    "as_key",
    "build_trainer",
    "check_device",
    "check_value",
    "clip_grad_norm",
    "correct_for_frame_skip",
    "default_config",
    "dump_config",
    "env_layers",
    "env_states",
    "error_line",
    "evaluate",
    "first_line",
    "generate_exp_name",
    "get_logger",
    "get_plugin_manager",
    "get_stats_random_rollout",
    "hook_factory",
    "hookimpl",
    "hookspec",
    "import_object",
    "key_name",
    "lazy_getattr",
    "load_config",
    "load_env_states",
    "make_optimizer",
    "make_vector_env",
    "read_metrics",
    "require_keys",
    "save_config",
    "validate_fields",
    "validate_options",
]

if TYPE_CHECKING:
    from ._checkpoint import CheckpointBackend, CheckpointError
    from ._collector import Collector, CollectorProtocol
    from ._config import check_device, correct_for_frame_skip, default_config, dump_config, load_config, save_config
    from ._envs import EnvWrapperProtocol, SaveableVectorEnv, env_layers, env_states, get_stats_random_rollout, load_env_states, make_vector_env
    from ._errors import error_line, first_line
    from ._evaluate import evaluate
    from ._keys import REWARD_KEY, as_key, key_name, require_keys
    from ._logger import Gauge, Logger, generate_exp_name, get_logger
    from ._options import Range, RunPath, check_value, hook_factory, import_object, validate_fields, validate_options
    from ._plugins import PluginInfo, PluginManager, get_plugin_manager
    from ._registry import Algorithm
    from ._run import build_trainer, make_optimizer
    from ._trainer import Trainer, TrainerHookBase, clip_grad_norm
    from .builtins.csv_logger import read_metrics


__getattr__ = lazy_getattr(__name__, _LAZY)


def __dir__() -> list[str]:
    return __all__
