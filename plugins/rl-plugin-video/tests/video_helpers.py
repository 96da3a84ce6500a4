"""Helpers of the tests: a tiny real policy and loss, real CartPole envs, and a trainer with the plugin's hooks."""

from __future__ import annotations

import csv
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tensordict import TensorDict
from tensordict.nn import ProbabilisticTensorDictModule, ProbabilisticTensorDictSequential, TensorDictModule
from torch import nn

import rlcore
from rlcore import make_vector_env

ENV_ID = "CartPole-v1"


class TinyLoss(nn.Module):
    """A categorical policy on a linear layer, and a loss that only shrinks its logits."""

    def __init__(self, observations: int = 4, actions: int = 2) -> None:
        super().__init__()
        self.net = nn.Linear(observations, actions)
        self.policy = ProbabilisticTensorDictSequential(
            TensorDictModule(self.net, in_keys=["observation"], out_keys=["logits"]),
            ProbabilisticTensorDictModule(
                in_keys=["logits"], out_keys=["action"], distribution_class=torch.distributions.Categorical, return_log_prob=True
            ),
        )

    def forward(self, batch: TensorDict) -> TensorDict:
        return TensorDict({"loss_logits": self.net(batch["observation"]).pow(2).mean()}, batch_size=[])


class TinyAlgorithm:
    """Contributes the ``tiny`` algorithm: :class:`TinyLoss` on the env's spaces."""

    @rlcore.hookimpl
    def rl_register_algorithms(self) -> list[rlcore.Algorithm]:
        def build(config: Any, observation_space: Any, action_space: Any, device: Any) -> TinyLoss:
            return TinyLoss(observation_space.shape[0], int(action_space.n))

        return [rlcore.Algorithm("tiny", build=build)]


class VideoListLogger(rlcore.Logger):
    """A logger that takes videos and keeps what it was given (name, shape, step, fps) in memory."""

    supports_video = True

    def __init__(self, exp_name: str = "test", log_dir: str | Path = ".") -> None:
        super().__init__(exp_name, log_dir)
        self.videos: list[tuple[str, tuple[int, ...], int, int]] = []

    def log_scalar(self, name: str, value: float, step: int) -> None:
        pass

    def log_video(self, name: str, video: Any, step: int, fps: int = 30) -> None:
        assert video.dtype == np.uint8
        self.videos.append((name, tuple(video.shape), step, fps))


def make_env(num_envs: int = 1, **env_kwargs: Any) -> Any:
    """A CartPole vector env in the collector's autoreset mode; ``env_kwargs`` go to the env."""
    return make_vector_env(ENV_ID, num_envs, kwargs=env_kwargs)


def build_trainer(
    run_dir: Path,
    hooks: Mapping[str, Mapping[str, Any]],
    *,
    num_envs: int = 2,
    frames_per_batch: int = 32,
    total_frames: int = 128,
    env_kwargs: Mapping[str, Any] | None = None,
    plugins: tuple[Any, ...] = (),
    loggers: tuple[rlcore.Logger, ...] = (),
    with_make_env: bool = True,
    checkpoint: bool = False,
    seed: int = 0,
) -> tuple[rlcore.Trainer, dict[str, Any]]:
    """A trainer on CartPole with the ``csv`` logger and this plugin's ``hooks`` built from their factories,
    as the run builder does with the config's ``hooks`` section.

    With ``checkpoint``, the builtin ``torch`` backend saves to ``RUN_DIR/checkpoints``.

    :return: the trainer and the hooks by name.
    """
    pm = rlcore.get_plugin_manager(only=["rl-plugin-video"])
    loss = TinyLoss()
    env = make_env(num_envs, **dict(env_kwargs or {}))
    collector = rlcore.Collector(env, loss.policy, frames_per_batch)
    csv_logger = rlcore.get_logger("csv", exp_name="test", log_dir=run_dir, plugin_manager=pm)
    trainer = rlcore.Trainer(
        collector=collector,
        loss_module=loss,
        optimizer=torch.optim.SGD(loss.parameters(), lr=0.01),
        total_frames=total_frames,
        progress_bar=False,
        seed=seed,
        log_interval=1,
        loggers=[csv_logger, *loggers],
        plugin_manager=pm,
        run_dir=run_dir,
        checkpoint=pm.factory("checkpoint_backends", "torch")(directory=run_dir / "checkpoints", keep_last=2) if checkpoint else None,
    )
    if with_make_env:
        trainer.make_env = make_env
    built = {}
    for name, options in hooks.items():
        hook = pm.factory("hooks", name)(**options)
        hook.register(trainer, name)
        built[name] = hook
    for plugin in plugins:
        trainer.register_plugin(plugin)
    return trainer, built


def read_metrics(run_dir: Path, name: str) -> list[tuple[int, float]]:
    """``(frames, value)`` of every row of ``RUN_DIR/metrics.csv`` named ``name``."""
    with open(run_dir / "metrics.csv", newline="", encoding="utf-8") as file:
        return [(int(row["frames"]), float(row["value"])) for row in csv.DictReader(file) if row["name"] == name]


def decode(path: Path) -> np.ndarray:
    """Every frame of an mp4 file, decoded by imageio's ffmpeg plugin: ``[time, height, width, 3]``."""
    import imageio.v3 as iio

    return iio.imread(path, plugin="FFMPEG")
