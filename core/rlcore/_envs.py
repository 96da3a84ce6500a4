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
