"""The hook specifications of rl-core: one small documented function per hook.

Every loop hook receives ``trainer``; like any pluggy hook, an implementation may accept
only the arguments it needs. ``docs/hooks.md`` documents each hook and a test keeps it
in sync with this file.

Three kinds of hooks run inside the loop:

- *data* hooks (``rl_batch_process``, ``rl_process_optim_batch``) chain: each
  implementation receives the previous one's output; returning ``None`` keeps the batch
  as it was (it may have been changed in place);
- *logging* hooks return a ``dict`` of values (or ``None``); the key ``log_pbar`` (bool)
  also shows that dict's values on the progress bar;
- *operation* hooks return nothing.

The trainer runs the plain implementations of the data hooks, the logging hooks and
``rl_optimizer`` itself, in pluggy's order inside pluggy's call, so that it checks each
result as it comes and knows which plugin returned it. Their specs are ``firstresult``
only so that a wrapper receives one value: the final batch, or the list of results (as
pluggy's own call would give it).

Registry hooks let a plugin contribute named factories; they are called without a
trainer and must stay light (import heavy libraries inside the factories).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, get_args

from ._markers import hookspec

if TYPE_CHECKING:
    import click
    from tensordict import TensorDictBase

    from ._kernel.contracts import (
        CheckpointBackendFactory,
        CollectorFactory,
        EnvFactory,
        EnvWrapperFactory,
        HookFactory,
        LoggerFactory,
        VectorizationFactory,
        World,
    )
    from ._kernel.registry import Algorithm
    from ._kernel.trainer import Trainer

__all__ = [
    "DATA_HOOKS",
    "HOOK_POINTS",
    "LIFECYCLE_HOOKS",
    "LOGGING_HOOKS",
    "LOOP_HOOKS",
    "REGISTRIES",
    "HookPoint",
]

#: The ten hook points of the loop, TorchRL's names (as ``Trainer.register_op`` takes them), in the
#: order one batch meets them. The hook of point ``p`` is ``rl_<p>``.
HookPoint = Literal[
    "batch_process",
    "pre_steps_log",
    "pre_optim_steps",
    "process_optim_batch",
    "post_loss",
    "optimizer",
    "post_optim",
    "post_optim_log",
    "post_steps",
    "post_steps_log",
]
HOOK_POINTS: tuple[HookPoint, ...] = get_args(HookPoint)
#: The loop's hooks, in the order one batch meets them.
LOOP_HOOKS = tuple(f"rl_{point}" for point in HOOK_POINTS)
#: Hooks called once per run (setup, shutdown) or when the loop raises.
LIFECYCLE_HOOKS = ("rl_setup", "rl_shutdown", "rl_exception")
#: Loop hooks whose implementations chain their outputs.
DATA_HOOKS = ("rl_batch_process", "rl_process_optim_batch")
#: Loop hooks whose implementations return values to log.
LOGGING_HOOKS = ("rl_pre_steps_log", "rl_post_optim_log", "rl_post_steps_log")
#: The registries of named factories: ``{kind: the hook that contributes to it}`` (``rlctl plugins list``'s ``provides``).
REGISTRIES = {
    "algorithms": "rl_register_algorithms",
    "loggers": "rl_register_loggers",
    "envs": "rl_register_envs",
    "env_wrappers": "rl_register_env_wrappers",
    "vectorizations": "rl_register_vectorizations",
    "collectors": "rl_register_collectors",
    "checkpoint_backends": "rl_register_checkpoint_backends",
    "hooks": "rl_register_hooks",
}


# ---------------------------------------------------------------------------- lifecycle


@hookspec
def rl_setup(trainer: Trainer) -> None:
    """Called once when :meth:`Trainer.train` starts, before the first batch.

    Register modules, ops or extra loggers here. A resumed run has already loaded its
    checkpoint, so ``trainer.collected_frames`` may be above zero.

    :param trainer: the trainer about to run.
    """


@hookspec
def rl_shutdown(trainer: Trainer) -> None:
    """Called once when training ends, whether it finished, failed or was interrupted.

    Every implementation runs, even after another one raised (the first error is raised once all
    have run, unless the run is failing with an error of its own). Loggers are flushed and closed
    after this hook.

    :param trainer: the trainer that ran.
    """


@hookspec
def rl_exception(trainer: Trainer, exception: BaseException) -> None:
    """Called when the loop raises, before :func:`rl_shutdown`; the exception then propagates.

    :param trainer: the trainer that was running.
    :param exception: what was raised (``KeyboardInterrupt`` included).
    """


# --------------------------------------------------------------------------- loop hooks


@hookspec(firstresult=True)
def rl_batch_process(trainer: Trainer, batch: TensorDictBase) -> TensorDictBase | None:
    """Process a freshly collected batch of shape ``[envs, time]`` (data hook, chains).

    Typical uses: computing advantages, normalising rewards, filling a replay buffer.

    :param trainer: the running trainer.
    :param batch: the batch, as returned by the previous implementation.
    :return: a new batch, or ``None`` to keep ``batch``.
    """


@hookspec(firstresult=True)
def rl_pre_steps_log(trainer: Trainer, batch: TensorDictBase) -> dict[str, Any] | None:
    """Return values to log about the processed batch, before optimisation (logging hook).

    :param trainer: the running trainer.
    :param batch: the processed batch.
    :return: ``{name: value}``, or ``None``; ``log_pbar=True`` also shows them on the progress bar.
    """


@hookspec
def rl_pre_optim_steps(trainer: Trainer) -> None:
    """Called once per batch before the optimisation steps (operation hook).

    :param trainer: the running trainer.
    """


@hookspec(firstresult=True)
def rl_process_optim_batch(trainer: Trainer, batch: TensorDictBase) -> TensorDictBase | None:
    """Turn the batch into the sub-batch of one optimisation step (data hook, chains).

    Typical uses: taking a minibatch, sampling a replay buffer, moving to the device.
    ``trainer.optim_step_in_batch`` tells which step of the batch this is.

    :param trainer: the running trainer.
    :param batch: the processed batch on the first implementation, then the previous output.
    :return: the sub-batch, or ``None`` to keep ``batch``.
    """


@hookspec
def rl_post_loss(trainer: Trainer, batch: TensorDictBase, losses: TensorDictBase) -> None:
    """Called after the loss module ran on a sub-batch, before the optimizer step (operation hook).

    :param trainer: the running trainer.
    :param batch: the sub-batch the loss was computed on.
    :param losses: the loss module's output; keys starting with ``loss`` are summed and minimised.
    """


@hookspec(firstresult=True)
def rl_optimizer(trainer: Trainer, losses: TensorDictBase) -> dict[str, Any] | None:
    """Perform the optimizer step for ``losses``.

    Every implementation runs (TorchRL's trainer runs every op of its ``optimizer`` point: one per optimizer),
    and the statistics they return are logged together. The trainer's own step is a ``trylast`` wrapper
    around them: unless one of them returned statistics, it sums the ``loss*`` entries, back-propagates,
    clips gradients (``clip_grad_norm``/``clip_norm``), steps the optimizer and returns
    ``{"grad_norm": ...}`` when it clips by norm (else ``{}``). Return a dict to replace it, or wrap it
    (``wrapper=True``) to extend it.

    :param trainer: the running trainer.
    :param losses: the loss module's output for this step.
    :return: statistics of the step (logged under ``optim/``), or ``None`` when this implementation did not step.
    """


@hookspec
def rl_post_optim(trainer: Trainer) -> None:
    """Called after each optimizer step (operation hook).

    Typical uses: target-network updates, schedules per step.

    :param trainer: the running trainer.
    """


@hookspec(firstresult=True)
def rl_post_optim_log(trainer: Trainer, batch: TensorDictBase) -> dict[str, Any] | None:
    """Return values to log after each optimizer step (logging hook).

    :param trainer: the running trainer.
    :param batch: the sub-batch of this step.
    :return: ``{name: value}``, or ``None``.
    """


@hookspec
def rl_post_steps(trainer: Trainer) -> None:
    """Called once per batch after all its optimisation steps (operation hook).

    Typical uses: updating the collection policy's weights, schedules per batch, early stopping
    with ``trainer.stop(reason)`` (the run's last line says the reason).

    :param trainer: the running trainer.
    """


@hookspec(firstresult=True)
def rl_post_steps_log(trainer: Trainer, batch: TensorDictBase) -> dict[str, Any] | None:
    """Return values to log once the batch is done (logging hook).

    Typical uses: evaluation returns, recorded videos, per-batch statistics.

    :param trainer: the running trainer.
    :param batch: the processed batch.
    :return: ``{name: value}``, or ``None``.
    """


# ------------------------------------------------------------------------------ the world


@hookspec(firstresult=True)
def rl_world(config: dict[str, Any]) -> World | None:
    """The processes a run of ``config`` is one of, when a plugin starts or joins several (rl-plugin-torchrun's ranks).

    Called once, before the run is built. A plugin that returns a :class:`rlcore.World` may refuse, with a
    :class:`rlcore.ConfigError`, a config its processes cannot share out (envs that do not split evenly).

    :param config: the resolved config.
    :return: the world; ``None``: this process learns alone (the first result wins).
    """


# ------------------------------------------------------------------------------ registry


@hookspec
def rl_register_algorithms() -> list[Algorithm] | None:
    """Contribute algorithms: a loss module builder with its default config.

    :return: a list of :class:`rlcore.Algorithm`.
    """


@hookspec
def rl_register_loggers() -> dict[str, LoggerFactory] | None:
    """Contribute loggers by name (the keys of the ``loggers`` config section, ``--logger NAME``).

    A factory is called as ``factory(exp_name=..., log_dir=..., **options)`` and returns a
    :class:`rlcore.Logger`.

    :return: ``{name: factory}``.
    """


@hookspec
def rl_register_envs() -> dict[str, EnvFactory] | None:
    """Contribute environments by name, beside Gymnasium's registered ids.

    A factory is called as ``factory(**kwargs)`` (``env.kwargs``) and returns one ``gymnasium.Env``.

    :return: ``{name: factory}``.
    """


@hookspec
def rl_register_env_wrappers() -> dict[str, EnvWrapperFactory] | None:
    """Contribute vector-env wrappers by name (the keys of the ``env.wrappers`` config mapping).

    A factory is called as ``factory(env, **options)`` with a ``gymnasium.vector.VectorEnv``
    and returns the wrapped vector env. A wrapper with ``state_dict``/``load_state_dict`` is checkpointed.

    :return: ``{name: factory}``.
    """


@hookspec
def rl_register_vectorizations() -> dict[str, VectorizationFactory] | None:
    """Contribute vector-env backends by name (``env.vectorization``: ``sync``, ``async``, ...).

    A factory is called as ``factory(make_env, num_envs, env_id=..., kwargs=...)``, where
    ``make_env()`` returns one ``gymnasium.Env`` of the run's env (``kwargs`` applied), and returns a
    ``gymnasium.vector.VectorEnv`` in ``SAME_STEP`` autoreset mode. A backend that can save its envs'
    state implements :class:`rlcore.SaveableVectorEnv` (``env_state``/``load_env_state``), so that a
    resumed run continues the running episodes. A backend that makes its envs itself and reads
    ``kwargs`` as its own options (EnvPool's) sets ``factory.own_kwargs = True``: rl-core then
    leaves checking them to the factory instead of checking them against the Gymnasium env's.

    :return: ``{name: factory}``.
    """


@hookspec
def rl_register_collectors() -> dict[str, CollectorFactory] | None:
    """Contribute collectors by name (``collector.name``: ``local``, ``ray``, ...).

    A factory is called as ``factory(env, policy, frames_per_batch, *, device, make_env, **options)``:
    ``env`` is the run's vector env, built in this process (``env.num_envs`` envs, the configured
    wrappers); ``policy`` the loss module's policy; ``frames_per_batch`` the frames of every batch it
    yields; ``device`` where batches go; ``make_env(num_envs)`` a picklable function that builds a
    vector env like ``env`` in any process (the config's id, vectorization, kwargs and wrappers, the
    plugins found again there); ``options`` the other keys of the ``collector`` section, which the
    factory declares as its keyword parameters (checked like any plugin's options). It returns a
    :class:`rlcore.CollectorProtocol` and owns ``env`` (it closes it at ``shutdown``). A collector
    with ``@rlcore.hookimpl`` methods is registered as a plugin of the run (to log, or to push
    weights after the optimisation steps).

    :return: ``{name: factory}``.
    """


@hookspec
def rl_register_checkpoint_backends() -> dict[str, CheckpointBackendFactory] | None:
    """Contribute checkpoint backends by name (``checkpoint.backend``, env ``CKPT_BACKEND``).

    A factory is called as ``factory(directory=..., keep_last=...)`` and returns a
    :class:`rlcore.CheckpointBackend`.

    :return: ``{name: factory}``.
    """


@hookspec
def rl_register_hooks() -> dict[str, HookFactory] | None:
    """Contribute trainer hooks by name (the keys of the ``hooks`` config section).

    A factory is called as ``factory(**options)``. It returns either a
    :class:`rlcore.TrainerHookBase` (then ``register(trainer, name)`` is called) or any object
    with ``@rlcore.hookimpl`` methods (then it is registered as a plugin of the run).

    :return: ``{name: factory}``.
    """


@hookspec
def rl_register_commands(cli: click.Group) -> None:
    """Add sub-commands to ``rlctl`` (datasette's ``register_commands``).

    A command finds the run's plugins (those ``--plugin`` and ``--no-plugin`` chose) as its context object:
    ``click.get_current_context().find_object(rlcore.PluginManager)``.

    :param cli: the ``rlctl`` click group; decorate functions with ``@cli.command()``.
    """
