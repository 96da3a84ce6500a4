"""EnvPool as a vectorization: the collector's batches, episode statistics and truncation, as with sync."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from envs_helpers import RandomPolicy, make

import rlcore

pytest.importorskip("envpool", reason="EnvPool has no wheel for this platform or Python")


def test_envpool_steps_in_same_step_autoreset_mode() -> None:
    env = make("CartPole-v1", 3, vectorization="envpool", kwargs={"max_episode_steps": 20})
    assert type(env).__name__ == "EnvPoolVectorEnv" and env.metadata["autoreset_mode"].name == "SAME_STEP"
    obs, _ = env.reset(seed=4)
    lengths = np.zeros(3, dtype=int)
    ended = []
    for _ in range(60):
        obs, _reward, terminated, truncated, info = env.step(np.zeros(3, dtype=np.int64))
        lengths += 1
        done = terminated | truncated
        if done.any():
            assert np.array_equal(info["_final_obs"], done)
            assert not np.array_equal(info["final_obs"][done], obs[done])  # obs is the reset observation, final_obs the last one
            assert np.all(np.abs(obs[done]) <= 0.05)  # CartPole resets near the origin
            ended += list(zip(lengths[done], terminated[done], truncated[done]))
            lengths[done] = 0
    assert all(length <= 20 for length, *_ in ended) and any(term for _, term, _ in ended)  # pushed left, the pole falls first


def test_reset_with_the_same_seed_starts_the_same_episodes_again() -> None:
    env = make("CartPole-v1", 2, vectorization="envpool")
    first, _ = env.reset(seed=5)
    rollout = [env.step(np.ones(2, dtype=np.int64))[0] for _ in range(5)]
    again, _ = env.reset(seed=5)  # the pool has stepped: the same seed must replay, not go on
    assert np.array_equal(again, first)
    assert all(np.array_equal(env.step(np.ones(2, dtype=np.int64))[0], obs) for obs in rollout)
    env.close()


def test_the_collector_counts_episodes_and_keeps_truncation_apart() -> None:
    env = make("CartPole-v1", 4, vectorization="envpool", kwargs={"max_episode_steps": 10})
    collector = rlcore.Collector(env, RandomPolicy(2), frames_per_batch=160)
    collector.set_seed(0)
    batch = collector.collect()
    assert batch.batch_size == (4, 40)
    keys = {"observation", "action", ("next", "observation"), ("next", "reward"), ("next", "done"), ("next", "terminated"), ("next", "truncated")}
    assert set(batch.keys(True, True)) >= keys
    truncated, terminated = batch["next", "truncated"], batch["next", "terminated"]
    assert truncated.any() and not (truncated & terminated).any()
    returns, lengths = collector.finished_episodes
    assert len(lengths) == int(batch["next", "done"].sum()) and lengths.max() <= 10 and np.array_equal(returns, lengths.astype(float))
    done = batch["next", "done"][..., 0]
    env_i, t = map(int, done.nonzero()[0])
    if t + 1 < 40:  # the next observation of an ended episode is its true last one, the next step starts afresh
        assert not np.array_equal(batch["next", "observation"][env_i, t].numpy(), batch["observation"][env_i, t + 1].numpy())
    env.close()


def test_an_id_envpool_lacks_is_one_line() -> None:
    pytest.importorskip("minatar")
    with pytest.raises(rlcore.ConfigError, match=r"^env.vectorization: envpool has no env 'MinAtar/Breakout-v1' \(from env.id 'MinAtar/Breakout-v1'\)"):
        rlcore.make_vector_env("MinAtar/Breakout-v1", 2, vectorization="envpool")


def test_the_pool_runs_a_thread_per_core_unless_told() -> None:
    import os

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    env = make("CartPole-v1", 64, vectorization="envpool")
    assert env.pool.config["num_threads"] == min(64, cores)  # EnvPool's own default would be 64, one per env
    env.close()
    env = make("CartPole-v1", 4, vectorization="envpool", kwargs={"num_threads": 3})
    assert env.pool.config["num_threads"] == 3
    env.close()


def test_env_kwargs_are_envpools_options(tmp_path: Any) -> None:
    # num_threads is EnvPool's option, not gymnasium's CartPole's: the run takes it
    config = rlcore.load_config(overrides=["algo.name=ppo", "env.id=CartPole-v1", "env.vectorization=envpool", "env.num_envs=4", "env.kwargs.num_threads=1"])
    trainer = rlcore.build_trainer(config, run_dir=tmp_path / "run")
    try:
        assert rlcore.base_env(trainer.collector.env).pool.config["num_threads"] == 1
    finally:
        trainer.shutdown()
    with pytest.raises(rlcore.ConfigError, match=r"^env\.kwargs\.bogus: envpool's CartPole-v1 takes no such option \(valid choices: num_threads"):
        make("CartPole-v1", 2, vectorization="envpool", kwargs={"bogus": 1})


def test_an_ale_id_plays_its_registered_game_settings_as_sync_and_ale_do() -> None:
    pytest.importorskip("ale_py")
    env = make("ALE/Pong-v5", 2, vectorization="envpool")  # v5: sticky actions (EnvPool's own Pong-v5 has none)
    assert env.pool.config["repeat_action_probability"] == 0.25 and env.pool.config["full_action_space"] is False
    env.close()
    env = make("ALE/Pong-v5", 2, vectorization="envpool", kwargs={"repeat_action_probability": 0.0})  # env.kwargs come last
    assert env.pool.config["repeat_action_probability"] == 0.0
    env.close()


def test_render_mode_draws_observed_frames_of_image_envs_only() -> None:
    with pytest.raises(rlcore.ConfigError, match=r"^env.kwargs.render_mode: the envs do not render, and their observations \(4,\) are no frames to show$"):
        make("CartPole-v1", 2, vectorization="envpool", kwargs={"render_mode": "rgb_array"})
    with pytest.raises(rlcore.ConfigError, match=r"^env.kwargs.render_mode: the envpool vectorization draws its observation frames only"):
        make("CartPole-v1", 2, vectorization="envpool", kwargs={"render_mode": "human"})
