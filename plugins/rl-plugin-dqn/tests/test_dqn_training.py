"""Short DQN runs: every metric is logged, the variants run, evaluation is greedy."""

from __future__ import annotations

import csv

import numpy as np
import pytest
import torch

import rlcore

SMALL = [
    "algo.hidden_sizes=[32, 32]",
    "collector.frames_per_batch=128",
    "trainer.optim_steps_per_batch=16",
    "algo.init_random_frames=256",
    "algo.eps_annealing_frames=1024",
    "hooks.target_updater.interval=32",
]


def train(tmp_path, frames: int, *overrides: str):
    torch.set_num_threads(1)
    config = rlcore.load_config(
        overrides=[
            "algo.name=dqn",
            f"trainer.total_frames={frames}",
            "trainer.seed=3",
            "trainer.progress_bar=false",
            "loggers.console=null",
            *SMALL,
            *overrides,
        ]
    )
    trainer = rlcore.build_trainer(config, run_dir=tmp_path)
    trainer.train()
    return trainer


def metrics(run_dir) -> dict[str, list[float]]:
    found: dict[str, list[float]] = {}
    with open(run_dir / "metrics.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            found.setdefault(row["name"], []).append(float(row["value"]))
    return found


def test_a_short_run_logs_every_metric(tmp_path):
    trainer = train(tmp_path, 1024)
    logged = metrics(tmp_path)
    for name in (
        "loss/q",
        "train/q_value",
        "train/td_error",
        "train/target_value",
        "train/epsilon",
        "train/buffer_size",
        "train/update_to_data",
        "train/episode_return",
        "perf/fps",
        "optim/grad_norm",
        "optim/lr",
    ):
        assert name in logged, name
    assert logged["train/buffer_size"][-1] == 1024 - 2  # three-step transitions: the last two steps wait for the next batch
    # update-to-data: 0 while init_random_frames are collected, then 16 steps per 128 frames
    assert logged["train/update_to_data"][0] == 0 and logged["train/update_to_data"][-1] == 16 / 128
    assert logged["train/epsilon"][-1] == pytest.approx(0.04)
    assert trainer.optim_steps == 16 * (1024 - 256) // 128 + 16
    assert np.isfinite(logged["loss/q"]).all()


def test_prioritized_n_step_dueling_run(tmp_path):
    trainer = train(
        tmp_path,
        768,
        "hooks.replay_buffer.sampler=prioritized",
        "hooks.replay_buffer.beta_end=1.0",
        "algo.n_step=3",
        "algo.dueling=true",
        "algo.loss=mse",
    )
    hook = trainer.modules["replay_buffer"]
    assert hook.nstep is not None and hook.nstep.n == 3  # read from algo.n_step
    assert len(hook.replay_buffer) == 768 - 2  # each env's last n - 1 steps wait for the next batch
    leaves = hook.replay_buffer.sampler.tree.leaves[: len(hook.replay_buffer)]
    assert len(set(leaves.tolist())) > 100  # priorities from TD errors
    assert "train/beta" in metrics(tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize(("env_id", "encoder"), [("PixelBandit-v0", "CNN"), ("DictBandit-v0", "MultiInputEncoder")])
def test_dqn_learns_to_read_its_observations_through_the_encoder(tmp_path, env_id, encoder):
    """On PixelBandit the side of a lit block decides the reward, on DictBandit the side swapped by the flag of the Dict
    observation's other entry: only a Q-network that reads all of its observation beats chance (0.5)."""
    trainer = train(tmp_path, 3072, f"env.id=rlcore_testing.envs:{env_id}")
    assert type(trainer.loss_module.qnet.encoder).__name__ == encoder
    env = trainer.make_env(num_envs=1)
    returns = rlcore.evaluate(trainer.loss_module.policy, env, episodes=40, seed=1)["returns"]
    env.close()
    assert sum(returns) / 40 >= 0.9, returns


def test_evaluation_is_deterministic(tmp_path):
    trainer = train(tmp_path, 512)
    env = trainer.make_env(num_envs=1)
    runs = [rlcore.evaluate(trainer.loss_module.policy, env, episodes=3, seed=7)["returns"] for _ in range(2)]
    assert runs[0] == runs[1]


def test_minatar_images_get_the_cnn_and_the_buffer_keeps_them_small(tmp_path):
    pytest.importorskip("minatar")
    trainer = train(tmp_path, 512, "env.id=MinAtar/Breakout-v1")
    assert type(trainer.loss_module.qnet.encoder).__name__ == "CNN"
    stored = trainer.modules["replay_buffer"].replay_buffer.storage.column("observation")
    assert stored.dtype == torch.bool and stored.shape[1:] == (10, 10, 4)  # frames as the env gives them, scaled in the CNN
