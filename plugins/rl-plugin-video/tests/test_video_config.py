"""The hooks as a run config turns them on: ``rlcore.build_trainer`` with a ``hooks`` section."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from video_helpers import TinyAlgorithm, decode, read_metrics

import rlcore


def _plugin_manager() -> rlcore.PluginManager:
    pm = rlcore.get_plugin_manager(only=["rl-plugin-video", "rl-plugin-envs"])  # the normalisation wrappers
    pm.add_plugin(TinyAlgorithm(), "tiny-algorithm")
    return pm


def _config(hooks: dict[str, Any], **env: Any) -> dict[str, Any]:
    return {
        "algo": {"name": "tiny"},
        "env": {"num_envs": 2, **env},
        "collector": {"frames_per_batch": 32},
        "trainer": {"total_frames": 64, "progress_bar": False, "seed": 0},
        "loggers": {"console": None},
        "hooks": hooks,
    }


@pytest.mark.slow
def test_config_hooks_run_with_the_run_builder(run_dir: Path) -> None:
    hooks = {
        "evaluation": {"record_interval": 32, "episodes": 1, "video": True, "skip": 3},
        "tensordict_recorder": {"max_batches": 1, "keys": ["observation", "next.reward"]},
        "video_recorder": {"interval": 0, "max_frames": 4, "dump_on_episode_end": False},
    }
    wrappers = {"normalize_observation": {}, "normalize_reward": {}}
    config = _config(hooks, wrappers=wrappers, kwargs={"render_mode": "rgb_array"})
    trainer = rlcore.build_trainer(config, run_dir, plugin_manager=_plugin_manager())
    trainer.train()
    lengths = read_metrics(run_dir, "eval/episode_length")
    assert [frames for frames, _ in lengths] == [32, 64]
    # returns are the env's own rewards, not the normalised ones
    assert [value for _, value in read_metrics(run_dir, "eval/episode_return")] == [value for _, value in lengths]
    for frames, length in lengths:
        assert decode(run_dir / "videos" / f"eval_{frames:09d}.mp4").shape == (math.ceil(length / 3), 400, 600, 3)
    assert [p.name for p in (run_dir / "rollouts").iterdir()] == ["batch_000000032"]
    train_videos = sorted((run_dir / "videos").glob("train_*.mp4"))
    assert [v.name for v in train_videos] == ["train_000000000.mp4", "train_000000032.mp4"]
    assert all(decode(v).shape == (4, 400, 1200, 3) for v in train_videos)  # 2 envs side by side
    # recording leaves the training env as it was: the normalisation wrappers' checkpoint entries keep their keys
    _, state = trainer.checkpoint.load()
    assert list(state["modules"]["env"]) == ["0:NormalizeReward", "1:NormalizeObservation"]


def test_unknown_option_is_refused_by_the_config(run_dir: Path) -> None:
    with pytest.raises(rlcore.ConfigError, match=r"unknown key hooks\.evaluation\.episode \(valid choices: episodes, record_interval, "):
        rlcore.build_trainer(_config({"evaluation": {"episode": 3}}), run_dir, plugin_manager=_plugin_manager())
