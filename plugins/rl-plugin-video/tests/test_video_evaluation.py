"""The ``evaluation`` hook in short real training runs, and the rollout it runs."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from tensordict import TensorDict
from video_helpers import ENV_ID, TinyLoss, VideoListLogger, build_trainer, decode, make_env, read_metrics

import rlcore
from rl_plugin_video import VideoRecorder, deterministic, run_episodes


class StopAfterFirstBatch:
    """Ends training early, as early stopping does."""

    @rlcore.hookimpl
    def rl_post_steps(self, trainer: Any) -> None:
        trainer.stop()


def test_evaluation_logs_returns_and_records_videos(run_dir: Path) -> None:
    video_logger = VideoListLogger(log_dir=run_dir)
    options = {"record_interval": 64, "episodes": 1, "video": True, "fps": 20, "skip": 2}
    trainer, hooks = build_trainer(run_dir, {"evaluation": options}, frames_per_batch=32, total_frames=128, loggers=(video_logger,))
    trainer.train()

    returns = read_metrics(run_dir, "eval/episode_return")
    lengths = read_metrics(run_dir, "eval/episode_length")
    assert [frames for frames, _ in returns] == [64, 128]  # every 64 frames; the last batch is not evaluated twice
    assert [frames for frames, _ in lengths] == [64, 128]
    for (frames, length), (_, episode_return) in zip(lengths, returns):
        assert episode_return == length  # CartPole pays 1 per step
        video = decode(run_dir / "videos" / f"eval_{frames:09d}.mp4")
        assert video.shape == (math.ceil(length / 2), 400, 600, 3)  # one frame per action, one in 2 kept
    assert [(name, step, fps) for name, _, step, fps in video_logger.videos] == [("eval/video", 64, 20), ("eval/video", 128, 20)]
    assert trainer.policy.training  # restored after each evaluation
    assert trainer.state_dict()["modules"]["evaluation"] == {"next_eval": 192, "last_eval": 128}
    assert hooks["evaluation"].last.video == run_dir / "videos" / "eval_000000128.mp4"


def test_resumed_run_goes_on_with_the_evaluation_schedule(run_dir: Path) -> None:
    options = {"record_interval": 64, "episodes": 1}
    first, _ = build_trainer(run_dir, {"evaluation": options}, total_frames=64, checkpoint=True)
    first.train()
    resumed, hooks = build_trainer(run_dir, {"evaluation": options}, total_frames=128, checkpoint=True)
    resumed.load_from_file()
    assert hooks["evaluation"].state_dict() == {"next_eval": 128, "last_eval": 64}
    resumed.train()
    assert [frames for frames, _ in read_metrics(run_dir, "eval/episode_return")] == [64, 128]


def test_final_evaluation_when_training_stops_early(run_dir: Path) -> None:
    options = {"record_interval": 0, "episodes": 3}
    trainer, hooks = build_trainer(run_dir, {"evaluation": options}, total_frames=1000, plugins=(StopAfterFirstBatch(),))
    trainer.train()
    result = hooks["evaluation"].last
    assert len(result.returns) == 3
    assert read_metrics(run_dir, "eval/episode_return") == [(32, pytest.approx(np.mean(result.returns)))]
    assert read_metrics(run_dir, "eval/episode_length") == [(32, pytest.approx(np.mean(result.lengths)))]
    assert not (run_dir / "videos").exists()


def test_env_option_when_the_trainer_has_no_make_env(run_dir: Path) -> None:
    trainer, hooks = build_trainer(run_dir, {"evaluation": {"env": ENV_ID, "episodes": 1}}, total_frames=32, with_make_env=False)
    trainer.train()
    assert len(read_metrics(run_dir, "eval/episode_return")) == 1


def test_no_env_to_evaluate_on_is_a_config_error(run_dir: Path) -> None:
    trainer, _ = build_trainer(run_dir, {"evaluation": {}}, total_frames=32, with_make_env=False)
    with pytest.raises(rlcore.ConfigError, match="hooks.evaluation.env"):
        trainer.train()


def test_run_episodes_counts_one_frame_per_action(tmp_path: Path) -> None:
    policy = TinyLoss().policy
    env = make_env(1, render_mode="rgb_array")
    recorder = VideoRecorder(tmp_path, prefix="eval")
    with deterministic(policy):
        assert not policy.training
        result = run_episodes(policy, env, episodes=2, recorder=recorder, seed=3)
    assert policy.training
    assert len(result.returns) == 2 and result.returns == [float(n) for n in result.lengths]
    assert len(recorder) == result.lengths[0]  # the video shows the first episode
    recorder.close()
    # a frame budget cuts the rollout; the unfinished episode counts when none finished
    with deterministic(policy):
        cut = run_episodes(policy, env, episodes=None, max_frames=3, seed=3)
    assert cut.lengths == [3] and cut.returns == [3.0]
    env.close()


def test_deterministic_policy_acts_on_the_mode() -> None:
    loss = TinyLoss()
    observation = TensorDict({"observation": torch.randn(64, 4)}, batch_size=[64])
    with deterministic(loss.policy):
        step = loss.policy(observation.clone())
    assert torch.equal(step["action"], step["logits"].argmax(-1))


@pytest.mark.parametrize("options", [{"episodes": 0}, {"episodes": None}, {"skip": 0}, {"record_interval": -1}])
def test_bad_options_are_config_errors(options: dict[str, Any]) -> None:
    factory = rlcore.get_plugin_manager(only=["rl-plugin-video"]).factory("hooks", "evaluation")
    with pytest.raises(rlcore.ConfigError, match="hooks.evaluation"):
        factory(**options)
