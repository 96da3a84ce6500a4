"""The ``video_recorder`` hook in real training runs, from the env's render() and from a pixels key."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
import torch
from tensordict import TensorDict
from video_helpers import VideoListLogger, build_trainer, decode

import rlcore


class AddPixels:
    """Writes ``pixels`` ``[envs, time, 16, 16, 3]`` into each batch (value: 8 x the step index in the run) and keeps the done flags."""

    def __init__(self) -> None:
        self.steps = 0
        self.done: list[np.ndarray] = []

    @rlcore.hookimpl
    def rl_batch_process(self, batch: Any) -> None:
        envs, steps = batch.batch_size
        index = (torch.arange(self.steps, self.steps + steps) * 8 % 256).to(torch.uint8)
        batch["pixels"] = index.view(1, steps, 1, 1, 1).expand(envs, steps, 16, 16, 3).clone()
        self.done.append(batch["next", "done"][..., 0].numpy().copy())
        self.steps += steps


def test_render_source_tiles_the_training_envs(run_dir: Path) -> None:
    logger = VideoListLogger(log_dir=run_dir)
    options = {"skip": 2, "max_frames": 6, "interval": 0, "dump_on_episode_end": False}
    trainer, _ = build_trainer(
        run_dir,
        {"video_recorder": options},
        num_envs=4,
        frames_per_batch=64,
        total_frames=128,
        env_kwargs={"render_mode": "rgb_array"},
        loggers=(logger,),
    )
    env = trainer.collector.env
    trainer.train()
    assert trainer.collector.env is env  # watched through the collector's step observers, never rewired
    videos = sorted((run_dir / "videos").glob("*.mp4"))
    # each batch is 16 steps: 11 of them fill a video of 6 frames (one in 2 kept), the next video starts with the next batch
    assert [v.name for v in videos] == ["train_000000000.mp4", "train_000000064.mp4"]
    for video in videos:
        assert decode(video).shape == (6, 800, 1200, 3)  # 2 x 2 grid of 400 x 600 frames
    assert [(name, shape[0], step) for name, shape, step, _ in logger.videos] == [("train/video", 6, 0), ("train/video", 6, 64)]


def test_render_source_observes_the_collector_until_shutdown(run_dir: Path) -> None:
    trainer, hooks = build_trainer(run_dir, {"video_recorder": {"interval": 0}}, num_envs=2, env_kwargs={"render_mode": "rgb_array"})
    observers: list[Any] = []

    def add_step_observer(observer: Any) -> Any:
        observers.append(observer)
        return lambda: observers.remove(observer)

    trainer.collector = SimpleNamespace(env=trainer.collector.env, add_step_observer=add_step_observer)
    hook = hooks["video_recorder"]
    hook.rl_setup(trainer)
    assert len(observers) == 1
    hook.rl_shutdown(trainer)
    assert observers == []
    trainer.collector.env.close()


def test_render_source_needs_a_collector_with_step_observers(run_dir: Path) -> None:
    trainer, hooks = build_trainer(run_dir, {"video_recorder": {"source": "render"}}, env_kwargs={"render_mode": "rgb_array"})
    trainer.collector = SimpleNamespace(env=trainer.collector.env)
    with pytest.raises(rlcore.ConfigError, match="add_step_observer"):
        hooks["video_recorder"].rl_setup(trainer)
    trainer.collector.env.close()


def test_without_frames_to_record_the_hint_fits_the_collector(run_dir: Path) -> None:
    """``source: auto`` on a collector that steps its envs elsewhere (Ray's) reads frames from the batch; the batch
    has none, and the message does not point to render(), which cannot be recorded there."""
    trainer, hooks = build_trainer(run_dir, {"video_recorder": {"interval": 0}}, env_kwargs={"render_mode": "rgb_array"})
    batch = TensorDict({"observation": torch.zeros(1, 4, 4)}, batch_size=[1, 4])
    hook = hooks["video_recorder"]
    hook.rl_setup(trainer)  # the local collector: render() can be recorded
    with pytest.raises(rlcore.ConfigError, match=r"set key to the batch's frames, or record the env's render\(\) \(source: render"):
        hook._record_batch(batch)
    env, trainer.collector = trainer.collector.env, SimpleNamespace(env=trainer.collector.env)  # no add_step_observer
    hook.rl_setup(trainer)
    with pytest.raises(rlcore.ConfigError) as refused:
        hook._record_batch(batch)
    assert str(refused.value) == (
        "hooks.video_recorder.key: the batch has no key 'pixels'; set key to the batch's frames (SimpleNamespace steps the envs in other "
        "processes, where their render() cannot be recorded: collector.name: local records it, hooks.evaluation.video: true films the "
        "policy with any collector)"
    )
    env.close()


@pytest.mark.parametrize("skip", [1, 3])
def test_pixels_source_reads_the_batch(run_dir: Path, skip: int) -> None:
    pixels = AddPixels()
    options = {"skip": skip, "interval": 0, "dump_on_episode_end": False}
    trainer, _ = build_trainer(run_dir, {"video_recorder": options}, num_envs=2, frames_per_batch=16, total_frames=32, plugins=(pixels,))
    trainer.train()
    (video,) = (run_dir / "videos").glob("*.mp4")
    frames = decode(video)
    assert frames.shape == (len(range(0, 16, skip)), 16, 32, 3)  # 16 steps, 2 envs side by side
    assert [round(float(f.mean()) / 8) for f in frames] == list(range(0, 16, skip))


def test_pixels_video_ends_when_every_env_ended_an_episode(run_dir: Path) -> None:
    pixels = AddPixels()
    trainer, _ = build_trainer(
        run_dir, {"video_recorder": {"interval": 100_000}}, num_envs=2, frames_per_batch=64, total_frames=64, plugins=(pixels,)
    )
    trainer.train()
    done = pixels.done[0]  # [envs, time]
    assert done.any(axis=1).all()  # with this seed both envs end an episode within the batch's 32 steps
    first_end = max(int(np.argmax(row)) for row in done)
    (video,) = (run_dir / "videos").glob("*.mp4")
    assert decode(video).shape[0] == first_end + 1


def test_render_source_needs_a_rendering_env(run_dir: Path) -> None:
    trainer, _ = build_trainer(run_dir, {"video_recorder": {"source": "render"}}, total_frames=32)
    with pytest.raises(rlcore.ConfigError, match="render_mode"):
        trainer.train()


def test_missing_pixels_key_is_a_config_error(run_dir: Path) -> None:
    trainer, _ = build_trainer(run_dir, {"video_recorder": {"key": "next.pixels"}}, total_frames=32)
    with pytest.raises(rlcore.ConfigError, match=r"next\.pixels"):
        trainer.train()


def test_state_is_checkpointed(run_dir: Path) -> None:
    trainer, hooks = build_trainer(run_dir, {"video_recorder": {"interval": 50}}, total_frames=64, plugins=(AddPixels(),))
    trainer.train()
    state = trainer.state_dict()["modules"]["video_recorder"]
    assert state == {"next_start": 64 + 50}  # the second video started after the second batch
    hooks["video_recorder"].load_state_dict({"next_start": 500})
    assert hooks["video_recorder"].state_dict() == {"next_start": 500}


@pytest.mark.parametrize("algo", ["pg", "a2c", "spg", "ppo", "ppo-kl", "dqn", "sac", "td3", "ddpg"])
def test_pixels_from_the_pixel_wrapper_with_every_algorithm(tmp_path: Path, algo: str) -> None:
    """rl-plugin-pg flattens its batches to [envs * time], DQN, SAC, TD3 and DDPG store them in a replay buffer: the recorder still
    tiles the envs' rendered frames step by step."""
    pytest.importorskip({"dqn": "rl_plugin_dqn", "sac": "rl_plugin_sac", "td3": "rl_plugin_td3", "ddpg": "rl_plugin_td3"}.get(algo, "rl_plugin_pg"))
    pytest.importorskip("rl_plugin_envs")
    pytest.importorskip("cv2")
    from rl_plugin_video import read_video

    replay = ["hooks.replay_buffer.capacity=256"] if algo in ("dqn", "sac", "td3", "ddpg") else []  # the frames go into the buffer too
    config = rlcore.load_config(
        overrides=[
            f"algo.name={algo}",
            *replay,
            "env.num_envs=2",
            "env.kwargs={render_mode: rgb_array}",
            "env.wrappers={pixels: {height: 40, width: 60}}",
            "collector.frames_per_batch=32",
            "trainer.total_frames=64",
            "trainer.seed=0",
            "trainer.progress_bar=false",
            "loggers={csv: null, console: null}",
            "hooks.video_recorder={source: pixels, interval: 1000, dump_on_episode_end: false}",
            "hooks.tensordict_recorder={keys: [pixels], interval: 1}",
        ]
    )
    seen: list[np.ndarray] = []

    class Watch:
        @rlcore.hookimpl(trylast=True)
        def rl_batch_process(self, batch: Any) -> None:
            seen.append(batch["pixels"].reshape(2, 16, 40, 60, 3).numpy().copy())  # env-major, flattened or not

    trainer = rlcore.build_trainer(config, run_dir=tmp_path / "run")
    trainer.register_plugin(Watch(), "watch")
    trainer.train()
    (video,) = (tmp_path / "run" / "videos").glob("*.mp4")
    frames = read_video(video)
    assert frames.shape == (32, 40, 120, 3)  # two envs side by side, every step of both batches
    expected = np.concatenate([np.concatenate([b[0], b[1]], axis=2) for b in seen])  # [steps, 40, 120, 3]
    assert np.abs(frames.astype(int) - expected.astype(int)).mean() < 6  # the same frames, through H.264
    assert np.abs(frames[1:].astype(int) - frames[:-1].astype(int)).mean() > 0.1  # and the cart moves
    from rl_plugin_video import load_rollouts

    saved = [rollout["pixels"].numpy() for rollout in load_rollouts(tmp_path / "run" / "rollouts")]  # the recorder sees them too
    assert len(saved) == len(seen) == 2 and all(np.array_equal(a, b) for a, b in zip(saved, seen, strict=True))
