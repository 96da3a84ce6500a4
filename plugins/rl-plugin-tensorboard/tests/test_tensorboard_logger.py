"""The tensorboard logger against real event files, read back with TensorBoard's own reader."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.hparams.api_pb2 import Status
from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData

import rlcore
from rl_plugin_tensorboard._logger import TensorBoardLogger


def read_events(log_dir: Path) -> EventAccumulator:
    acc = EventAccumulator(str(log_dir / "tensorboard"), size_guidance={"scalars": 0, "images": 0, "histograms": 0})
    acc.Reload()
    return acc


def hparams_data(acc: EventAccumulator, tag: str) -> HParamsPluginData:
    data = HParamsPluginData()
    data.ParseFromString(acc.PluginTagToContent("hparams")[tag])
    return data


@pytest.fixture
def logger(tmp_path: Path) -> TensorBoardLogger:
    return TensorBoardLogger("run-1", tmp_path)


def test_scalars_with_frame_steps(logger: TensorBoardLogger, tmp_path: Path) -> None:
    logger.log_scalar("train/episode_return", 1.5, 128)
    logger.log_scalars({"train/episode_return": 2.5, "loss/objective": -0.25}, 256)
    logger.log_scalars({}, 300)
    logger.flush()
    logger.close()
    acc = read_events(tmp_path)
    assert [(e.step, e.value) for e in acc.Scalars("train/episode_return")] == [(128, 1.5), (256, 2.5)]
    assert [(e.step, e.value) for e in acc.Scalars("loss/objective")] == [(256, -0.25)]
    assert list((tmp_path / "tensorboard").glob("events.out.tfevents.*"))


def test_hparams_session_start_and_end(logger: TensorBoardLogger, tmp_path: Path) -> None:
    logger.log_hparams(
        {
            "algo.lr": 3e-4,
            "trainer.total_frames": 4096,
            "algo.norm_adv": True,
            "env.name": "CartPole-v1",
            "env.wrappers": ["a"],
            "algo.x": None,
        }
    )
    logger.log_scalar("train/episode_return", 1.0, 1)
    logger.close()
    acc = read_events(tmp_path)
    start = hparams_data(acc, "_hparams_/session_start_info").session_start_info.hparams
    assert start["algo.lr"].number_value == pytest.approx(3e-4)
    assert start["trainer.total_frames"].number_value == 4096
    assert start["algo.norm_adv"].bool_value is True
    assert start["env.name"].string_value == "CartPole-v1"
    assert start["env.wrappers"].string_value == "['a']"
    assert start["algo.x"].string_value == "None"
    end = hparams_data(acc, "_hparams_/session_end_info").session_end_info
    assert end.status == Status.STATUS_SUCCESS


def test_session_marked_failed_when_closed_during_an_exception(logger: TensorBoardLogger, tmp_path: Path) -> None:
    logger.log_hparams({"algo.lr": 0.1})
    with pytest.raises(RuntimeError):
        try:
            raise RuntimeError("diverged")
        finally:
            logger.close()
    end = hparams_data(read_events(tmp_path), "_hparams_/session_end_info").session_end_info
    assert end.status == Status.STATUS_FAILURE


def test_histogram(logger: TensorBoardLogger, tmp_path: Path) -> None:
    logger.log_histogram("policy/logits", torch.randn(1000), 64)
    logger.log_histogram("policy/actions", np.arange(10), 128)
    logger.close()
    acc = read_events(tmp_path)
    (event,) = acc.Histograms("policy/logits")
    assert event.step == 64 and event.histogram_value.num == 1000
    (event,) = acc.Histograms("policy/actions")
    assert event.step == 128 and event.histogram_value.max == 9


@pytest.mark.parametrize("channels", [3, 1, 4])
def test_video_is_an_animated_gif(logger: TensorBoardLogger, tmp_path: Path, channels: int) -> None:
    assert logger.supports_video
    video = np.random.default_rng(0).integers(0, 256, size=(6, 21, 33, channels), dtype=np.uint8)
    logger.log_video("eval/video", video, step=512, fps=10)
    logger.close()
    (event,) = read_events(tmp_path).Images("eval/video")
    assert (event.step, event.height, event.width) == (512, 21, 33)
    gif = Image.open(io.BytesIO(event.encoded_image_string))
    assert gif.format == "GIF" and gif.n_frames == 6 and gif.size == (33, 21)
    assert gif.info["duration"] == 100


def test_bad_video_shape_is_rejected(logger: TensorBoardLogger) -> None:
    with pytest.raises(ValueError, match="time, height, width"):
        logger.log_video("eval/video", np.zeros((4, 4, 3), dtype=np.uint8), step=0)
    logger.close()


def test_close_is_idempotent(logger: TensorBoardLogger) -> None:
    logger.close()
    logger.flush()
    logger.close()


def test_discovered_through_its_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RLCORE_PLUGINS", raising=False)
    pm = rlcore.get_plugin_manager()
    info = {i.name: i for i in pm.describe()}["tensorboard"]
    assert (info.status, info.distribution, info.provides) == ("ok", "rl-plugin-tensorboard", {"loggers": ["tensorboard"]})
    logger = rlcore.get_logger("tensorboard", exp_name="run-1", log_dir=tmp_path, plugin_manager=pm, flush_secs=1)
    assert isinstance(logger, TensorBoardLogger) and isinstance(logger, rlcore.Logger)
    logger.log_scalar("x", 1.0, 1)
    logger.close()
    assert read_events(tmp_path).Scalars("x")[0].value == 1.0


def test_listing_plugins_does_not_import_tensorboard() -> None:
    code = (
        "import sys, rlcore\n"
        "infos = {i.name: i for i in rlcore.get_plugin_manager().describe()}\n"
        "assert infos['tensorboard'].provides == {'loggers': ['tensorboard']}, infos\n"
        "heavy = [m for m in ('tensorboard', 'torch.utils.tensorboard', 'PIL') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    env = {**os.environ, "RLCORE_PLUGINS": "rl-plugin-tensorboard"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=120)


def test_resume_purges_what_the_interrupted_run_logged_after_the_checkpoint(tmp_path: Path) -> None:
    crashed = TensorBoardLogger("run", tmp_path)
    for step in (1, 2, 3, 4, 5):
        crashed.log_scalars({"loss": float(step)}, step)
    crashed.close()  # the checkpoint was taken at step 3; steps 4 and 5 are logged again below
    resumed = TensorBoardLogger("run", tmp_path)
    resumed.resume(3)
    for step in (4, 5, 6):
        resumed.log_scalars({"loss": 10.0 * step}, step)
    resumed.close()
    events = read_events(tmp_path).Scalars("loss")
    assert [(e.step, e.value) for e in events] == [(1, 1.0), (2, 2.0), (3, 3.0), (4, 40.0), (5, 50.0), (6, 60.0)]
