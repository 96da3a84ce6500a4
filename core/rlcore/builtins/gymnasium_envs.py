"""Builtin plugin: Gymnasium's vector envs (``sync``, ``async``) and the ``local`` collector that steps the run's
vector env in the training process. The env wrappers (normalisation and the others) come with rl-plugin-envs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rlcore import CollectorFactory, VectorizationFactory, hookimpl


def sync_vector_env(make_env: Callable[[], Any], num_envs: int, **_: Any) -> Any:
    """``num_envs`` envs stepped one after the other in this process; their state is checkpointed where Gymnasium allows.

    :param make_env: returns one env.
    :param num_envs: how many.
    """
    from ._gym_state import StatefulSyncVectorEnv  # (lazy: rlctl plugins list imports no torch; so below)

    return StatefulSyncVectorEnv([make_env] * num_envs)


def async_vector_env(make_env: Callable[[], Any], num_envs: int, **_: Any) -> Any:
    """``num_envs`` envs, each in a worker process (Gymnasium's ``AsyncVectorEnv``); their state is
    checkpointed where Gymnasium allows, and the workers leave SIGINT/SIGTERM to the training process.

    :param make_env: returns one env.
    :param num_envs: how many.
    """
    from ._gym_state import StatefulAsyncVectorEnv  # (lazy: torch)

    return StatefulAsyncVectorEnv([make_env] * num_envs)


def local_collector(env: Any, policy: Any, frames_per_batch: int, *, device: Any = "cpu", make_env: Any = None) -> Any:
    """The in-process collector (``collector.name: local``, the default): :class:`rlcore.Collector` on the run's env.

    It has no options of its own.

    :param env: the run's vector env, which it steps.
    :param policy: the policy that acts.
    :param frames_per_batch: frames per batch, a multiple of ``env.num_envs``.
    :param device: where the policy runs and batches go.
    :param make_env: unused (the envs are the run's own).
    """
    from rlcore import Collector  # (lazy: torch)

    return Collector(env, policy, frames_per_batch, device=device)


@hookimpl
def rl_register_collectors() -> dict[str, CollectorFactory]:
    return {"local": local_collector}


@hookimpl
def rl_register_vectorizations() -> dict[str, VectorizationFactory]:
    return {"sync": sync_vector_env, "async": async_vector_env}

