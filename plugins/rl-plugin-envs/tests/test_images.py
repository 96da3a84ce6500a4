"""Image wrappers on a real Atari env (ale-py), rendered pixels into the batch, and Pong from the command line."""

from __future__ import annotations

from pathlib import Path

import gymnasium
import numpy as np
import pytest
from envs_helpers import RandomPolicy, make

import rlcore
from rlcore_testing import run_rlctl

pytest.importorskip("cv2", reason="the image wrappers need opencv-python-headless")


@pytest.fixture(scope="module")
def ale():
    return pytest.importorskip("ale_py", reason="Atari envs need ale-py")


@pytest.mark.slow
def test_atari_preprocessing_is_gymnasiums_on_each_env(ale) -> None:
    env = make("ALE/Pong-v5", 2, {"atari": {"noop_max": 0}, "frame_stack": {"stack_size": 4}}, kwargs={"repeat_action_probability": 0.0})
    assert env.single_observation_space.shape == (4, 84, 84) and env.single_observation_space.dtype == np.uint8
    reference = gymnasium.wrappers.FrameStackObservation(
        gymnasium.wrappers.AtariPreprocessing(gymnasium.make("ALE/Pong-v5", frameskip=1, repeat_action_probability=0.0), noop_max=0), 4
    )
    obs, _ = env.reset(seed=3)
    expected, _ = reference.reset(seed=3)
    assert np.array_equal(obs[0], expected)
    for action in [2, 3, 2, 2, 0, 3]:
        obs, reward, *_ = env.step(np.array([action, action]))
        expected, expected_reward, *_ = reference.step(action)
        assert np.array_equal(obs[0], expected) and reward[0] == expected_reward
    assert not np.array_equal(obs[0, 0], obs[0, -1])  # the frames of the stack differ: the game moves
    env.close()


def test_atari_frame_skip_1_is_one_frame_a_step(ale) -> None:
    env = make("ALE/Pong-v5", 1, {"atari": {"noop_max": 0, "frame_skip": 1}}, kwargs={"repeat_action_probability": 0.0})
    env.reset(seed=1)
    for _ in range(5):
        env.step(np.array([0]))
    assert env.envs[0].unwrapped.ale.getEpisodeFrameNumber() == 5  # ALE's own skip of 4 is off too (20 frames before)
    env.close()


def test_resize_and_grayscale_match_opencv(ale) -> None:
    import cv2

    env = make("ALE/Pong-v5", 1, {"grayscale": {}, "resize": {"height": 42, "width": 32}})
    raw = make("ALE/Pong-v5", 1)
    assert env.single_observation_space.shape == (42, 32)
    obs, _ = env.reset(seed=1)
    frame, _ = raw.reset(seed=1)
    grey = np.sum(np.multiply(frame[0], np.array([0.2125, 0.7154, 0.0721])), axis=-1).astype(np.uint8)
    assert np.array_equal(obs[0], cv2.resize(grey, (32, 42), interpolation=cv2.INTER_AREA))


def test_pixels_enter_the_batch_as_the_frames_of_the_observations() -> None:
    env = make("CartPole-v1", 2, {"pixels": {"height": 30, "width": 45}}, kwargs={"render_mode": "rgb_array"})
    collector = rlcore.Collector(env, RandomPolicy(2), frames_per_batch=24)
    collector.set_seed(0)
    batch = collector.collect()
    from rl_plugin_envs._pixels import add_pixels

    trainer = type("T", (), {"collector": collector})()
    add_pixels(trainer, batch)
    pixels = batch["pixels"]
    assert pixels.shape == (2, 12, 30, 45, 3) and pixels.dtype.is_floating_point is False
    import cv2

    probe = gymnasium.make("CartPole-v1", render_mode="rgb_array")
    for t in (0, 5):  # the frame of observation t is CartPole drawn at that observation's state
        probe.reset(seed=0)
        probe.unwrapped.state = batch["observation"][0, t].double().numpy()
        expected = cv2.resize(probe.render(), (45, 30), interpolation=cv2.INTER_AREA)
        assert np.abs(pixels[0, t].numpy().astype(int) - expected.astype(int)).mean() < 1.0
    env.close()


def test_pixels_of_an_env_that_renders_floats_are_its_colours_in_uint8() -> None:
    pytest.importorskip("minatar")
    env = make("MinAtar/Breakout-v1", 1, {"pixels": {}}, kwargs={"render_mode": "rgb_array"})
    env.reset(seed=0)
    drawn = env.env.render()[0]  # MinAtar draws float64 colours in [0, 1]
    frames = next(w for w in _wrappers(env) if hasattr(w, "render_frames")).render_frames()
    assert drawn.dtype == np.float64 and frames.dtype == np.uint8 and frames.max() > 0
    assert np.array_equal(frames[0], np.rint(drawn * 255).astype(np.uint8))
    env.close()


def _wrappers(env):
    while env is not None:
        yield env
        env = getattr(env, "env", None)


def test_pixels_on_envs_stepped_elsewhere_are_refused_in_one_line() -> None:
    import rl_plugin_envs

    env = make("CartPole-v1", 2, {"pixels": {}}, kwargs={"render_mode": "rgb_array"})
    rl_plugin_envs.rl_setup(type("T", (), {"collector": rlcore.Collector(env, RandomPolicy(2), frames_per_batch=4)})())  # local: fine

    class Remote:  # what the trainer holds of a collector whose envs step in other processes (the ray one)
        def __init__(self) -> None:
            self.env = env

    with pytest.raises(rlcore.ConfigError, match=r"^env.wrappers.pixels: .* Remote steps them in other processes \(valid choices: collector.name: local\)$"):
        rl_plugin_envs.rl_setup(type("T", (), {"collector": Remote()})())
    env.close()


def test_pixels_keeping_fewer_steps_than_a_batch_has_are_refused_before_the_first_batch(tmp_path: Path) -> None:
    pytest.importorskip("rl_plugin_pg")
    overrides = ["algo.name=ppo", "env.id=CartPole-v1", "env.num_envs=2", "env.kwargs.render_mode=rgb_array", "collector.frames_per_batch=32"]
    config = rlcore.load_config(overrides=[*overrides, "env.wrappers={pixels: {max_steps: 8}}"])
    trainer = rlcore.build_trainer(config, run_dir=tmp_path / "run")
    with pytest.raises(rlcore.ConfigError, match=r"^env.wrappers.pixels.max_steps: 8 steps of frames kept, a batch has 16; raise max_steps$"):
        trainer.train()
    assert trainer.collected_frames == 0


@pytest.mark.slow
def test_pong_trains_from_the_command_line_and_eval_records_pong(ale, tmp_path: Path) -> None:
    """`rlctl train --algo ppo --env ALE/Pong-v5 --set env.wrappers=...`: Atari preprocessing, frame stack, the CNN; then `rlctl eval --video`."""
    pytest.importorskip("rl_plugin_pg")
    pytest.importorskip("rl_plugin_video")
    run = tmp_path / "pong"
    wrappers = "env.wrappers={atari: {}, frame_stack: {stack_size: 4}}"
    train = ["train", "--algo", "ppo", "--env", "ALE/Pong-v5", "--frames", "128", "--seed", "0", "--out", str(run),
             "--set", wrappers, "--set", "env.num_envs=2", "--set", "collector.frames_per_batch=128", "--set", "algo.minibatches=2",
             "--set", "algo.epochs=1", "--set", "loggers.console=null",
             "--set", "env.kwargs={max_episode_steps: 600}"]  # fmt: skip  (600 emulator frames: 150 steps an episode)
    done = run_rlctl(*train)
    assert done.returncode == 0, done.stderr[-2000:]
    from rl_plugin_video import read_video

    evaluated = run_rlctl("eval", str(run), "--episodes", "1", "--video")
    assert evaluated.returncode == 0, evaluated.stderr[-2000:]
    (video,) = (run / "videos").glob("eval_*.mp4")
    frames = read_video(video)
    assert frames.shape[1:] == (210, 160, 3)  # Pong's own frames,
    assert (600 - 30) // 4 <= frames.shape[0] <= 600 // 4 + 1  # one a step of the episode (600 emulator frames, up to 30 no-ops at its start)
    assert np.abs(frames[-1].astype(int) - frames[0].astype(int)).mean() > 0.5  # the game moved


def test_training_on_raw_atari_screens_says_what_the_usual_preprocessing_is() -> None:
    pytest.importorskip("ale_py")
    import rl_plugin_envs

    def setup(wrappers: dict) -> list[str]:
        env = make("ALE/Pong-v5", 1, wrappers)
        run = type("Run", (), {"collector": rlcore.Collector(env, RandomPolicy(6), frames_per_batch=4)})()
        import warnings

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rl_plugin_envs.rl_setup(run)
        env.close()
        return [str(w.message) for w in caught]

    raw = setup({})
    assert len(raw) == 1 and raw[0].startswith("env.wrappers: the policy sees Atari's raw 210 x 160 colour screens")
    assert setup({"atari": {}, "frame_stack": {"stack_size": 4}}) == []
