"""rl-core: a reinforcement-learning training loop for PyTorch, built as a pluggy microkernel.

The public API is what this module exports plus :mod:`rlcore.hookspecs`. Importing it stays
light: torch is imported only when something that needs it is used.

Inside, two layers (``pyproject.toml``'s import-linter contracts keep them apart): ``_kernel`` (hook
specs' companions: the plugin manager, the trainer loop, the option validator, the typed contracts and
errors), and ``_app`` above it (config, run builder, run directory, CLI, evaluation, env making); the
``builtins`` are plugins of rl-core's own, on the public API like any other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._kernel.errors import ConfigError, PluginError, RLCoreError
from ._kernel.lazy import lazy_getattr
from ._markers import hookimpl, hookspec

__version__ = "0.1.0"

_LAZY = {
    "EnvState": "._app.build",
    "add_hook": "._app.build",
    "attach_hook": "._app.build",
    "build_trainer": "._app.build",
    "load_checkpoint": "._app.build",
    "make_optimizer": "._app.optim",
    "Collector": "._app.collector",
    "check_device": "._app.devices",
    "correct_for_frame_skip": "._app.config",
    "default_config": "._app.config",
    "dump_config": "._app.config",
    "load_config": "._app.config",
    "read_config_file": "._app.config",
    "save_config": "._app.config",
    "train_config": "._app.config",
    "base_env": "._app.envs",
    "env_layers": "._app.envs",
    "env_states": "._app.envs",
    "get_stats_random_rollout": "._app.envs",
    "load_env_states": "._app.envs",
    "make_vector_env": "._app.envs",
    "evaluate": "._app.evaluate",
    "Policy": "._app.policy",
    "load_policy": "._app.policy",
    "build_cli": "._app.cli",
    "describe_plugins": "._app.cli",
    "rlctl": "._app.cli:main",
    "CheckpointBackend": "._kernel.checkpoint",
    "CheckpointError": "._kernel.checkpoint",
    "content_checksum": "._kernel.checkpoint",
    "AlgorithmBuilder": "._kernel.contracts",
    "CheckpointBackendFactory": "._kernel.contracts",
    "CollectorFactory": "._kernel.contracts",
    "CollectorProtocol": "._kernel.contracts",
    "EnvFactory": "._kernel.contracts",
    "EnvWrapperFactory": "._kernel.contracts",
    "EnvWrapperProtocol": "._kernel.contracts",
    "HookFactory": "._kernel.contracts",
    "LoggerFactory": "._kernel.contracts",
    "LossModule": "._kernel.contracts",
    "OffPolicyLoss": "._kernel.contracts",
    "OnPolicyLoss": "._kernel.contracts",
    "SaveableVectorEnv": "._kernel.contracts",
    "TargetNetworks": "._kernel.contracts",
    "VectorizationFactory": "._kernel.contracts",
    "World": "._kernel.contracts",
    "error_line": "._kernel.errors",
    "first_line": "._kernel.errors",
    "shown": "._kernel.errors",
    "REWARD_KEY": "._kernel.keys",
    "as_key": "._kernel.keys",
    "key_name": "._kernel.keys",
    "require_keys": "._kernel.keys",
    "Gauge": "._kernel.logger",
    "Logger": "._kernel.logger",
    "generate_exp_name": "._app.loggers",
    "get_logger": "._app.loggers",
    "ENTRY_POINT_GROUP": "._kernel.manager",
    "PluginInfo": "._kernel.manager",
    "PluginManager": "._kernel.manager",
    "get_plugin_manager": "._kernel.manager",
    "Range": "._kernel.options",
    "ImportPath": "._kernel.options",
    "RunPath": "._kernel.options",
    "run_path": "._kernel.options",
    "check_value": "._kernel.options",
    "hook_factory": "._kernel.options",
    "import_object": "._kernel.options",
    "validate_fields": "._kernel.options",
    "validate_options": "._kernel.options",
    "Algorithm": "._kernel.registry",
    "Trainer": "._kernel.trainer",
    "TrainerHookBase": "._kernel.trainer",
    "clip_grad_norm": "._kernel.trainer",
    "OneProcess": "._kernel.world",
    "read_metrics": ".builtins.csv_logger",
}

__all__ = [
    "ENTRY_POINT_GROUP",
    "REWARD_KEY",
    "Algorithm",
    "AlgorithmBuilder",
    "CheckpointBackend",
    "CheckpointBackendFactory",
    "CheckpointError",
    "Collector",
    "CollectorFactory",
    "CollectorProtocol",
    "ConfigError",
    "EnvFactory",
    "EnvState",
    "EnvWrapperFactory",
    "EnvWrapperProtocol",
    "Gauge",
    "HookFactory",
    "ImportPath",
    "Logger",
    "LoggerFactory",
    "LossModule",
    "OffPolicyLoss",
    "OnPolicyLoss",
    "OneProcess",
    "PluginError",
    "PluginInfo",
    "PluginManager",
    "Policy",
    "RLCoreError",
    "Range",
    "RunPath",
    "SaveableVectorEnv",
    "TargetNetworks",
    "Trainer",
    "TrainerHookBase",
    "VectorizationFactory",
    "World",
    "__version__",
    "add_hook",
    "as_key",
    "attach_hook",
    "base_env",
    "build_cli",
    "build_trainer",
    "check_device",
    "check_value",
    "clip_grad_norm",
    "content_checksum",
    "correct_for_frame_skip",
    "default_config",
    "describe_plugins",
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
    "load_checkpoint",
    "load_config",
    "load_env_states",
    "load_policy",
    "make_optimizer",
    "make_vector_env",
    "read_config_file",
    "read_metrics",
    "require_keys",
    "rlctl",
    "run_path",
    "save_config",
    "shown",
    "train_config",
    "validate_fields",
    "validate_options",
]

if TYPE_CHECKING:
    from ._app.build import EnvState, add_hook, attach_hook, build_trainer, load_checkpoint
    from ._app.cli import build_cli, describe_plugins
    from ._app.cli import main as rlctl
    from ._app.collector import Collector
    from ._app.config import correct_for_frame_skip, default_config, dump_config, load_config, read_config_file, save_config, train_config
    from ._app.devices import check_device
    from ._app.envs import base_env, env_layers, env_states, get_stats_random_rollout, load_env_states, make_vector_env
    from ._app.evaluate import evaluate
    from ._app.loggers import generate_exp_name, get_logger
    from ._app.optim import make_optimizer
    from ._app.policy import Policy, load_policy
    from ._kernel.checkpoint import CheckpointBackend, CheckpointError, content_checksum
    from ._kernel.contracts import (
        AlgorithmBuilder,
        CheckpointBackendFactory,
        CollectorFactory,
        CollectorProtocol,
        EnvFactory,
        EnvWrapperFactory,
        EnvWrapperProtocol,
        HookFactory,
        LoggerFactory,
        LossModule,
        OffPolicyLoss,
        OnPolicyLoss,
        SaveableVectorEnv,
        TargetNetworks,
        VectorizationFactory,
        World,
    )
    from ._kernel.errors import error_line, first_line
    from ._kernel.keys import REWARD_KEY, as_key, key_name, require_keys
    from ._kernel.logger import Gauge, Logger
    from ._kernel.manager import ENTRY_POINT_GROUP, PluginInfo, PluginManager, get_plugin_manager
    from ._kernel.options import ImportPath, Range, RunPath, check_value, hook_factory, import_object, run_path, validate_fields, validate_options
    from ._kernel.registry import Algorithm
    from ._kernel.trainer import Trainer, TrainerHookBase, clip_grad_norm
    from ._kernel.world import OneProcess
    from .builtins.csv_logger import read_metrics


__getattr__ = lazy_getattr(__name__, _LAZY)


def __dir__() -> list[str]:
    return __all__
