"""Builtin plugin: Gymnasium's vector envs (``sync``, ``async``) and wrappers that normalise observations and rewards."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rlcore import hookimpl


def normalize_observation(env: Any, epsilon: float = 1e-8, clip: float = 10.0) -> Any:
    """Standardise observations with running statistics (``info["final_obs"]`` too).

    :param env: the vector env.
    :param epsilon: added to the variance.
    :param clip: normalised values are clipped to ``[-clip, clip]``.
    """
    from ._normalize import NormalizeObservation

    return NormalizeObservation(env, epsilon=epsilon, clip=clip)


def normalize_reward(env: Any, gamma: float = 0.99, epsilon: float = 1e-8, clip: float = 10.0) -> Any:
    """Scale rewards by the running standard deviation of the discounted return.

    The raw reward stays in ``info["raw_reward"]``, which the collector uses for episode returns.

    :param env: the vector env.
    :param gamma: the discount of the return whose spread is tracked.
    :param epsilon: added to the variance.
    :param clip: scaled rewards are clipped to ``[-clip, clip]``.
    """
    from ._normalize import NormalizeReward

    return NormalizeReward(env, gamma=gamma, epsilon=epsilon, clip=clip)


def sync_vector_env(make_env: Callable[[], Any], num_envs: int, **_: Any) -> Any:
    """``num_envs`` envs stepped one after the other in this process; their state is checkpointed where Gymnasium allows.

    :param make_env: returns one env.
    :param num_envs: how many.
    """
    from ._gym_state import StatefulSyncVectorEnv

    return StatefulSyncVectorEnv([make_env] * num_envs)


def async_vector_env(make_env: Callable[[], Any], num_envs: int, **_: Any) -> Any:
    """``num_envs`` envs, each in a worker process (Gymnasium's ``AsyncVectorEnv``); their state is
    checkpointed where Gymnasium allows, and the workers leave SIGINT/SIGTERM to the training process.

    :param make_env: returns one env.
    :param num_envs: how many.
    """
    from ._gym_state import StatefulAsyncVectorEnv

    return StatefulAsyncVectorEnv([make_env] * num_envs)


@hookimpl
def rl_register_vectorizations() -> dict[str, Any]:
    return {"sync": sync_vector_env, "async": async_vector_env}


@hookimpl
def rl_register_env_wrappers() -> dict[str, Any]:
    return {"normalize_observation": normalize_observation, "normalize_reward": normalize_reward}
