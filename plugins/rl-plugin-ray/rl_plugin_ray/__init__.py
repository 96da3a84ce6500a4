"""rl-plugin-ray: the ``ray`` collector for rl-core, the run's envs stepped in Ray actors.

Select it with ``collector: {name: ray, num_workers: 2, mode: sync}``; every other part of the run
(algorithm, hooks, loggers, checkpoints) stays as it is in one process. Each worker is a Ray actor
that builds its own vector env with :func:`rlcore.make_vector_env` from the run's ``env`` section
(its wrappers and the env plugins work there), seeded apart from the others, and sends TensorDict
batches to the trainer:

- ``mode: sync`` (TorchRL's ``sync_sync_collector``): every worker collects its share at once, and
  the batch is all of them, ``[env.num_envs, frames_per_batch / env.num_envs]``, as in one process;
- ``mode: async`` (``sync_async_collector``, ``async_collection``): the workers collect all the time
  and the trainer takes whichever batch is ready first, ``frames_per_batch`` frames of one worker;
  the policy lag of each batch (``collector/policy_lag``, weight versions) and the update-to-data
  ratio (``collector/utd_ratio``) are logged.

The trainer's weights go to the workers through :meth:`RayCollector.update_policy_weights_` after
every batch's optimisation (or through rl-plugin-hooks' ``update_weights`` hook only, with
``update_weights: false``). A worker whose process dies is replaced, its unfinished batch
discarded, each failure reported by a warning. Checkpoints hold every worker's envs (where they can be
saved), observations, running episodes and RNG.

Importing this module imports neither ray nor torch: they are imported when a collector is built.
:class:`Session` (a local cluster started and stopped safely, or one joined) serves other plugins too (rl-plugin-sweep's Ray backend).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from rlcore import CollectorFactory, ConfigError, Range, hookimpl

from ._cluster import Session  # (light: ray is imported when a session opens)

if TYPE_CHECKING:
    from ._collector import RayCollector

__version__ = "0.1.0"
__all__ = ["RayCollector", "Session", "ray_collector", "rl_register_collectors"]


def ray_collector(
    env: Any,
    policy: Any,
    frames_per_batch: int,
    *,
    device: Any = "cpu",
    make_env: Any = None,
    num_workers: Annotated[int, Range(ge=1)] = 2,
    mode: Literal["sync", "async"] = "sync",
    address: str | None = None,
    num_cpus: Annotated[int, Range(ge=1)] | None = None,
    num_cpus_per_worker: Annotated[float, Range(gt=0)] = 1.0,
    update_weights: bool = True,
    max_worker_failures: Annotated[int, Range(ge=0)] = 10,
    timeout: Annotated[float, Range(gt=0)] = 300.0,
) -> RayCollector:
    """The ``ray`` collector (``collector.name: ray``); the keyword options are the ``collector`` section's keys.

    :param env: the run's vector env: its spaces, and its wrappers' statistics, kept equal to those of the worker whose batch
        came last (worker 0 in sync mode).
    :param policy: the policy; each worker acts with a copy, updated by :meth:`RayCollector.update_policy_weights_`.
    :param frames_per_batch: frames of every batch the trainer gets.
    :param device: where batches go.
    :param make_env: ``make_env(num_envs)`` builds a vector env like ``env`` in a worker (given by rl-core).
    :param num_workers: Ray actors, each running ``env.num_envs / num_workers`` envs.
    :param mode: ``sync``: a batch is every worker's share, collected at once; ``async``: a batch is the
        first worker's ``frames_per_batch`` frames that is ready, while the others keep collecting.
    :param address: a Ray cluster to join (``auto``, ``HOST:PORT`` of its head); ``null``: ``RAY_ADDRESS``
        if set, else a local cluster started for the run and shut down with it.
    :param num_cpus: CPUs of a local cluster; ``null``: the machine's.
    :param num_cpus_per_worker: CPUs Ray reserves for each worker (fractions share cores).
    :param update_weights: push the policy's weights to the workers after every batch's optimisation steps;
        ``false``: only when ``update_policy_weights_`` is called (rl-plugin-hooks' ``update_weights`` hook).
    :param max_worker_failures: worker deaths the run survives (each is replaced); one more fails it.
    :param timeout: seconds to wait for the workers to start, or for a batch, before the run fails.
    :raises ConfigError: for options that do not fit the env, or a cluster that cannot be joined or is too small.
    """
    if make_env is None:
        raise ConfigError("collector.name: the ray collector needs make_env (rl-core gives it; from Python pass make_env=...)")
    if env.num_envs % num_workers:
        raise ConfigError(
            f"collector.num_workers: {num_workers} does not divide env.num_envs={env.num_envs} (each worker runs env.num_envs / num_workers envs)"
        )
    if frames_per_batch % env.num_envs:
        raise ConfigError(f"collector.frames_per_batch: {frames_per_batch} is not a multiple of env.num_envs={env.num_envs}")
    from ._collector import RayCollector

    return RayCollector(
        env,
        policy,
        frames_per_batch,
        device=device,
        make_env=make_env,
        num_workers=num_workers,
        mode=mode,
        address=address,
        num_cpus=num_cpus,
        num_cpus_per_worker=num_cpus_per_worker,
        update_weights=update_weights,
        max_worker_failures=max_worker_failures,
        timeout=timeout,
    )


@hookimpl
def rl_register_collectors() -> dict[str, CollectorFactory]:
    """Register the ``ray`` collector."""
    return {"ray": ray_collector}


def __getattr__(name: str) -> Any:
    if name == "RayCollector":
        from ._collector import RayCollector

        return RayCollector
    raise AttributeError(f"module 'rl_plugin_ray' has no attribute {name!r}")
