"""A tiny real trainer on a toy env, to test a plugin in a loop that runs in a fraction of a second."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ._memory import MemoryLogger

if TYPE_CHECKING:
    from rlcore import CheckpointBackend, Logger, PluginManager, Trainer


def make_trainer(
    run_dir: str | os.PathLike[str],
    *,
    plugins: Mapping[str, Any] | Iterable[Any] = (),
    hooks: Mapping[str, Any] | None = None,
    env_id: str = "CartPole-v1",
    num_envs: int = 2,
    wrappers: Mapping[str, Any] | None = None,
    loss_module: Any = None,
    optimizer: Any = None,
    frames_per_batch: int = 32,
    total_frames: int = 128,
    optim_steps_per_batch: int = 2,
    loggers: Iterable[Logger] | None = None,
    checkpoint: bool | CheckpointBackend = True,
    plugin_manager: PluginManager | None = None,
    **trainer_options: Any,
) -> Trainer:
    """A real :class:`rlcore.Trainer` with a real :class:`rlcore.Collector` on a small Gymnasium env.

    The loss module is yours (``loss_module``: an algorithm's, to test it with hooks, loggers and
    checkpoints) or the kit's own tiny REINFORCE loss over a linear categorical policy (no algorithm
    plugin needed), optimised with Adam. The defaults train 4 batches of 2 envs x 16 steps, 2
    optimisation steps each, in well under a second.

    :param run_dir: the run directory (checkpoints go to ``run_dir/checkpoints``).
    :param plugins: plugins of this trainer only (objects or modules with ``@rlcore.hookimpl``
        functions, a plugin's module among them), registered in order before anything is built: the
        envs, env wrappers and hooks they register are there to use; a mapping gives their names.
    :param hooks: ``{name: hook}``: options (a mapping) build the hook ``name`` that a plugin registers,
        checked as a config's ``hooks`` section is; a :class:`rlcore.TrainerHookBase` is ``register``-ed
        under ``name``, another object with hook methods registered as a plugin.
    :param env_id: a Gymnasium id (or a registered env); with the kit's loss, one with a flat observation and discrete actions.
    :param num_envs: envs stepped side by side (synchronously, their state checkpointed).
    :param wrappers: ``{name: options}``, as a config's ``env.wrappers``, of the ``plugins`` given (or of
        a ``plugin_manager`` that has them, e.g. ``rlcore.get_plugin_manager()``); their state is checkpointed.
    :param loss_module: the loss module, with the ``policy`` the collector acts with; default the kit's
        tiny loss, which needs a flat observation and discrete actions.
    :param optimizer: the optimizer; default Adam (``lr=1e-2``) over the loss module's parameters.
    :param frames_per_batch: frames per batch, a multiple of ``num_envs``.
    :param total_frames: frames to train for.
    :param optim_steps_per_batch: optimisation steps per batch.
    :param loggers: the run's loggers; default a fresh :class:`~rlcore_testing.MemoryLogger` (pass your own
        to read what was logged: the trainer may wrap the loggers it is given).
    :param checkpoint: ``True`` for the builtin torch backend in ``run_dir/checkpoints``, ``False`` for none,
        or a backend.
    :param plugin_manager: the plugins the trainer starts from (and where the env is looked up; left as it
        is); default rl-core's builtins only, no installed plugin, so that the plugin under test runs alone.
    :param trainer_options: any other :class:`rlcore.Trainer` parameter; the kit's defaults are
        ``seed=0``, ``log_interval=1`` and ``progress_bar=False``.
    :return: the trainer, ready to ``train()``.
    """
    import gymnasium
    import torch

    from rlcore import Collector, EnvState, Trainer, add_hook, attach_hook, make_vector_env

    from ._tiny import TinyLoss

    run_dir = Path(run_dir)
    pm = plugin_manager.copy() if plugin_manager is not None else builtins_only()
    named = plugins.items() if isinstance(plugins, Mapping) else ((None, plugin) for plugin in plugins)
    for name, plugin in named:  # before the env: the envs and wrappers they register are used
        name = name or (plugin.__name__ if isinstance(plugin, ModuleType) else f"{type(plugin).__name__}-{id(plugin)}")
        if pm.get_plugin(name) is plugin:  # one of plugin_manager's already
            continue
        pm.add_named(plugin, name)
    env = make_vector_env(env_id, num_envs, wrappers=wrappers, plugin_manager=pm)
    obs_space, action_space = env.single_observation_space, env.single_action_space
    if loss_module is not None:
        loss = loss_module
    elif not isinstance(action_space, gymnasium.spaces.Discrete) or obs_space.shape is None:
        env.close()
        raise ValueError(f"make_trainer's own loss needs an env with a flat observation and discrete actions; {env_id} has {action_space}")
    else:
        loss = TinyLoss(int(torch.Size(obs_space.shape).numel()), int(action_space.n))
    backend: CheckpointBackend | None
    if checkpoint is True:
        backend = pm.factory("checkpoint_backends", "torch")(directory=run_dir / "checkpoints", keep_last=3)
    else:
        backend = checkpoint or None
    options: dict[str, Any] = {"seed": 0, "log_interval": 1, "progress_bar": False, **trainer_options}
    trainer = Trainer(
        collector=Collector(env, loss.policy, frames_per_batch),
        loss_module=loss,
        optimizer=torch.optim.Adam(loss.parameters(), lr=1e-2) if optimizer is None else optimizer,
        total_frames=total_frames,
        optim_steps_per_batch=optim_steps_per_batch,
        loggers=[MemoryLogger(run_dir.name, run_dir)] if loggers is None else loggers,
        checkpoint=backend,
        plugin_manager=pm,
        run_dir=run_dir,
        **options,
    )
    EnvState.register(trainer, env)
    try:
        for name, hook in (hooks or {}).items():
            if isinstance(hook, Mapping):  # options, as a config's hooks section gives them
                add_hook(trainer, name, hook)
            else:
                attach_hook(trainer, hook, name)
    except BaseException:
        env.close()  # (a refused hook: the test goes on, without the env's workers)
        raise
    return trainer


def builtins_only() -> PluginManager:
    """A plugin manager with rl-core's builtins and nothing else: installed plugins are not loaded, and
    their names are free, so that the plugin under test registers under its own entry-point name."""
    from rlcore import PluginManager

    pm = PluginManager(only=[])
    for name in [name for name, info in pm.infos.items() if info.status == "blocked"]:
        pm.unblock(name)
        del pm.infos[name]
    return pm
