"""Saving and restoring Gymnasium envs: the ``sync`` and ``async`` backends as :class:`rlcore.SaveableVectorEnv`.

Gymnasium has no API for an env's state. Its classic-control envs and common wrappers keep it in
plain attributes (numbers, arrays, a numpy generator), which are read and written here; a layer
with ``state_dict``/``load_state_dict`` saves itself. Any other env cannot be saved: a resumed
run then starts fresh episodes (the collector says so).
"""

from __future__ import annotations

import multiprocessing
import signal
from collections.abc import Callable
from functools import partial
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

#: Modules whose envs and wrappers keep their whole state in plain attributes.
SAVEABLE_MODULES = ("gymnasium.envs.classic_control.", "gymnasium.wrappers.common")
#: Attributes that describe an env rather than hold its state.
_DESCRIPTIVE = {"env", "spec", "metadata", "action_space", "observation_space", "_saved_kwargs", "_previous_data", "screen", "clock"}


def _chain(env: Any) -> list[Any]:
    layers = [env]
    while hasattr(layers[-1], "env") and layers[-1] is not layers[-1].unwrapped:
        layers.append(layers[-1].env)
    return layers


def sub_env_state(env: Any) -> list[dict[str, Any]] | None:
    """The state of one (non-vector) env, layer by layer, or ``None`` when it cannot be captured.

    A layer with ``state_dict``/``load_state_dict`` saves itself; Gymnasium's classic-control envs
    and common wrappers keep their state in plain attributes (numbers, arrays, a numpy generator),
    which are saved. Any other layer makes the env unsaveable.
    """
    import torch

    layers: list[dict[str, Any]] = []
    for layer in _chain(env):
        if hasattr(layer, "state_dict") and hasattr(layer, "load_state_dict"):
            layers.append({"state_dict": layer.state_dict()})
            continue
        if not type(layer).__module__.startswith(SAVEABLE_MODULES):
            return None
        attrs: dict[str, Any] = {}
        for key, value in vars(layer).items():
            if key in _DESCRIPTIVE:
                continue
            if isinstance(value, np.random.Generator):
                attrs[key] = {"numpy_generator": value.bit_generator.state}
            elif isinstance(value, np.ndarray):
                attrs[key] = {"ndarray": torch.from_numpy(value.copy())}
            elif isinstance(value, np.generic):
                attrs[key] = value.item()
            elif value is None or isinstance(value, (bool, int, float, str)):
                attrs[key] = value
            elif not key.startswith("_") and hasattr(value, "contains"):  # a space
                continue
            else:
                return None
        layers.append({"attrs": attrs})
    return layers


def load_sub_env_state(env: Any, layers: list[dict[str, Any]]) -> None:
    """Restore :func:`sub_env_state` into an env built the same way."""
    for layer, state in zip(_chain(env), layers, strict=True):
        if "state_dict" in state:
            layer.load_state_dict(state["state_dict"])
            continue
        for key, value in state["attrs"].items():
            if isinstance(value, dict) and "numpy_generator" in value:
                generator_state = value["numpy_generator"]
                generator = np.random.Generator(getattr(np.random, generator_state["bit_generator"])())
                generator.bit_generator.state = generator_state
                value = generator
            elif isinstance(value, dict) and "ndarray" in value:
                value = value["ndarray"].numpy().copy()
            setattr(layer, key, value)


class StatefulSyncVectorEnv(SyncVectorEnv):
    """Gymnasium's ``SyncVectorEnv`` in ``SAME_STEP`` autoreset mode that saves its envs where it can."""

    def __init__(self, env_fns: Any) -> None:
        super().__init__(env_fns, autoreset_mode=AutoresetMode.SAME_STEP)

    def env_state(self) -> list[list[dict[str, Any]]] | None:
        """Every sub-env's state, or ``None`` when one of them cannot be captured."""
        states = [sub_env_state(sub) for sub in self.envs]
        return None if any(s is None for s in states) else states  # type: ignore[return-value]

    def load_env_state(self, state: list[list[dict[str, Any]]]) -> None:
        for sub, layers in zip(self.envs, state, strict=True):
            load_sub_env_state(sub, layers)


class StatefulAsyncVectorEnv(AsyncVectorEnv):
    """Gymnasium's ``AsyncVectorEnv`` in ``SAME_STEP`` autoreset mode whose workers save their envs where they can.

    Its workers ignore SIGINT and SIGTERM: a Ctrl-C (sent to the whole process group) or a
    SIGTERM reaches the training process alone, which finishes its batch, checkpoints and closes
    the workers; they never die half-way through a step with a traceback.
    """

    def __init__(self, env_fns: list[Callable[[], Any]]) -> None:
        super().__init__([partial(_worker_env, fn) for fn in env_fns], autoreset_mode=AutoresetMode.SAME_STEP)

    def env_state(self) -> list[list[dict[str, Any]]] | None:
        states = self.call("rlcore_env_state")
        return None if any(s is None for s in states) else list(states)

    def load_env_state(self, state: list[list[dict[str, Any]]]) -> None:
        self.set_attr("rlcore_pending_state", list(state))
        self.call("rlcore_load_env_state")


class _StateAccess(gymnasium.Wrapper):
    """Gives a worker's env the two calls :class:`StatefulAsyncVectorEnv` makes through ``call``."""

    rlcore_pending_state: Any = None

    def rlcore_env_state(self) -> list[dict[str, Any]] | None:
        return sub_env_state(self.env)

    def rlcore_load_env_state(self) -> None:
        load_sub_env_state(self.env, self.rlcore_pending_state)
        self.rlcore_pending_state = None


def _worker_env(make_env: Callable[[], Any]) -> Any:
    """One env of an async vector env; in a worker process, signals are left to the training process."""
    if multiprocessing.parent_process() is not None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    return _StateAccess(make_env())
