"""The old torchrl train() controls (stop criteria), its Logger's averaging and histograms, TorchRL's small helpers,
and per-hook profiling (issue #15, the kernel's part)."""

from __future__ import annotations

import csv
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import rlcore
from rlcore_testing import MemoryLogger, make_trainer


class Episodes:
    """Records, after each batch, how many episodes have ended so far."""

    def __init__(self) -> None:
        self.seen: list[int] = []

    @rlcore.hookimpl
    def rl_post_steps(self, trainer: rlcore.Trainer) -> None:
        self.seen.append(trainer.episodes)


def test_max_batches_stops_exactly_and_counts_on_after_a_resume(tmp_path):
    trainer = make_trainer(tmp_path, total_frames=10**9, max_batches=3, save_trainer_interval=32)
    trainer.train()
    assert (trainer.batches, trainer.collected_frames) == (3, 96)
    resumed = make_trainer(tmp_path, total_frames=10**9, max_batches=5)
    resumed.load_from_file()
    resumed.train()
    assert (resumed.batches, resumed.collected_frames) == (5, 160)


def test_max_episodes_stops_after_the_batch_where_the_last_one_ended(tmp_path):
    episodes = Episodes()
    trainer = make_trainer(tmp_path, plugins=[episodes], total_frames=10**9, max_episodes=12)
    trainer.train()
    assert episodes.seen[-1] >= 12 > episodes.seen[-2]
    assert trainer.episodes == episodes.seen[-1] == sum(1 for _ in range(episodes.seen[-1]))


@pytest.mark.parametrize(
    ("limits", "batches", "reason"),
    [({"max_batches": 2, "max_episodes": 10**6}, 2, "trainer.max_batches=2"), ({"max_batches": 100}, 4, None)],
)
def test_the_first_criterion_met_wins_and_is_the_reason(tmp_path, limits, batches, reason):
    trainer = make_trainer(tmp_path, total_frames=128, **limits)
    trainer.train()
    assert (trainer.batches, trainer.stop_reason) == (batches, reason)  # (total_frames: no reason, the run ran its course)


def test_the_run_says_why_it_stopped_before_its_frames(tmp_path, capsys):
    from rlcore._app.cli import main

    pytest.importorskip("rl_plugin_pg")
    with pytest.raises(SystemExit) as exited:
        main(["train", "--algo", "ppo", "--out", str(tmp_path / "run"), "--set", "trainer.max_batches=2", "--set", "loggers.console=null"])
    assert exited.value.code == 0
    assert capsys.readouterr().err.splitlines()[-1] == f"rlctl: 512 frames, run directory {tmp_path / 'run'} (stopped: trainer.max_batches=2)"


def test_stop_criteria_from_the_config(tmp_path):
    pytest.importorskip("rl_plugin_pg")
    config = rlcore.load_config(algo={"name": "ppo"}, overrides=["trainer.max_batches=2", "loggers.console=null"])
    trainer = rlcore.build_trainer(config, run_dir=tmp_path / "run")
    trainer.train()
    assert trainer.batches == 2 and trainer.collected_frames == 2 * config["collector"]["frames_per_batch"]


class Logs:
    """Logs, at every optimisation step, the step's number and a tensor of several values."""

    @rlcore.hookimpl
    def rl_post_optim_log(self, trainer: rlcore.Trainer) -> dict[str, object]:
        return {"step": trainer.optim_steps, "weights": torch.arange(6.0) + trainer.optim_steps, "scalar_array": np.array([2.5])}


def test_values_logged_within_log_interval_are_averaged_not_thinned(tmp_path):
    memory = MemoryLogger()
    make_trainer(tmp_path, plugins=[Logs()], loggers=[memory], log_interval=64, total_frames=256).train()
    # 2 optimisation steps a batch of 32 frames: step 1 logged at 32, steps 2..5 averaged at 96, 6..9 at 160, ...,
    # and the steps after the last point (14..16) at the end of the run, not lost
    assert memory.values["step"] == [(32, 1.0), (96, 3.5), (160, 7.5), (224, 11.5), (256, 15.0)]
    assert memory.values["scalar_array"][0] == (32, 2.5)


def test_a_tensor_from_a_logging_hook_is_a_histogram(tmp_path):
    memory = MemoryLogger()
    make_trainer(tmp_path, plugins=[Logs()], loggers=[memory], total_frames=64).train()
    steps = [step for step, _ in memory.histograms["weights"]]
    assert steps == [32, 64] and torch.equal(torch.as_tensor(memory.histograms["weights"][0][1]), torch.arange(6.0) + 1)
    assert "weights" not in memory.values


def test_a_histogram_reaches_tensorboard(tmp_path):
    pytest.importorskip("rl_plugin_tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    factory = rlcore.get_plugin_manager().factory("loggers", "tensorboard")
    make_trainer(tmp_path, plugins=[Logs()], loggers=[factory(exp_name="h", log_dir=tmp_path)], total_frames=64).train()
    events = EventAccumulator(str(tmp_path / "tensorboard"), size_guidance={"histograms": 0})
    events.Reload()
    assert [h.step for h in events.Histograms("weights")] == [32, 64]
    assert events.Histograms("weights")[0].histogram_value.num == 6


def test_correct_for_frame_skip_divides_the_counts_of_collected_steps(tmp_path):
    pytest.importorskip("rl_plugin_pg")
    config = rlcore.load_config(algo={"name": "ppo"}, overrides=["trainer.frame_skip=4", "trainer.total_frames=100000", "collector.frames_per_batch=256"])
    config["hooks"]["evaluation"] = {"record_frames": 1000}
    corrected = rlcore.correct_for_frame_skip(config)
    assert corrected["collector"]["frames_per_batch"] == 64 and corrected["hooks"]["evaluation"]["record_frames"] == 250
    assert corrected["trainer"]["total_frames"] == 100_000 and corrected["trainer"]["frame_skip"] == 4  # the trainer's clock
    assert config["collector"]["frames_per_batch"] == 256  # a copy
    small = rlcore.load_config(
        algo={"name": "ppo", "epochs": 1, "hidden_sizes": [8]},
        env={"num_envs": 4},
        collector={"frames_per_batch": 256},
        trainer={"frame_skip": 4, "total_frames": 2048, "progress_bar": False},
        loggers={"console": None},
    )
    trainer = rlcore.build_trainer(rlcore.correct_for_frame_skip(small), run_dir=tmp_path)
    trainer.train()  # batches of 64 steps, 256 frames: total_frames frames in 8 batches
    assert trainer.batches == 8 and trainer.collected_frames == 2048


def test_get_stats_random_rollout_matches_a_hand_rollout():
    stats = rlcore.get_stats_random_rollout("CartPole-v1", steps=300, seed=3)
    env = rlcore.make_vector_env("CartPole-v1", 1)
    obs, _ = env.reset(seed=3)
    env.action_space.seed(3)
    seen = np.concatenate([obs, *(env.step(env.action_space.sample())[0] for _ in range(300))])
    assert torch.allclose(stats["loc"], torch.as_tensor(seen.mean(0), dtype=torch.float32), atol=1e-6)
    assert torch.allclose(stats["scale"], torch.as_tensor(seen.std(0), dtype=torch.float32), atol=1e-6)


def test_get_stats_random_rollout_leaves_a_constant_dimension_as_it_is():
    import gymnasium

    class Flagged(gymnasium.Env):  # a moving dimension and a flag that never lights in a random rollout
        observation_space = gymnasium.spaces.Box(-1.0, 1.0, (2,), np.float32)
        action_space = gymnasium.spaces.Discrete(2)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            return np.array([0.0, 0.0], dtype=np.float32), {}

        def step(self, action):
            return np.array([self.np_random.uniform(-1, 1), 0.0], dtype=np.float32), 0.0, False, False, {}

    stats = rlcore.get_stats_random_rollout(gymnasium.vector.SyncVectorEnv([Flagged]), steps=200, seed=0)
    assert stats["scale"][1] == 1.0 and stats["loc"][1] == 0.0  # (1 / eps would make a lit flag 1e4)
    assert 0.4 < stats["scale"][0] < 0.7 and abs(stats["loc"][0]) < 0.2  # the moving one, normalised


@pytest.mark.slow
def test_profile_accounts_for_the_loop_and_logs_perf_values(tmp_path, capsys):
    pytest.importorskip("rl_plugin_pg")
    config = rlcore.load_config(
        algo={"name": "ppo"}, overrides=["trainer.total_frames=8192", "trainer.profile=true", "loggers.console=null", "trainer.seed=0"]
    )
    trainer = rlcore.build_trainer(config, run_dir=tmp_path / "run")
    trainer.train()
    table = capsys.readouterr().err
    rows = [line.split(" | ") for line in table.splitlines() if line.startswith("| ") and "---" not in line and "where" not in line]
    seconds = {(where.strip("| "), what): float(s) for where, what, s, _ in rows}
    tracked = sum(s for (where, what), s in seconds.items() if "untracked" not in what)
    assert tracked >= 0.93 * trainer.profiler.wall, table  # the rows explain the loop's time (about 97% on a quiet machine)
    assert abs(sum(seconds.values()) - trainer.profiler.wall) < 0.01, table
    for row in [("rl-core", "collection"), ("rl-core", "loss forward"), ("rl-core", "backward"), ("rl-core", "optimizer step"), ("rl-core", "checkpoint")]:
        assert seconds[row] > 0, row
    assert ("rlcore.loss_module", "rl_batch_process") in seconds  # PPO's advantages, by its plugin name
    with open(Path(tmp_path / "run" / "metrics.csv"), newline="") as handle:
        names = {row["name"] for row in csv.DictReader(handle)}
    assert {"perf/time/collection", "perf/time/backward", "perf/time/rlcore.loss_module/batch_process"} <= names


def test_total_frames_below_one_batch_is_said_to_collect_the_whole_batch(tmp_path):
    pytest.importorskip("rl_plugin_pg")
    config = rlcore.load_config(algo={"name": "ppo"}, overrides=["trainer.total_frames=100", "collector.frames_per_batch=64", "env.num_envs=4"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # more than a batch: nothing to say
        rlcore.build_trainer(config, run_dir=tmp_path / "run").shutdown()
    config = rlcore.load_config(algo={"name": "ppo"}, overrides=["trainer.total_frames=30", "collector.frames_per_batch=64", "env.num_envs=4"])
    with pytest.warns(UserWarning, match=r"^trainer.total_frames: 30 is less than one batch: the run collects a whole batch, 64 frames"):
        trainer = rlcore.build_trainer(config, run_dir=tmp_path / "small")
    trainer.train()
    assert trainer.collected_frames == 64


class Sleeps(rlcore.TrainerHookBase):
    """An op that sleeps 10 ms a batch, at post_steps."""

    def register(self, trainer: rlcore.Trainer, name: str) -> None:
        trainer.register_op("post_steps", lambda: time.sleep(0.01))

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state_dict: dict) -> None:
        pass


def test_profile_gives_each_hooks_ops_a_row_of_their_own(tmp_path):
    """A TorchRL-style hook's ops are timed under its name; what pluggy takes around them is the row of the hook calls."""
    trainer = make_trainer(tmp_path, hooks={"sleeps": Sleeps()}, profile=True, total_frames=128)
    trainer.register_op("post_steps", lambda: None)  # registered from Python: named by the op
    trainer.train()
    rows = {(where, what): seconds for where, what, seconds in trainer.profiler.rows()}
    assert 0.04 <= rows[("hooks.sleeps", "rl_post_steps")] < 0.2  # 4 batches of 10 ms
    assert rows[("op test_profile_gives_each_hooks_ops_a_row_of_their_own.<locals>.<lambda>", "rl_post_steps")] < 0.01
    assert rows[("rl-core", "hook calls")] < 0.04  # the sleeps are none of pluggy's
