"""Vector envs from a Gymnasium id or a registered env, with the configured wrappers."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from ._errors import ConfigError

VECTORIZATION = ("sync", "async")


def make_vector_env(
    env_id: str,
    num_envs: int = 1,
    *,
    vectorization: str = "sync",
    kwargs: Mapping[str, Any] | None = None,
    wrappers: Mapping[str, Mapping[str, Any] | None] | None = None,
    plugin_manager: Any = None,
) -> Any:
    """A ``gymnasium.vector.VectorEnv`` in ``SAME_STEP`` autoreset mode, as the collector wants it.

    :param env_id: a name from ``rl_register_envs`` or a Gymnasium id (``CartPole-v1``).
    :param num_envs: how many copies run side by side.
    :param vectorization: ``sync`` (one process) or ``async`` (a process per env).
    :param kwargs: keyword arguments of the env (``render_mode`` among them).
    :param wrappers: ``{name: options}`` from ``rl_register_env_wrappers``, applied in order.
    :param plugin_manager: where registered envs and wrappers are looked up.
    :raises ConfigError: for an unknown env id, vectorization or wrapper.
    """
    import gymnasium
    from gymnasium.vector import AsyncVectorEnv, AutoresetMode, SyncVectorEnv

    from ._plugins import get_plugin_manager

    pm = plugin_manager or get_plugin_manager()
    kwargs = dict(kwargs or {})
    registered = pm.registry("envs")
    if env_id in registered:
        make_one = partial(registered[env_id][1], **kwargs)
    elif env_id in gymnasium.registry:
        make_one = partial(gymnasium.make, env_id, **kwargs)
    else:
        close = [name for name in gymnasium.registry if name.lower().startswith(env_id.lower().split("-")[0])][:5]
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ConfigError(f"env.id: unknown env {env_id!r} (neither a Gymnasium id nor a registered env{hint})")
    if vectorization not in VECTORIZATION:
        raise ConfigError(f"env.vectorization: unknown value {vectorization!r} (valid choices: {', '.join(VECTORIZATION)})")
    cls = SyncVectorEnv if vectorization == "sync" else AsyncVectorEnv
    env = cls([make_one] * num_envs, autoreset_mode=AutoresetMode.SAME_STEP)
    for name, options in (wrappers or {}).items():
        env = pm.factory("env_wrappers", name, key="env.wrappers")(env, **(options or {}))
    return env


def env_states(env: Any) -> dict[str, Any]:
    """The ``state_dict`` of every wrapper of ``env`` that has one, outermost first, keyed by position."""
    states = {}
    depth = 0
    while env is not None:
        if hasattr(env, "state_dict"):
            states[f"{depth}:{type(env).__name__}"] = env.state_dict()
        env = getattr(env, "env", None)
        depth += 1
    return states


def load_env_states(env: Any, states: Mapping[str, Any]) -> None:
    """Restore :func:`env_states` into an env built with the same wrappers."""
    depth = 0
    while env is not None:
        key = f"{depth}:{type(env).__name__}"
        if key in states:
            env.load_state_dict(states[key])
        env = getattr(env, "env", None)
        depth += 1


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
    import numpy as np
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
    import numpy as np

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


def vector_env_state(env: Any) -> list[list[dict[str, Any]]] | None:
    """The state of every sub-env of a (wrapped) ``SyncVectorEnv``, or ``None`` when one cannot be captured."""
    inner = env
    while not hasattr(inner, "envs") and hasattr(inner, "env"):
        inner = inner.env
    if not hasattr(inner, "envs"):
        return None
    states = [sub_env_state(sub) for sub in inner.envs]
    return None if any(s is None for s in states) else states  # type: ignore[return-value]


def load_vector_env_state(env: Any, states: list[list[dict[str, Any]]]) -> None:
    """Restore :func:`vector_env_state`."""
    inner = env
    while not hasattr(inner, "envs"):
        inner = inner.env
    for sub, state in zip(inner.envs, states, strict=True):
        load_sub_env_state(sub, state)
