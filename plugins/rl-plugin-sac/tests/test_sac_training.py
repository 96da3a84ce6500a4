"""Short SAC runs on Pendulum: every metric is logged, the temperature moves, evaluation is deterministic; from pixels."""

from __future__ import annotations

import csv

import pytest
import torch

import rlcore


@pytest.mark.slow
def test_a_short_run_logs_every_metric(tmp_path):
    torch.set_num_threads(1)
    config = rlcore.load_config(
        overrides=[
            "algo.name=sac",
            "trainer.total_frames=400",
            "trainer.seed=2",
            "trainer.progress_bar=false",
            "trainer.log_interval=50",
            "loggers.console=null",
            "algo.hidden_sizes=[32, 32]",
            "algo.init_random_frames=100",
            "algo.n_step=2",
            "hooks.replay_buffer.batch_size=64",
            "hooks.replay_buffer.sampler=prioritized",
        ]
    )
    trainer = rlcore.build_trainer(config, run_dir=tmp_path)
    trainer.train()
    logged: dict[str, list[float]] = {}
    with open(tmp_path / "metrics.csv", newline="") as handle:
        for row in csv.DictReader(handle):
            logged.setdefault(row["name"], []).append(float(row["value"]))
    for name in (
        "loss/qvalue",
        "loss/actor",
        "loss/alpha",
        "train/alpha",
        "train/entropy",
        "train/q_value",
        "train/td_error",
        "train/buffer_size",
        "train/update_to_data",
        "train/episode_return",
        "perf/fps",
    ):
        assert name in logged, name
    assert trainer.optim_steps == 400 - 100 + 1  # one step per frame once 100 frames are collected
    assert logged["train/alpha"][-1] < 1.0  # the temperature is learned
    assert trainer.loss_module.target_critic.state_dict()["weight1"].ne(trainer.loss_module.critic.weight1.detach()).any()
    env = trainer.make_env(num_envs=1)
    runs = [rlcore.evaluate(trainer.loss_module.policy, env, episodes=1, seed=3)["returns"] for _ in range(2)]
    assert runs[0] == runs[1]


@pytest.mark.slow
def test_sac_from_pixels(tmp_path):
    """Pendulum's rendered frames as the observation (Gymnasium's AddRenderObservation, resized): a CNN, the buffer keeps uint8."""
    for module in ("cv2", "pygame", "rl_plugin_envs"):
        pytest.importorskip(module)
    torch.set_num_threads(1)
    config = rlcore.load_config(
        algo={"name": "sac", "hidden_sizes": [32], "init_random_frames": 64, "cnn_features": 32},
        env={
            "kwargs": {"render_mode": "rgb_array"},
            "wrappers": {"gymnasium.wrappers.AddRenderObservation": {"render_only": True}, "resize": {"height": 40, "width": 40}},
        },
        trainer={"total_frames": 160, "seed": 2, "progress_bar": False},
        hooks={"replay_buffer": {"capacity": 1000, "batch_size": 16}},
        loggers={"console": None},
    )
    trainer = rlcore.build_trainer(config, run_dir=tmp_path)
    trainer.train()
    assert trainer.collected_frames == 160 and type(trainer.loss_module.critic.encoder).__name__ == "CNN"
    stored = trainer.modules["replay_buffer"].replay_buffer.storage.column("observation")
    assert stored.dtype == torch.uint8 and stored.shape[1:] == (40, 40, 3)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("algo", "env_id", "encoder", "frames"),
    [("sac", "PixelBanditContinuous-v0", "CNN", 1500), ("sac", "DictBanditContinuous-v0", "MultiInputEncoder", 2000),
     ("td3", "DictBanditContinuous-v0", "MultiInputEncoder", 2000)],
)  # fmt: skip
def test_an_actor_learns_to_read_its_observations_through_the_encoder(tmp_path, algo, env_id, encoder, frames):
    """On PixelBanditContinuous the side of a lit block sets the best action (-0.5 or 0.5), on DictBanditContinuous the
    side swapped by the flag of the Dict observation's other entry: only an actor that reads all of its observation earns
    about 1 an episode, where acting 0 earns 0.5."""
    pytest.importorskip(f"rl_plugin_{algo}")
    torch.set_num_threads(1)
    config = rlcore.load_config(
        algo={"name": algo, "hidden_sizes": [32], "init_random_frames": 64, "cnn_features": 32},
        env={"id": f"rlcore_testing.envs:{env_id}"},
        trainer={"total_frames": frames, "seed": 2, "progress_bar": False},
        hooks={"replay_buffer": {"capacity": 4000, "batch_size": 32}},
        loggers={"console": None},
    )
    trainer = rlcore.build_trainer(config, run_dir=tmp_path)
    assert type(trainer.loss_module.critic.encoder).__name__ == encoder
    trainer.train()
    env = trainer.make_env(num_envs=1)
    returns = rlcore.evaluate(trainer.loss_module.policy, env, episodes=40, seed=1)["returns"]
    env.close()
    assert sum(returns) / 40 >= 0.85, returns
