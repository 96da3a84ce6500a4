"""Saving and restoring Gymnasium envs: the ``sync`` and ``async`` backends as :class:`rlcore.SaveableVectorEnv`.

Gymnasium has no API for an env's state. Its classic-control envs and common wrappers keep it in
plain attributes (numbers, arrays, a numpy generator), which are read and written here; a layer
with ``state_dict``/``load_state_dict`` saves itself. Any other env cannot be saved: a resumed
run then starts fresh episodes (the collector says so).
"""

from __future__ import annotations

import multiprocessing
import signal
import sys
import types
from collections.abc import Callable
from functools import partial
from typing import Any

import gymnasium
import numpy as np
from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

from rlcore import ImportPath

#: Modules whose envs and wrappers keep their whole state in plain attributes (a wrapper with any other state is refused).
SAVEABLE_MODULES = ("gymnasium.envs.classic_control.", "gymnasium.wrappers.")
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
    which are saved. A MuJoCo env (Gymnasium's ``MujocoEnv``) saves its simulator: MuJoCo's
    integration state (time, ``qpos``, ``qvel``, ``act``, the solver's warm start, controls, applied
    forces, mocap bodies), the arrays of its ``MjData`` (so that quantities an env reads from the last
    step, like body positions, are as they were), and its plain attributes with its random generator.
    Any other layer makes the env unsaveable.
    """
    layers = [_layer_state(layer) for layer in _chain(env)]
    return None if any(state is None for state in layers) else layers  # type: ignore[return-value]


def unsaveable_layer(env: Any) -> str | None:
    """The class name of the first layer of one env that cannot be saved, or ``None`` when all can."""
    return next((type(layer).__name__ for layer in _chain(env) if _layer_state(layer) is None), None)


def _layer_state(layer: Any) -> dict[str, Any] | None:
    """One layer's state (see :func:`sub_env_state`), or ``None``."""
    if hasattr(layer, "state_dict") and hasattr(layer, "load_state_dict"):
        return {"state_dict": layer.state_dict()}
    if _is_mujoco(layer):
        return {"mujoco": _mujoco_state(layer)}
    if not (type(layer).__module__.startswith(SAVEABLE_MODULES) or isinstance(layer, _StateAccess)):  # (async workers, wrapped)
        return None
    attrs = _plain_attrs(layer, strict=True)
    return None if attrs is None else {"attrs": attrs}


def _plain_attrs(layer: Any, strict: bool) -> dict[str, Any] | None:
    """A layer's attributes that hold state (numbers, strings, arrays, numpy generators), in checkpoint types.

    :param strict: return ``None`` at an attribute of any other type (else leave it out).
    """
    import torch  # (lazy: rlctl plugins list imports no torch; so below)

    attrs: dict[str, Any] = {}
    for key, value in vars(layer).items():
        if key in _DESCRIPTIVE:
            continue
        if isinstance(value, np.random.Generator):
            attrs[key] = {"numpy_generator": value.bit_generator.state}
        elif isinstance(value, np.ndarray) and value.dtype.kind in "biuf":
            attrs[key] = {"ndarray": torch.from_numpy(value.copy())}
        elif isinstance(value, np.generic):
            attrs[key] = value.item()
        elif isinstance(value, (gymnasium.spaces.Space, types.FunctionType, types.BuiltinFunctionType, ImportPath)):
            continue  # a wrapper's own spaces and functions (ClipAction's, TransformReward's) describe it
        elif value is None or isinstance(value, (bool, int, float, str)):
            attrs[key] = value
        elif strict:
            return None
    return attrs


def _is_mujoco(layer: Any) -> bool:
    """Whether ``layer`` is a Gymnasium MuJoCo env (``gymnasium.envs.mujoco.MujocoEnv``), without importing mujoco."""
    module = sys.modules.get("gymnasium.envs.mujoco.mujoco_env")
    base = getattr(module, "MujocoEnv", None) if module is not None else None
    return base is not None and isinstance(layer, base)


#: MuJoCo's constraint-island arrays: scratch, recomputed at every step (and not restored exactly by writing them)
_MUJOCO_SCRATCH = ("map_", "iefc_", "iM_", "iLD", "iacc", "ifrc")


def _mujoco_state(layer: Any) -> dict[str, Any]:
    """A MuJoCo env's simulator state (see :func:`sub_env_state`)."""
    import mujoco  # (lazy: an env without MuJoCo needs no mujoco)
    import torch

    model, data = layer.model, layer.data
    spec = mujoco.mjtState.mjSTATE_INTEGRATION
    integration = np.empty(mujoco.mj_stateSize(model, spec), dtype=np.float64)
    mujoco.mj_getState(model, data, integration, spec)
    arrays = {}
    for name in dir(data):
        if name.startswith("_") or name.startswith(_MUJOCO_SCRATCH) or "island" in name or name == "iM":
            continue
        try:
            value = getattr(data, name)
        except Exception:  # a property that does not apply to this model
            continue
        if isinstance(value, np.ndarray) and value.size and value.dtype.names is None and value.dtype.kind in "biuf":
            arrays[name] = torch.from_numpy(np.array(value, order="C", copy=True))
    return {"integration": torch.from_numpy(integration), "arrays": arrays, "attrs": _plain_attrs(layer, strict=False)}


def _load_mujoco_state(layer: Any, state: dict[str, Any]) -> None:
    import mujoco  # (lazy: an env without MuJoCo needs no mujoco)

    model, data = layer.model, layer.data
    mujoco.mj_setState(model, data, np.asarray(state["integration"], dtype=np.float64), mujoco.mjtState.mjSTATE_INTEGRATION)
    for name, value in state["arrays"].items():
        target = getattr(data, name, None)
        if isinstance(target, np.ndarray) and target.shape == tuple(value.shape) and target.flags.writeable:
            target[...] = np.asarray(value)
    _load_attrs(layer, state["attrs"])


def _load_attrs(layer: Any, attrs: dict[str, Any]) -> None:
    for key, value in attrs.items():
        if isinstance(value, dict) and "numpy_generator" in value:
            generator_state = value["numpy_generator"]
            generator = np.random.Generator(getattr(np.random, generator_state["bit_generator"])())
            generator.bit_generator.state = generator_state
            value = generator
        elif isinstance(value, dict) and "ndarray" in value:
            value = value["ndarray"].numpy().copy()
        setattr(layer, key, value)


def load_sub_env_state(env: Any, layers: list[dict[str, Any]]) -> None:
    """Restore :func:`sub_env_state` into an env built the same way."""
    for layer, state in zip(_chain(env), layers, strict=True):
        if "state_dict" in state:
            layer.load_state_dict(state["state_dict"])
        elif "mujoco" in state:
            _load_mujoco_state(layer, state["mujoco"])
        else:
            _load_attrs(layer, state["attrs"])


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

    def unsaveable(self) -> str | None:
        """The first layer of an env that cannot be saved (its class name), or ``None``."""
        return next(filter(None, map(unsaveable_layer, self.envs)), None)


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

    def unsaveable(self) -> str | None:
        """The first layer of an env that cannot be saved (its class name), or ``None``."""
        return next(filter(None, self.call("rlcore_unsaveable")), None)


class _StateAccess(gymnasium.Wrapper):
    """Gives a worker's env the two calls :class:`StatefulAsyncVectorEnv` makes through ``call``."""

    rlcore_pending_state: Any = None

    def rlcore_env_state(self) -> list[dict[str, Any]] | None:
        return sub_env_state(self.env)

    def rlcore_load_env_state(self) -> None:
        load_sub_env_state(self.env, self.rlcore_pending_state)
        self.rlcore_pending_state = None

    def rlcore_unsaveable(self) -> str | None:
        return unsaveable_layer(self.env)


def _worker_env(make_env: Callable[[], Any]) -> Any:
    """One env of an async vector env; in a worker process, signals are left to the training process."""
    if multiprocessing.parent_process() is not None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    return _StateAccess(make_env())
