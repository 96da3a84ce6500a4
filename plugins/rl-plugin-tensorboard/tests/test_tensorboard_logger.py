"""The tensorboard logger against real event files, read back with TensorBoard's own reader.

The Logger contract comes from rl-core's kit (``rlcore_testing.LoggerConformance``); the tests
below it check what only TensorBoard has: typed hparams sessions, histograms and GIF videos.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from PIL import Image
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.hparams.api_pb2 import Status
from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData

from rl_plugin_tensorboard._logger import TensorBoardLogger
from rlcore_testing import LoggerConformance, PluginConformance, Scalars

_STATUS = {Status.STATUS_SUCCESS: "finished", Status.STATUS_FAILURE: "failed"}


def read_events(log_dir: Path) -> EventAccumulator:
    acc = EventAccumulator(str(log_dir / "tensorboard"), size_guidance={"scalars": 0, "images": 0, "histograms": 0})
    acc.Reload()
    return acc


def hparams_data(acc: EventAccumulator, tag: str) -> HParamsPluginData | None:
    try:
        content = acc.PluginTagToContent("hparams")
    except KeyError:  # no hparams logged
        return None
    if tag not in content:
        return None
    data = HParamsPluginData()
    data.ParseFromString(content[tag])
    return data


class TestTensorBoardLogger(LoggerConformance):
    resume_mode = "drop"  # TensorBoard's purge_step

    def make_logger(self, log_dir: Path) -> TensorBoardLogger:
        return TensorBoardLogger("run", log_dir)

    def read_back(self, logger: TensorBoardLogger) -> Scalars:  # type: ignore[override]
        acc = read_events(logger.log_dir)
        return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}

    def read_hparams(self, logger: TensorBoardLogger) -> dict[str, Any] | None:  # type: ignore[override]
        start = hparams_data(read_events(logger.log_dir), "_hparams_/session_start_info")
        if start is None:
            return None
        hparams = start.session_start_info.hparams
        return {key: getattr(value, value.WhichOneof("kind")) for key, value in hparams.items()}

    def run_status(self, logger: TensorBoardLogger) -> str | None:  # type: ignore[override]
        end = hparams_data(read_events(logger.log_dir), "_hparams_/session_end_info")
        return None if end is None else _STATUS[end.session_end_info.status]


class TestTensorBoardPlugin(PluginConformance):
    plugin = "tensorboard"
    distribution = "rl-plugin-tensorboard"
    provides = {"loggers": ["tensorboard"]}
    heavy_modules = ("torch", "tensorboard", "PIL")


@pytest.fixture
def logger(tmp_path: Path) -> TensorBoardLogger:
    return TensorBoardLogger("run-1", tmp_path)


def test_hparams_keep_their_types_in_the_session(logger: TensorBoardLogger, tmp_path: Path) -> None:
    logger.log_hparams({"algo.lr": 3e-4, "trainer.total_frames": 4096, "algo.norm_adv": True, "env.name": "CartPole-v1", "algo.x": None})
    logger.close()
    start = hparams_data(read_events(tmp_path), "_hparams_/session_start_info")
    assert start is not None
    hparams = start.session_start_info.hparams
    assert hparams["algo.lr"].number_value == pytest.approx(3e-4)
    assert hparams["trainer.total_frames"].number_value == 4096
    assert hparams["algo.norm_adv"].bool_value is True
    assert hparams["env.name"].string_value == "CartPole-v1"
    assert hparams["algo.x"].string_value == "None"


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


def test_options_pass_through_the_registry(tmp_path: Path) -> None:
    import rlcore

    logger = rlcore.get_logger("tensorboard", exp_name="run-1", log_dir=tmp_path, plugin_manager=rlcore.get_plugin_manager(), flush_secs=1)
    assert isinstance(logger, TensorBoardLogger) and logger._options["flush_secs"] == 1
    logger.log_scalar("x", 1.0, 1)
    logger.close()
    assert read_events(tmp_path).Scalars("x")[0].value == 1.0


def test_video_skipped_with_one_warning_without_rl_plugin_video(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "rl_plugin_video", None)  # as when it is not installed: importing it fails
    logger = TensorBoardLogger("run", tmp_path)
    assert not logger.supports_video
    with pytest.warns(UserWarning, match="install rl-plugin-video") as caught:
        for step in range(2):
            logger.log_video("eval/video", np.zeros((2, 4, 4, 3), dtype=np.uint8), step=step)
    assert len([w for w in caught if "rl-plugin-video" in str(w.message)]) == 1
    logger.close()
    assert read_events(tmp_path).Tags()["images"] == []
