"""rl-core plugin: TorchRL's trainer hooks, each usable three ways.

By name in the config's ``hooks`` section::

    hooks:
      select_keys: {keys: [observation, action, next.reward, next.done]}
      batch_subsampler: {batch_size: 64, sub_traj_len: 8}
      log_scalar: {logname: r_training, log_pbar: true}
      log_validation_reward: {record_interval: 10, record_frames: 1000, exploration_type: deterministic}

in Python as in TorchRL, ``SelectKeys(["observation", "action"]).register(trainer)``, or as an op,
``trainer.register_op("process_optim_batch", BatchSubSampler(batch_size=64, sub_traj_len=8))``.
Every hook is an :class:`rlcore.TrainerHookBase` whose state is saved in checkpoints.

============================  =========================  ============================================================
class                         config name                what
============================  =========================  ============================================================
:class:`BatchSubSampler`      ``batch_subsampler``       sub-trajectories at ``process_optim_batch``, within episodes
:class:`ClearCudaCache`       ``clear_cuda_cache``       ``torch.cuda.empty_cache()`` every ``interval`` batches
:class:`CountFramesLog`       ``count_frames_log``       logs ``n_frames``
:class:`LogScalar`            ``log_scalar``             logs the mean of a batch key (the reward)
:class:`OptimizerHook`        ``optimizer_hook``         an optimizer stepped from some loss components only
:class:`LogValidationReward`  ``log_validation_reward``  evaluates the policy every ``record_interval`` batches
:class:`RewardNormalizer`     ``reward_normalizer``      running reward normalisation
:class:`SelectKeys`           ``select_keys``            keeps some keys of each batch
:class:`UpdateWeights`        ``update_weights``         pushes the policy's weights to the collector
============================  =========================  ============================================================

``ExplorationType`` and ``set_exploration_type`` are tensordict's ``InteractionType`` and
``set_interaction_type`` under TorchRL's names, so that a TorchRL script ports by its imports.

This module stays light: torch and tensordict are imported only when a hook is created or one of the
names above is used.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import TYPE_CHECKING, Any

from rlcore import HookFactory, hook_factory, hookimpl, lazy_getattr

from ._options import (
    BatchSubSamplerOptions,
    ClearCudaCacheOptions,
    CountFramesLogOptions,
    HookOptions,
    LogScalarOptions,
    LogValidationRewardOptions,
    OptimizerGroupOptions,
    OptimizerGroupsOptions,
    OptimizerHookOptions,
    RewardNormalizerOptions,
    SelectKeysOptions,
    UpdateWeightsOptions,
)

if TYPE_CHECKING:
    from tensordict.nn import InteractionType as ExplorationType
    from tensordict.nn import set_interaction_type as set_exploration_type

    from ._batch import BatchSubSampler, SelectKeys
    from ._logging import CountFramesLog, LogScalar
    from ._optimizer import OptimizerGroups, OptimizerHook
    from ._reward import RewardNormalizer
    from ._runtime import ClearCudaCache, UpdateWeights
    from ._validation import LogValidationReward

__version__ = "0.1.0"

_LAZY = {
    "BatchSubSampler": "._batch",
    "SelectKeys": "._batch",
    "CountFramesLog": "._logging",
    "LogScalar": "._logging",
    "OptimizerGroups": "._optimizer",
    "OptimizerHook": "._optimizer",
    "RewardNormalizer": "._reward",
    "ClearCudaCache": "._runtime",
    "UpdateWeights": "._runtime",
    "LogValidationReward": "._validation",
}
#: TorchRL's names of tensordict's interaction types
_TENSORDICT = {"ExplorationType": "tensordict.nn:InteractionType", "set_exploration_type": "tensordict.nn:set_interaction_type"}

__all__ = [
    "BatchSubSampler",
    "BatchSubSamplerOptions",
    "ClearCudaCache",
    "ClearCudaCacheOptions",
    "CountFramesLog",
    "CountFramesLogOptions",
    "ExplorationType",
    "LogScalar",
    "LogScalarOptions",
    "LogValidationReward",
    "LogValidationRewardOptions",
    "OptimizerGroupOptions",
    "OptimizerGroups",
    "OptimizerGroupsOptions",
    "OptimizerHook",
    "OptimizerHookOptions",
    "RewardNormalizer",
    "RewardNormalizerOptions",
    "SelectKeys",
    "SelectKeysOptions",
    "UpdateWeights",
    "UpdateWeightsOptions",
    "rl_register_hooks",
    "set_exploration_type",
]


__getattr__ = lazy_getattr(__name__, {**_LAZY, **_TENSORDICT})


def __dir__() -> list[str]:
    return __all__


def _factory(options: type[HookOptions], hook_class: str) -> Callable[..., Any]:
    """The ``rl_register_hooks`` factory of a hook (:func:`rlcore.hook_factory`): imports the hook class only when called."""
    return hook_factory(options.config_name, options, lambda: getattr(import_module(_LAZY[hook_class], __name__), hook_class), options.python_only)


#: the config's factories, by name
FACTORIES: dict[str, Callable[..., Any]] = {
    options.config_name: _factory(options, hook_class)
    for options, hook_class in (
        (BatchSubSamplerOptions, "BatchSubSampler"),
        (ClearCudaCacheOptions, "ClearCudaCache"),
        (CountFramesLogOptions, "CountFramesLog"),
        (LogScalarOptions, "LogScalar"),
        (LogValidationRewardOptions, "LogValidationReward"),
        (OptimizerGroupsOptions, "OptimizerGroups"),
        (RewardNormalizerOptions, "RewardNormalizer"),
        (SelectKeysOptions, "SelectKeys"),
        (UpdateWeightsOptions, "UpdateWeights"),
    )
}


@hookimpl
def rl_register_hooks() -> dict[str, HookFactory]:
    """The nine hooks, by their config names."""
    return dict(FACTORIES)
