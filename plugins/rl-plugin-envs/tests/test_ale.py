"""ale-py's AtariVectorEnv as a vectorization: the id's settings, the collector's batches, truncation and episodes, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from envs_helpers import RandomPolicy, make

import rlcore
from rlcore_testing import run_rlctl

pytest.importorskip("ale_py", reason="Atari envs need ale-py")


def test_the_ids_settings_and_env_kwargs_make_the_vector_env() -> None:
    from rl_plugin_envs._ale import ale_options

    options = ale_options("ALE/Pong-v5", {"stack_num": 2})
    assert options == {
        "game": "pong", "repeat_action_probability": 0.25, "full_action_space": False, "max_num_frames_per_episode": 108_000,
        "reward_clipping": False, "stack_num": 2,
    }  # fmt: skip
    env = make("ALE/Pong-v5", 2, vectorization="ale", kwargs={"stack_num": 2})
    assert env.metadata["autoreset_mode"].name == "SAME_STEP" and env.single_action_space.n == 6  # the minimal action set
    obs, _ = env.reset(seed=0)
    assert obs.shape == (2, 2, 84, 84) and obs.dtype == np.uint8
    env.close()


def test_the_collector_counts_episodes_and_keeps_truncation_apart() -> None:
    env = make("ALE/Pong-v5", 2, vectorization="ale", kwargs={"max_num_frames_per_episode": 80, "noop_max": 0})  # 20 steps of 4 frames
    collector = rlcore.Collector(env, RandomPolicy(6), frames_per_batch=100)
    collector.set_seed(0)
    batch = collector.collect()
    assert batch.batch_size == (2, 50) and batch["observation"].dtype.is_floating_point is False
    truncated, terminated = batch["next", "truncated"][..., 0], batch["next", "terminated"][..., 0]
    assert truncated.any() and not terminated.any()  # a random Pong policy loses no game in 20 steps
    _, lengths = collector.finished_episodes
    assert len(lengths) == int(truncated.sum()) and set(lengths.tolist()) <= {20, 21}
    env_i, t = map(int, truncated.nonzero()[0])
    last, first = batch["next", "observation"][env_i, t].numpy(), batch["observation"][env_i, t + 1].numpy()
    assert not np.array_equal(last, first) and np.array_equal(last[-2], batch["observation"][env_i, t, -1].numpy())  # its own last frames
    env.close()


@pytest.mark.parametrize(
    ("env_id", "kwargs", "message"),
    [
        ("CartPole-v1", {}, r"^env.vectorization: ale steps Atari games \(ALE/Pong-v5, ...\), not 'CartPole-v1' \(valid choices: sync, async\)$"),
        ("MinAtar/Breakout-v1", {}, r"^env.vectorization: ale steps Atari games \(ALE/Pong-v5, ...\), not 'MinAtar/Breakout-v1'"),  # (a game too)
        ("ALE/Pong-v5", {"bogus": 1}, r"^env.kwargs.bogus: ale's AtariVectorEnv takes no such option \(valid choices: .*stack_num"),
        ("ALE/Pong-v5", {"render_mode": "human"}, r"^env.kwargs.render_mode: the ale vectorization draws its observation frames only \(valid choices: rgb"),
    ],
)
def test_bad_input_is_one_line(env_id: str, kwargs: dict, message: str) -> None:
    with pytest.raises(rlcore.ConfigError, match=message):
        rlcore.make_vector_env(env_id, 2, vectorization="ale", kwargs=kwargs)


@pytest.mark.slow
def test_it_draws_the_frames_the_policy_observed_and_eval_records_them(tmp_path: Path) -> None:
    env = make("ALE/Pong-v5", 2, vectorization="ale", kwargs={"render_mode": "rgb_array"})
    assert env.render_mode == "rgb_array" and env.render() is None  # nothing observed yet
    obs, _ = env.reset(seed=0)
    obs, *_ = env.step(np.array([2, 3]))
    frames = env.render()
    assert len(frames) == 2 and frames[0].shape == (84, 84, 3) and frames[0].dtype == np.uint8
    assert all(np.array_equal(frame[..., c], obs[i, -1]) for i, frame in enumerate(frames) for c in range(3))  # the newest grey frame
    env.close()

    pytest.importorskip("rl_plugin_pg")
    pytest.importorskip("rl_plugin_video")
    import imageio.v3 as iio

    run = tmp_path / "run"
    train = ["train", "--algo", "ppo", "--env", "ALE/Pong-v5", "--frames", "128", "--seed", "0", "--out", str(run)]
    sets = ["env.vectorization=ale", "env.num_envs=2", "env.kwargs.max_num_frames_per_episode=160", "collector.frames_per_batch=128", "algo.minibatches=2"]
    done = run_rlctl(*train, *(arg for item in sets for arg in ("--set", item)))
    assert done.returncode == 0, done.stderr
    done = run_rlctl("eval", str(run), "--episodes", "1", "--video")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    video = iio.imread(report["video"], plugin="FFMPEG")
    assert report["lengths"] == [40] and video.shape[0] == 40  # 160 frames of 4 a step: one recorded frame per action
