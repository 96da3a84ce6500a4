"""Building a trainer from a resolved config: env, algorithm, collector, optimizer, loggers, hooks, checkpoints."""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

import torch

from ._checkpoint import CheckpointBackend
from ._collector import Collector
from ._config import CONFIG_FILE, dump_config, flatten, resolve_config
from ._envs import env_states, load_env_states, make_vector_env
from ._logger import generate_exp_name
from ._markers import hookimpl
from ._plugins import PluginManager, get_plugin_manager
from ._trainer import Trainer, TrainerHookBase


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
        for group in trainer.optimizer.param_groups:
            group["lr"] = lr


class EnvState:
    """Checkpoints the state of the training env's wrappers (normalisation statistics)."""

    def __init__(self, env: Any) -> None:
        self.env = env

    def state_dict(self) -> dict[str, Any]:
        return env_states(self.env)

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        load_env_states(self.env, state)


def make_optimizer(options: Mapping[str, Any], params: Any) -> torch.optim.Optimizer:
    """An optimizer from the ``optim`` section (Adam and AdamW fused, on CPU as on GPU)."""
    kwargs: dict[str, Any] = {"lr": options["lr"], "weight_decay": options["weight_decay"]}
    name = options["name"]
    if name in ("adam", "adamw", "rmsprop"):
        kwargs["eps"] = options["eps"]
    if name in ("adam", "adamw"):
        kwargs["fused"] = True  # one kernel for all parameters: ~4x faster steps for small networks
    cls = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW, "sgd": torch.optim.SGD, "rmsprop": torch.optim.RMSprop}[name]
    return cls(params, **kwargs)


def default_run_dir(config: Mapping[str, Any]) -> Path:
    """``runs/<algo>_<env>_<time>_<id>``."""
    env = str(config["env"]["id"]).split("/")[-1]
    return Path("runs") / generate_exp_name(f"{config['algo']['name']}_{env}")


def build_trainer(
    config: Mapping[str, Any],
    run_dir: str | Path | None = None,
    plugin_manager: PluginManager | None = None,
) -> Trainer:
    """Build the trainer of a run and write its resolved config to ``RUN_DIR/config.yaml``.

    :param config: a config (resolved or partial: defaults fill the rest, see :func:`rlcore.load_config`).
    :param run_dir: the run directory; default ``runs/<algo>_<env>_<time>_<id>``.
    :param plugin_manager: the run's plugins (default: the installed ones).
    """
    pm = plugin_manager or get_plugin_manager()
    config = resolve_config(config, pm)
    trainer_cfg, env_cfg = config["trainer"], config["env"]
    if trainer_cfg["seed"] is None:
        trainer_cfg["seed"] = random.randrange(2**31)
    run_dir = Path(run_dir) if run_dir is not None else default_run_dir(config)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / CONFIG_FILE).write_text(dump_config(config), encoding="utf-8")
    torch.manual_seed(trainer_cfg["seed"])
    if trainer_cfg["num_threads"] is not None:
        torch.set_num_threads(trainer_cfg["num_threads"])

    make_env, env, loss_module = _build_parts(config, pm)
    device = torch.device(trainer_cfg["device"])
    collector = Collector(env, loss_module.policy, config["collector"]["frames_per_batch"], device=device)
    optimizer = make_optimizer(config["optim"], loss_module.parameters())
    exp_name = run_dir.name
    loggers = [
        pm.factory("loggers", name)(exp_name=exp_name, log_dir=run_dir, **options)
        for name, options in config["loggers"].items()
        if options is not None
    ]
    backend = _backend(config, run_dir, pm)
    steps = trainer_cfg["optim_steps_per_batch"] or getattr(loss_module, "optim_steps_per_batch", 1)
    trainer = Trainer(
        collector=collector,
        loss_module=loss_module,
        optimizer=optimizer,
        total_frames=trainer_cfg["total_frames"],
        frame_skip=trainer_cfg["frame_skip"],
        optim_steps_per_batch=steps,
        clip_grad_norm=trainer_cfg["clip_grad_norm"],
        clip_norm=trainer_cfg["clip_norm"],
        progress_bar=trainer_cfg["progress_bar"],
        seed=trainer_cfg["seed"],
        save_trainer_interval=trainer_cfg["save_trainer_interval"],
        log_interval=trainer_cfg["log_interval"],
        loggers=loggers,
        checkpoint=backend,
        plugin_manager=pm,
        run_dir=run_dir,
        config=config,
        device=device,
    )
    trainer.make_env = partial(_frozen_env, make_env, env, env_cfg["kwargs"])
    if env_states(env):
        trainer.register_module("env", EnvState(env))
    if config["optim"]["lr_schedule"] != "constant":
        trainer.register_plugin(LRSchedule(config["optim"]["lr_schedule"], config["optim"]["lr"], config["optim"]["lr_end"]), "rlcore.lr_schedule")
    for name, options in config["hooks"].items():
        if options is None:
            continue
        hook = pm.factory("hooks", name)(**options)
        if isinstance(hook, TrainerHookBase):
            hook.register(trainer, name)
        else:
            trainer.register_plugin(hook, name)
    hparams = flatten(config)
    for logger in loggers:
        logger.log_hparams(hparams)
    return trainer


def _build_parts(config: Mapping[str, Any], pm: PluginManager, num_envs: int | None = None) -> tuple[Any, Any, Any]:
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
    algorithm = pm.factory("algorithms", config["algo"]["name"])
    device = torch.device(config["trainer"]["device"])
    loss_module = algorithm.build(
        config={k: v for k, v in config["algo"].items() if k != "name"},
        observation_space=env.single_observation_space,
        action_space=env.single_action_space,
        device=device,
    ).to(device)
    return make_env, env, loss_module


def _backend(config: Mapping[str, Any], run_dir: Path, pm: PluginManager) -> CheckpointBackend:
    options = config["checkpoint"]
    return pm.factory("checkpoint_backends", options["backend"])(directory=run_dir / "checkpoints", keep_last=options["keep_last"])


def _freeze(env: Any) -> None:
    while env is not None:
        if hasattr(env, "training"):
            env.training = False
        env = getattr(env, "env", None)


def _frozen_env(make_env: Any, train_env: Any, kwargs: Mapping[str, Any], num_envs: int = 1, **env_kwargs: Any) -> Any:
    """A new env like the training one, its wrappers' statistics copied and frozen."""
    env = make_env(num_envs, kwargs={**kwargs, **env_kwargs})
    load_env_states(env, env_states(train_env))
    _freeze(env)
    return env
