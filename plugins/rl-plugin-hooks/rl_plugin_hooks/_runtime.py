"""Hooks on the run's machinery: ``ClearCudaCache`` and ``UpdateWeights`` (the policy's weights to the collector)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from rlcore import ConfigError, TrainerHookBase

from ._options import ClearCudaCacheOptions, UpdateWeightsOptions

if TYPE_CHECKING:
    from rlcore import Trainer


class ClearCudaCache(ClearCudaCacheOptions, TrainerHookBase):
    """Releases the CUDA caching allocator's unused memory, ``torch.cuda.empty_cache()``, once every
    ``interval`` calls (TorchRL's ``ClearCudaCache``). :meth:`register` calls it at ``pre_optim_steps``
    (once per batch), as TorchRL's ``make_trainer`` does; without CUDA it does nothing.

    The number of calls is its state, so a resumed run keeps the rhythm. The options are those of
    :class:`~rl_plugin_hooks.ClearCudaCacheOptions`.
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        #: calls so far
        self.count = 0
        #: how many times the cache was cleared
        self.clears = 0

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        """Count one call; clear the cache on every ``interval``-th (the arguments of any hook point are ignored)."""
        self.count += 1
        if self.count % self.interval == 0:
            torch.cuda.empty_cache()  # a no-op while CUDA is not initialised
            self.clears += 1

    def state_dict(self) -> dict[str, Any]:
        return {"count": self.count, "clears": self.clears}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.count, self.clears = int(state_dict["count"]), int(state_dict["clears"])

    def register(self, trainer: Trainer, name: str = "clear_cuda_cache") -> None:
        """Run at ``pre_optim_steps`` of ``trainer``.

        :param trainer: the trainer.
        :param name: the name of its state in checkpoints.
        """
        trainer.register_op("pre_optim_steps", self)
        trainer.register_module(name, self)


class UpdateWeights(UpdateWeightsOptions, TrainerHookBase):
    """Pushes the trained policy's weights to the collector every ``update_weights_interval`` batches
    (TorchRL's ``UpdateWeights``), at ``post_steps``.

    It calls the collector's :meth:`rlcore.CollectorProtocol.update_policy_weights_`: a no-op for
    :class:`rlcore.Collector`, whose envs act with the trainer's own policy object, and the way a
    collector whose envs act elsewhere (other processes, other machines) receives new weights.
    ``register(trainer)`` takes ``trainer.collector`` when no collector was given. The number of
    batches seen is its state. The options are those of :class:`~rl_plugin_hooks.UpdateWeightsOptions`.
    """

    def __post_init__(self) -> None:
        super().__post_init__()
        #: batches seen so far
        self.counter = 0

    def __call__(self) -> None:
        """Count one batch; push the weights on every ``update_weights_interval``-th."""
        if self.collector is None:
            raise ConfigError(f"{self.config_key}.collector: no collector to update; give one, or register the hook with register(trainer)")
        self.counter += 1
        if self.counter % self.update_weights_interval == 0:
            self.collector.update_policy_weights_()

    def state_dict(self) -> dict[str, Any]:
        return {"counter": self.counter}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.counter = int(state_dict["counter"])

    def register(self, trainer: Trainer, name: str = "update_weights") -> None:
        """Run at ``post_steps`` of ``trainer``, updating ``trainer.collector`` unless a collector was given.

        :param trainer: the trainer.
        :param name: the name of its state in checkpoints.
        """
        if self.collector is None:
            self.collector = trainer.collector
        trainer.register_module(name, self)
        trainer.register_op("post_steps", self)


__all__ = ["ClearCudaCache", "UpdateWeights"]
