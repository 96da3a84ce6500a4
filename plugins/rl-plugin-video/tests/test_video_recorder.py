"""VideoRecorder: mp4 files decoded back with imageio's ffmpeg plugin."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from video_helpers import VideoListLogger, decode, make_env

from rl_plugin_video import VideoRecorder

CARTPOLE = (400, 600, 3)


def _close(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two frames match up to H.264's loss."""
    return float(np.abs(a.astype(np.int16) - b.astype(np.int16)).mean()) < 6.0


def _grey(value: int, shape: tuple[int, int] = (32, 48)) -> np.ndarray:
    return np.full((*shape, 3), value, dtype=np.uint8)


def test_single_env_render_frames(tmp_path: Path) -> None:
    env = make_env(1, render_mode="rgb_array")
    env.reset(seed=0)
    recorder = VideoRecorder(tmp_path / "videos", prefix="single", fps=15)
    rendered = []
    for _ in range(12):
        frames = env.render()
        rendered.append(frames[0])
        assert recorder.add(frames)
        env.step(np.zeros(1, dtype=np.int64))
    env.close()
    assert len(recorder) == 12
    path = recorder.dump(step=100)
    assert path == tmp_path / "videos" / "single_000000100.mp4"
    video = decode(path)
    assert video.shape == (12, *CARTPOLE)
    assert _close(video[0], rendered[0]) and _close(video[-1], rendered[-1])
    assert not list((tmp_path / "videos").glob(".*"))  # no partial file left


def test_vector_env_is_tiled_into_a_grid(tmp_path: Path) -> None:
    env = make_env(4, render_mode="rgb_array")
    env.reset(seed=1)
    recorder = VideoRecorder(tmp_path, prefix="grid")
    for _ in range(5):
        frames = env.render()
        recorder.add(frames)
        env.step(np.array([0, 1, 0, 1]))
    video = decode(recorder.dump(step=7))
    env.close()
    height, width, _ = CARTPOLE
    assert video.shape == (5, 2 * height, 2 * width, 3)
    assert _close(video[-1, height:, width:], frames[3])  # env 3 is the bottom-right tile
    assert _close(video[-1, :height, :width], frames[0])


def test_skip_keeps_one_frame_in_skip(tmp_path: Path) -> None:
    recorder = VideoRecorder(tmp_path, skip=3)
    written = [recorder.add(_grey(20 * i)) for i in range(10)]
    assert written == [i % 3 == 0 for i in range(10)]
    video = decode(recorder.dump(step=0))
    assert video.shape == (4, 32, 48, 3)
    assert [round(float(f.mean()) / 20) for f in video] == [0, 3, 6, 9]


def test_max_frames_bounds_a_video(tmp_path: Path) -> None:
    recorder = VideoRecorder(tmp_path, max_frames=3)
    for i in range(10):
        recorder.add(_grey(10 * i))
    assert recorder.full and len(recorder) == 3
    assert decode(recorder.dump(step=1)).shape[0] == 3
    # the recorder starts a new video after a dump
    recorder.add(_grey(0))
    second = recorder.dump(step=1)
    assert second is not None and second.name == "video_000000001_1.mp4"
    assert decode(second).shape[0] == 1


def test_skipped_frames_are_never_rendered(tmp_path: Path) -> None:
    calls = []

    def render() -> np.ndarray:
        calls.append(1)
        return _grey(50)

    recorder = VideoRecorder(tmp_path, skip=4, max_frames=2)
    for _ in range(20):
        recorder.add(render)
    assert len(calls) == 2  # offers 0 and 4; then the video is full
    assert decode(recorder.dump(step=0)).shape[0] == 2


def test_frames_in_other_layouts_are_converted(tmp_path: Path) -> None:
    recorder = VideoRecorder(tmp_path)
    recorder.add(np.full((3, 31, 45), 0.5, dtype=np.float32))  # channels first, floats in [0, 1], odd sides
    recorder.add(np.full((31, 45), 128, dtype=np.uint8))  # grey
    video = decode(recorder.dump(step=0))
    assert video.shape == (2, 32, 46, 3)  # padded to even sides
    assert abs(float(video[0, :31, :45].mean()) - 128) < 4


def test_videos_go_to_loggers_that_take_them(tmp_path: Path) -> None:
    takes_video = VideoListLogger(log_dir=tmp_path)
    no_video = VideoListLogger(log_dir=tmp_path)
    no_video.supports_video = False
    recorder = VideoRecorder(tmp_path, prefix="eval", fps=12, loggers=[takes_video, no_video])
    for i in range(6):
        recorder.add(_grey(i))
    recorder.dump(step=640)
    assert takes_video.videos == [("eval/video", (6, 32, 48, 3), 640, 12)]
    assert no_video.videos == []


def test_empty_dump_and_close(tmp_path: Path) -> None:
    recorder = VideoRecorder(tmp_path / "videos")
    assert recorder.dump(step=0) is None
    recorder.add(_grey(1))
    recorder.close()
    assert list((tmp_path / "videos").iterdir()) == []


def test_frames_of_another_size_are_refused(tmp_path: Path) -> None:
    recorder = VideoRecorder(tmp_path)
    recorder.add(_grey(1, (32, 48)))
    with pytest.raises(ValueError, match="shape"):
        recorder.add(_grey(1, (64, 48)))
    recorder.close()
