"""Building a trainer from a resolved config: env, algorithm, collector, optimizer, loggers, hooks, checkpoints."""

from __future__ import annotations

import math
import os
import random
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import torch

from .._kernel.checkpoint import CheckpointBackend, CheckpointError
from .._kernel.contracts import CHECKPOINTS, CONFIG_FILE, World
from .._kernel.errors import ConfigError, PluginError, shown
from .._kernel.manager import PluginManager, first_party_data, get_plugin_manager
from .._kernel.options import validate_options
from .._kernel.trainer import Trainer, TrainerHookBase
from .._kernel.world import OneProcess
from .._markers import hookimpl
from .config import check_config, flatten, read_config_file, resolve_config, save_config
from .envs import checked_wrappers, env_layers, env_states, load_env_states, make_vector_env
from .loggers import generate_exp_name
from .optim import make_optimizer
from .rundir import RunDirectory, RunDirectoryError


class LRSchedule:
    """Sets the learning rate of every parameter group from the collected frames, once per batch.

    ``linear`` goes from ``lr`` to ``lr_end``; ``cosine`` follows half a cosine between them.
    """

    def __init__(self, kind: str, lr: float, lr_end: float) -> None:
        self.kind, self.lr, self.lr_end = kind, lr, lr_end

    def value(self, progress: float) -> float:
        progress = min(max(progress, 0.0), 1.0)
        if self.kind == "linear":
            weight = 1.0 - progress
        else:
            weight = 0.5 * (1.0 + math.cos(math.pi * progress))
        return self.lr_end + (self.lr - self.lr_end) * weight

    @hookimpl
    def rl_pre_optim_steps(self, trainer: Trainer) -> None:
        lr = self.value((trainer.collected_frames - trainer.batch_frames) / trainer.total_frames)
        for group in trainer.optimizer.param_groups if trainer.optimizer is not None else ():
            group["lr"] = lr


class EnvState:
    """Checkpoints the state of the training env's wrappers (normalisation statistics)."""

    def __init__(self, env: Any) -> None:
        self.env = env

    @classmethod
    def register(cls, trainer: Trainer, env: Any) -> None:
        """Checkpoint ``env``'s wrappers with ``trainer``'s state (as ``modules["env"]``), when any of them has state."""
        if env_states(env):
            trainer.register_module("env", cls(env))

    def state_dict(self) -> dict[str, Any]:
        return env_states(self.env)

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        load_env_states(self.env, state)


def default_run_dir(config: Mapping[str, Any]) -> Path:
    """``runs/<algo>_<env>_<time>_<id>``."""
    env = str(config["env"]["id"]).split("/")[-1]
    return Path("runs") / generate_exp_name(f"{config['algo']['name']}_{env}")


def build_trainer(
    config: Mapping[str, Any],
    run_dir: str | Path | None = None,
    plugin_manager: PluginManager | None = None,
    *,
    resume: bool = False,
    force: bool = False,
) -> Trainer:
    """Build the trainer of a run in its own run directory, and write its resolved config there.

    The run directory is locked for the run's lifetime (:class:`~rlcore._rundir.RunDirectory`).
    Nothing in it changes until the config is checked, every part is built and, with ``resume``,
    the newest good checkpoint is loaded: a run that cannot start leaves an existing directory as
    it was, and removes one it created.

    :param config: a config (resolved or partial: defaults fill the rest, see :func:`rlcore.load_config`).
    :param run_dir: the run directory; default ``runs/<algo>_<env>_<time>_<id>``. It must be new or
        empty, unless ``resume`` or ``force``.
    :param plugin_manager: the run's plugins (default: the installed ones).
    :param resume: continue the run in ``run_dir`` from its newest good checkpoint.
    :param force: start ``run_dir`` afresh, deleting its earlier run.
    :raises ConfigError: for a bad config or run directory, or a checkpoint that does not fit the config.
    """
    pm = plugin_manager or get_plugin_manager()
    config = resolve_config(config, pm)
    check_config(config, pm)
    trainer_cfg = config["trainer"]
    if run_dir is not None and str(run_dir).strip() == "":  # (Path("") would be the working directory)
        raise RunDirectoryError("--out: expected a directory, got ''")
    world = make_world(config, pm)
    run = trainer = None
    try:
        if trainer_cfg["seed"] is None:
            trainer_cfg["seed"] = random.randrange(2**31)
        path = Path(run_dir) if run_dir is not None else default_run_dir(config)
        trainer_cfg["seed"], path = world.broadcast((trainer_cfg["seed"], path))  # one seed and one run directory, the main process's
        run = world.on_main(partial(RunDirectory, path, resume=resume, force=force), share=False)  # it alone writes there
        if resume:
            world.on_main(partial(check_same_run, path, config, pm))
        trainer = _build(config, path, pm, world)
        if resume:
            _resume(trainer)
        if run is not None:
            run.commit()
            if resume:  # the resumed run's config replaces the one there once the run has started, not before
                trainer.register_plugin(_ConfigWriter(config, run.path / CONFIG_FILE), "rlcore.config")
            else:
                save_config(config, run.path / CONFIG_FILE)
            _add_loggers(trainer, config, run.path, pm, resumed=resume)
    except BaseException:
        if trainer is not None:
            trainer.collector.shutdown()  # type: ignore[attr-defined]
        if run is not None:
            run.abandon()
        world.close()
        raise
    if run is not None:
        trainer.after_shutdown(partial(_release, run, trainer, resume))
    batch = config["collector"]["frames_per_batch"] * trainer_cfg["frame_skip"]
    if trainer_cfg["total_frames"] < batch and not resume:
        warnings.warn(
            f"trainer.total_frames: {trainer_cfg['total_frames']} is less than one batch: the run collects a whole batch, "
            f"{batch} frames (collector.frames_per_batch)",
            stacklevel=2,
        )
    return trainer


class _ConfigWriter:
    """Writes a resumed run's config once every ``rl_setup`` check has passed (it is ``trylast``): a resume refused
    as it starts (a plugin's check of its options) leaves the run's ``config.yaml`` as it was."""

    def __init__(self, config: Mapping[str, Any], path: Path) -> None:
        self.config, self.path = config, path

    @hookimpl(trylast=True)
    def rl_setup(self) -> None:
        save_config(self.config, self.path)


def _release(run: RunDirectory, trainer: Trainer, resumed: bool, failure: BaseException | None) -> None:
    """Release the run directory once the run has ended and its loggers are closed. A fresh run that failed before its
    first batch ended (a hook's check of its options at ``rl_setup``, a plugin that raised) is abandoned: it leaves no
    run directory behind, and the same command can run again."""
    if failure is not None and trainer.batches == 0 and not resumed:
        run.abandon()
    else:
        run.release()


def make_world(config: Mapping[str, Any], pm: PluginManager) -> World:
    """The processes a run of ``config`` is one of: the :class:`rlcore.World` a plugin's ``rl_world`` returns, else this one alone.

    :raises PluginError: when a launcher started several processes (``first_party.json``'s ``launchers``: the
        variable it sets, ``WORLD_SIZE``) and no installed plugin joins them, which would train that many runs apart.
    """
    world: World | None = pm.hook.rl_world(config=config)
    if world is not None:
        return world
    for variable, plugin in first_party_data()["launchers"].items():
        count = os.environ.get(variable, "1")
        if count.isdigit() and int(count) > 1:
            raise PluginError(f"{variable}={count}: a launcher started {count} processes to learn together, which needs {plugin}: pip install {plugin}")
    return OneProcess()


def _build(config: dict[str, Any], run_dir: Path, pm: PluginManager, world: World) -> Trainer:
    """The trainer of a checked config, with its hooks, and no logger yet; nothing is written.

    In a world of several processes, the trainer is one of them: it runs its share of the envs
    (``env.num_envs / world_size``) and collects its share of each batch, its envs and RNGs seeded as the
    envs of one process would be (``seed + rank * env.num_envs / world_size``), its gradients reduced with
    the others', its checkpoints written together with theirs, its progress bar shown by the main one only.
    """
    trainer_cfg, env_cfg = config["trainer"], config["env"]
    torch.manual_seed(trainer_cfg["seed"])
    if trainer_cfg["num_threads"] is not None:
        torch.set_num_threads(trainer_cfg["num_threads"])
    share = world.world_size  # each process runs its share of the envs and of each batch
    make_env, env, loss_module = build_parts(config, pm, num_envs=env_cfg["num_envs"] // share)
    collector = None
    try:
        device = torch.device(trainer_cfg["device"])
        collector = make_collector(config, env, loss_module.policy, device, pm, config["collector"]["frames_per_batch"] // share)
        optimizer = make_optimizer(config["optim"], loss_module.parameters())
        checkpoint = world.checkpoint(make_backend(config, run_dir, pm))
        trainer = Trainer(
            collector=collector,
            loss_module=loss_module,
            optimizer=optimizer,
            total_frames=trainer_cfg["total_frames"],
            frame_skip=trainer_cfg["frame_skip"],
            optim_steps_per_batch=trainer_cfg["optim_steps_per_batch"],
            clip_grad_norm=trainer_cfg["clip_grad_norm"],
            clip_norm=trainer_cfg["clip_norm"],
            progress_bar=trainer_cfg["progress_bar"] and world.is_main,
            seed=trainer_cfg["seed"] + world.rank * env.num_envs,
            save_trainer_interval=trainer_cfg["save_trainer_interval"],
            log_interval=trainer_cfg["log_interval"],
            logger_timeout=trainer_cfg["logger_timeout"],
            max_batches=trainer_cfg["max_batches"],
            max_episodes=trainer_cfg["max_episodes"],
            profile=trainer_cfg["profile"],
            checkpoint=checkpoint,
            plugin_manager=pm,
            run_dir=run_dir,
            config=config,
            device=device,
            make_env=partial(_frozen_env, make_env, env, env_cfg["kwargs"]),
            world=world,
        )
        EnvState.register(trainer, env)
        if config["optim"]["lr_schedule"] != "constant":
            schedule = LRSchedule(config["optim"]["lr_schedule"], config["optim"]["lr"], config["optim"]["lr_end"])
            trainer.register_plugin(schedule, "rlcore.lr_schedule")
        for name, options in config["hooks"].items():
            if options is not None:
                add_hook(trainer, name, options)
    except BaseException:
        if collector is not None:
            collector.shutdown()  # it owns the env (and a remote one its workers)
        else:
            env.close()
        raise
    return trainer


def add_hook(trainer: Trainer, name: str, options: Mapping[str, Any]) -> None:
    """Make the hook ``name`` with ``options``, as a config's ``hooks`` section does, and add it to ``trainer``: a
    ``TrainerHookBase`` is ``register``-ed, any other object with hook implementations registered as a plugin of the
    run, under ``hooks.<name>`` (a name no installed plugin has: the scaffold names both alike).

    :raises ConfigError: for an unknown hook or a bad option.
    :raises PluginError: naming the plugin whose factory returned neither, or an object that implements an unknown hook.
    """
    pm = trainer.plugin_manager
    factory = pm.factory("hooks", name, key="hooks")
    options = validate_options(f"hooks.{name}", factory, options)
    with pm.making("hooks", name) as who:
        hook = factory(**options)
        try:
            attach_hook(trainer, hook, name, made_by=who)
        except ValueError as err:
            raise PluginError(f"hooks.{name}: {who} made an invalid hook: {err}") from None


def attach_hook(trainer: Trainer, hook: Any, name: str, made_by: str | None = None) -> None:
    """Add ``hook`` to ``trainer`` as a config's ``hooks.<name>`` is: a ``TrainerHookBase`` is ``register``-ed, any
    other object registered as a plugin under ``hooks.<name>``.

    :param made_by: the plugin whose factory made ``hook``, for the messages.
    :raises PluginError: for an object that is neither, or a ``TrainerHookBase`` with hook methods that its ``register`` did
        not register (they would never run).
    """
    if not isinstance(hook, TrainerHookBase):
        if not _hook_methods(trainer.plugin_manager, hook):
            if made_by is not None:
                raise PluginError(f"hooks.{name}: {made_by} returned {hook!r:.60}, expected an rlcore.TrainerHookBase or an object with hook methods")
            raise PluginError(f"hooks.{name}: {hook!r:.60} is neither an rlcore.TrainerHookBase nor an object with hook methods")
        trainer.register_plugin(hook, f"hooks.{name}")
        return
    with trainer.registering_as(f"hooks.{name}"):
        hook.register(trainer, name)
    methods = _hook_methods(trainer.plugin_manager, hook)
    if methods and not trainer.plugin_manager.is_registered(hook) and trainer.world.is_main:  # (a hook may run on the main process alone, which checks it)
        raise PluginError(
            f"hooks.{name}: {type(hook).__name__} is an rlcore.TrainerHookBase with hook methods ({', '.join(methods)}) that its register() "
            "does not register, so they would never run: call trainer.register_plugin(self, f'hooks.{name}') there, or register_op the work"
        )


def _hook_methods(pm: PluginManager, hook: Any) -> list[str]:
    """The names of ``hook``'s ``@rlcore.hookimpl`` methods."""
    return [attr for attr in dir(hook) if pm.parse_hookimpl_opts(hook, attr) is not None]


@dataclass(frozen=True)
class EnvFactory:
    """A picklable recipe of the run's vector env: ``make_env(num_envs)`` builds one like it in any process.

    What a collector whose envs run elsewhere (Ray workers) is given. The envs and wrappers are looked
    up again where it is called, among the installed plugins (with the run's restriction to some
    plugins and its blocked ones): plugins registered in the running process only are not there.

    :param env_id: ``env.id``.
    :param vectorization: ``env.vectorization``.
    :param kwargs: ``env.kwargs``.
    :param wrappers: ``env.wrappers``.
    :param only: load only these third-party plugins (``None``: every one).
    :param block: never load these.
    """

    env_id: str
    vectorization: str = "sync"
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    wrappers: Mapping[str, Any] = field(default_factory=dict)
    only: frozenset[str] | None = None
    block: frozenset[str] = frozenset()

    def __call__(self, num_envs: int) -> Any:
        """A new vector env of ``num_envs`` envs, in ``SAME_STEP`` autoreset mode.

        :param num_envs: how many envs.
        """
        pm = get_plugin_manager(only=self.only, block=self.block)
        return make_vector_env(
            self.env_id, num_envs, vectorization=self.vectorization, kwargs=self.kwargs, wrappers=self.wrappers, plugin_manager=pm
        )


def make_collector(
    config: Mapping[str, Any], env: Any, policy: Any, device: torch.device, pm: PluginManager, frames_per_batch: int | None = None
) -> Any:
    """The collector of ``collector.name`` (``rl_register_collectors``) with the section's other keys as its options.

    :param config: the resolved config.
    :param env: the run's vector env (the collector owns it from here on).
    :param policy: the policy that acts.
    :param device: where batches go.
    :param pm: the run's plugins.
    :param frames_per_batch: the frames of each batch, if not ``collector.frames_per_batch`` (one process's share, in a world of several).
    """
    options = dict(config["collector"])
    name, configured = options.pop("name"), options.pop("frames_per_batch")
    frames_per_batch = configured if frames_per_batch is None else frames_per_batch
    env_cfg = config["env"]
    make_env = EnvFactory(
        env_cfg["id"],
        env_cfg["vectorization"],
        dict(env_cfg["kwargs"]),
        dict(env_cfg["wrappers"]),
        frozenset(pm.only) if pm.only is not None else None,
        frozenset(pm.block),
    )
    factory = pm.factory("collectors", name, key="collector.name")
    with pm.making("collectors", name):
        return factory(env, policy, frames_per_batch, device=device, make_env=make_env, **options)


#: what a resumed run keeps: its checkpoint holds that algorithm's state, and the state of that many envs of that id, built
#: with those arguments (restoring an env restores its settings too: a render mode, a gravity, an episode limit)
RESUME_KEEPS = (("algo", "name"), ("env", "id"), ("env", "num_envs"), ("env", "vectorization"), ("env", "kwargs"), ("env", "wrappers"))


def check_same_run(run_dir: Path, config: Mapping[str, Any], pm: PluginManager) -> None:
    """A resumed run keeps its algorithm and its envs (:data:`RESUME_KEEPS`).

    :param run_dir: the run resumed.
    :param config: the config it is resumed with (whole, or only the sections given).
    :param pm: the plugins, whose wrappers' defaults count as given on both sides.
    :raises ConfigError: naming the first key whose value differs from the run's.
    """
    before = read_config_file(run_dir / CONFIG_FILE)
    for section, key in RESUME_KEEPS:
        was, now = before.get(section, {}).get(key), config.get(section, {}).get(key)
        if (section, key) == ("env", "wrappers") and isinstance(was, Mapping) and isinstance(now, Mapping):
            was, now = checked_wrappers(was, pm), checked_wrappers(now, pm)
        if was is not None and now is not None and was != now:
            raise ConfigError(f"{section}.{key}: the run in {run_dir} has {shown(was)}; resuming it with {shown(now)} is refused")


def _resume(trainer: Trainer) -> Path | None:
    """Load the newest good checkpoint; a checkpoint that does not fit the run's parts is a config error.

    A run stopped before its first checkpoint starts again from the beginning (with a warning).
    """
    if trainer.checkpoint is not None and not trainer.checkpoint.checkpoints():
        warnings.warn(f"{trainer.run_dir} has no checkpoint yet: the run starts again from the beginning", stacklevel=3)
        return None
    try:
        path = trainer.load_from_file()
    except CheckpointError:
        raise
    except (RuntimeError, KeyError, ValueError) as err:
        lines = [line.strip() for line in str(err).splitlines() if line.strip()] or [type(err).__name__]
        detail = f"{lines[0]} {lines[1]}" if lines[0].endswith(":") and len(lines) > 1 else lines[0]  # torch's first line only heads its list
        raise ConfigError(f"--resume: the checkpoint does not fit this config ({detail})") from None
    if trainer.collected_frames >= trainer.total_frames:
        warnings.warn(
            f"the run has {trainer.collected_frames} frames, trainer.total_frames is {trainer.total_frames}: nothing is left to train "
            "(raise it: --frames N)",
            stacklevel=3,
        )
    return path


def _add_loggers(trainer: Trainer, config: Mapping[str, Any], run_dir: Path, pm: PluginManager, resumed: bool) -> None:
    """Create the run's loggers (they write files: only once the run is built) and record the config."""
    hparams = flatten(config)
    for name, options in config["loggers"].items():
        if options is None:
            continue
        factory = pm.factory("loggers", name)
        with pm.making("loggers", name) as who:  # (who provides it, for the messages)
            label = name if who.endswith("(rl-core)") else f"{name} of {who}"
        logger = trainer.guard(partial(factory, exp_name=run_dir.name, log_dir=run_dir, **options), label)
        trainer.loggers.append(logger)
        setup = config["trainer"]["logger_setup_timeout"]
        if not logger.wait(setup):  # its set-up, within its deadline
            trainer.drop_logger(logger, f"was not set up within {setup:g} s (trainer.logger_setup_timeout)")
            continue
        problem = logger.problem()
        if problem is not None:
            trainer.drop_logger(logger, f"could not be set up ({problem.removeprefix('failed: ')})")
            continue
        if resumed:
            logger.resume(trainer.collected_frames)
        logger.log_hparams(hparams)


def check_fits(config: Mapping[str, Any], pm: PluginManager) -> None:
    """Build one env and the algorithm's loss module of a resolved config, then drop them.

    What ``rlctl config show`` checks beyond the config's keys: an env the algorithm cannot train on
    (``dqn`` on a ``Box`` action space) is refused here, as ``rlctl train`` would refuse it.

    :raises ConfigError: naming the key whose value does not fit.
    """
    _, env, _ = build_parts(config, pm, num_envs=1)
    env.close()


def build_parts(config: Mapping[str, Any], pm: PluginManager, num_envs: int | None = None) -> tuple[Any, Any, Any]:
    """The env factory, the env and the algorithm's loss module of a resolved config."""
    env_cfg = config["env"]
    make_env = partial(
        make_vector_env,
        env_cfg["id"],
        vectorization=env_cfg["vectorization"],
        wrappers=env_cfg["wrappers"],
        plugin_manager=pm,
    )
    env = make_env(num_envs or env_cfg["num_envs"], kwargs=env_cfg["kwargs"])
    try:
        loss_module = build_loss_module(config, pm, env.single_observation_space, env.single_action_space)
    except BaseException:
        env.close()  # (an async env's workers with it)
        raise
    return make_env, env, loss_module


def build_loss_module(config: Mapping[str, Any], pm: PluginManager, observation_space: Any, action_space: Any, device: str | None = None) -> Any:
    """The loss module of a resolved config's algorithm for these (wrapped) spaces, on ``device`` (default ``trainer.device``)."""
    algorithm = pm.factory("algorithms", config["algo"]["name"])
    target = torch.device(device or config["trainer"]["device"])
    with pm.making("algorithms", algorithm.name):
        built = algorithm.build(
            config={k: v for k, v in config["algo"].items() if k != "name"},
            observation_space=observation_space,
            action_space=action_space,
            device=target,
        )
    return built.to(target)


def load_checkpoint(
    run_dir: str | os.PathLike[str], checkpoint: str | os.PathLike[str] | None = None, plugin_manager: PluginManager | None = None
) -> tuple[Path, dict[str, Any]]:
    """A run's checkpoint and its state, read and checked by the backend its ``config.yaml`` names.

    :param run_dir: the run directory.
    :param checkpoint: a checkpoint of the run; default its newest readable one.
    :param plugin_manager: where the backend is looked up (default: the installed plugins).
    :return: the checkpoint's path and its state (``loss_module``, ``optimizer``, ``modules``, ``collector``, ``counters``, ...).
    :raises CheckpointError: when it (or every checkpoint) is unreadable.
    """
    run_dir = Path(run_dir)
    options = read_config_file(run_dir / CONFIG_FILE).get("checkpoint") or {}
    config = {"checkpoint": {"backend": options.get("backend", "torch"), "keep_last": options.get("keep_last", 1)}}
    return make_backend(config, run_dir, plugin_manager or get_plugin_manager()).load(checkpoint)


def make_backend(config: Mapping[str, Any], run_dir: Path, pm: PluginManager) -> CheckpointBackend:
    """The checkpoint backend of ``config`` (``checkpoint.backend``), on the run directory's ``checkpoints/``."""
    options = config["checkpoint"]
    with pm.making("checkpoint_backends", options["backend"]):
        return pm.factory("checkpoint_backends", options["backend"])(directory=run_dir / CHECKPOINTS, keep_last=options["keep_last"])


def freeze(env: Any) -> None:
    """Stop the statistics of ``env``'s wrappers from moving (``training = False``): an evaluation env's."""
    for layer in env_layers(env):
        if hasattr(layer, "training"):
            layer.training = False


def _frozen_env(make_env: Any, train_env: Any, kwargs: Mapping[str, Any], num_envs: int = 1, **env_kwargs: Any) -> Any:
    """A new env like the training one, its wrappers' statistics copied and frozen."""
    env = make_env(num_envs, kwargs={**kwargs, **env_kwargs})
    load_env_states(env, env_states(train_env))
    freeze(env)
    return env
