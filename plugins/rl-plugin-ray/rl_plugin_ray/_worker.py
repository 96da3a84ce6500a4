"""The Ray actor of the ``ray`` collector: an :class:`rlcore.Collector` on its own vector env, in its own process."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

import rlcore


def to_array(tensor: Any) -> Any:
    """A CPU tensor as a numpy array, which Ray moves without pickling it (a dtype numpy lacks stays a tensor).

    Anything else (a module's extra state in a ``state_dict``) is sent as it is.
    """
    if not isinstance(tensor, torch.Tensor):
        return tensor
    try:
        return tensor.detach().cpu().numpy()
    except TypeError:  # bfloat16 and the like
        return tensor.detach().cpu()


def to_tensor(value: Any) -> Any:
    """The tensor :func:`to_array` sent (copied: Ray's arrays are read-only), or what it sent as it was."""
    return torch.from_numpy(np.array(value)) if isinstance(value, np.ndarray) else value


def to_arrays(batch: TensorDictBase) -> tuple[list[int], list[tuple[Any, Any]]]:
    """A batch as its shape and ``(key, array)`` pairs (:func:`to_array`)."""
    leaves = batch.items(include_nested=True, leaves_only=True)
    return list(batch.batch_size), [(key, to_array(value)) for key, value in leaves if isinstance(value, torch.Tensor)]


def from_arrays(shape: list[int], leaves: list[tuple[Any, Any]]) -> TensorDict:
    """The batch :func:`to_arrays` took apart."""
    batch = TensorDict({}, batch_size=shape)
    for key, value in leaves:
        batch.set(key, to_tensor(value))
    return batch


class CollectorWorker:
    """One worker of the ``ray`` collector (run as a Ray actor).

    It leaves SIGINT to the training process (a Ctrl-C stops the run there, which then shuts the
    workers down) and computes on one thread, as the run's own process does.

    :param make_env: ``make_env(num_envs)``: the run's vector env, built here.
    :param policy: its own copy of the policy.
    :param num_envs: envs in its vector env.
    :param frames_per_batch: frames of each of its batches, a multiple of ``num_envs``.
    """

    def __init__(self, make_env: Callable[[int], Any], policy: Any, num_envs: int, frames_per_batch: int) -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        torch.set_num_threads(1)
        self.env = make_env(num_envs)
        self.policy = policy
        self.collector = rlcore.Collector(self.env, policy, frames_per_batch)
        #: the weight version the policy acts with (0: the weights it was built with)
        self.version = 0

    def pid(self) -> int:
        """Its process id (also the answer that it started)."""
        return os.getpid()

    def set_seed(self, seed: int) -> None:
        """Seed its envs (env ``i`` with ``seed + i``) and the policy's sampling."""
        self.collector.set_seed(seed)
        torch.manual_seed(seed)

    def set_weights(self, weights: Mapping[str, Any], version: int) -> None:
        """Act with ``weights`` (the policy's ``state_dict``, its tensors as :func:`to_array` sends them) from the next step on."""
        self.policy.load_state_dict({key: to_tensor(value) for key, value in weights.items()})
        self.version = version

    def collect(self) -> tuple[Any, Any, Any, int, dict[str, Any]]:
        """One batch: ``(batch as arrays (to_arrays), episode returns, episode lengths, weight version, wrapper states)``."""
        version = self.version
        batch = self.collector.collect()
        returns, lengths = self.collector.finished_episodes
        return to_arrays(batch), returns, lengths, version, rlcore.env_states(self.env)

    def state_dict(self) -> dict[str, Any]:
        """Where it stands: its collector (envs where they can be saved), wrappers, RNG and weight version."""
        return {
            "collector": self.collector.state_dict(),
            "wrappers": rlcore.env_states(self.env),
            "rng": torch.get_rng_state(),
            "version": self.version,
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> bool:
        """Continue from :meth:`state_dict`.

        :return: whether its envs were restored (otherwise they start fresh episodes).
        """
        import warnings

        rlcore.load_env_states(self.env, state["wrappers"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the trainer's process says it, once for all workers
            self.collector.load_state_dict(dict(state["collector"]))
        torch.set_rng_state(state["rng"])
        return state["collector"].get("envs") is not None

    def close(self) -> None:
        """Close its envs."""
        self.env.close()
