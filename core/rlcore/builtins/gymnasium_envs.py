"""Builtin plugin: vector-env wrappers that normalise observations and rewards, with checkpointable statistics."""

from __future__ import annotations

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


@hookimpl
def rl_register_env_wrappers() -> dict[str, Any]:
    return {"normalize_observation": normalize_observation, "normalize_reward": normalize_reward}
