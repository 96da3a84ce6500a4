"""The TensorBoard logger: event files under ``<log_dir>/tensorboard/``.

Written with torch's :class:`~torch.utils.tensorboard.SummaryWriter` (torch is a dependency of
rl-core anyway). Scalars of one step share one event; hparams are written as the HParams
plugin's session summaries, so TensorBoard lists the run with its metrics; videos are animated
GIFs in the Images tab (what ``SummaryWriter.add_video`` writes, but encoded with Pillow instead
of moviepy), their frames converted by rl-plugin-video's frame pipeline (the ``video`` extra).
"""

from __future__ import annotations

import importlib.util
import io
import os
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
from tensorboard.plugins.hparams import metadata as hp_metadata
from tensorboard.plugins.hparams.api_pb2 import Status
from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData, SessionEndInfo, SessionStartInfo
from torch.utils.tensorboard import SummaryWriter

from rlcore import Logger

_STATUS = {"finished": Status.STATUS_SUCCESS, "failed": Status.STATUS_FAILURE, "killed": Status.STATUS_FAILURE}


class TensorBoardLogger(Logger):
    """Writes TensorBoard event files to ``<log_dir>/tensorboard/``.

    :param exp_name: the run's name.
    :param log_dir: the run directory.
    :param flush_secs: how often the background writer flushes to disk, in seconds.
    :param max_queue: events queued before a flush is forced.
    """

    def __init__(
        self,
        exp_name: str,
        log_dir: str | os.PathLike[str],
        flush_secs: float = 10.0,
        max_queue: int = 100,
    ) -> None:
        super().__init__(exp_name, log_dir)
        self.directory = self.log_dir / "tensorboard"
        self._options = {"max_queue": max_queue, "flush_secs": flush_secs}
        self._writer = SummaryWriter(log_dir=str(self.directory), **self._options)
        self._hparams_logged = False
        self._closed = False
        #: videos need rl-plugin-video's frame pipeline (the ``video`` extra)
        self.supports_video = importlib.util.find_spec("rl_plugin_video") is not None

    def resume(self, step: int) -> None:
        """Purge the events logged after ``step`` by the interrupted run (TensorBoard's ``purge_step``)."""
        self._writer.close()
        self._writer = SummaryWriter(log_dir=str(self.directory), purge_step=step + 1, **self._options)

    def _add(self, summary: Summary, step: int | None = None) -> None:
        self._writer._get_file_writer().add_summary(summary, None if step is None else int(step))

    def log_scalar(self, name: str, value: float, step: int) -> None:
        self.log_scalars({name: value}, step)

    def log_scalars(self, values: Mapping[str, float], step: int) -> None:
        """Write all ``values`` as one event at ``step``."""
        if values:
            self._add(Summary(value=[Summary.Value(tag=k, simple_value=float(v)) for k, v in values.items()]), step)

    def log_hparams(self, params: Mapping[str, Any]) -> None:
        """Write the HParams plugin's session start: numbers, booleans and strings as they are, the rest as text."""
        info = SessionStartInfo(start_time_secs=time.time())
        for key, value in params.items():
            if isinstance(value, bool):
                info.hparams[str(key)].bool_value = value
            elif isinstance(value, (int, float)):
                info.hparams[str(key)].number_value = float(value)
            else:
                info.hparams[str(key)].string_value = str(value)
        self._add(_hparams_summary(hp_metadata.SESSION_START_INFO_TAG, HParamsPluginData(session_start_info=info)))
        self._hparams_logged = True

    def log_video(self, name: str, video: Any, step: int, fps: int = 30) -> None:
        """Write ``video`` as an animated GIF image summary; skipped with one warning without rl-plugin-video.

        :raises ValueError: when ``video`` is not ``[time, height, width, 1|3|4]`` (see ``rl_plugin_video.to_rgb_video``).
        """
        if not self.supports_video:
            self.warn_once("rl-plugin-tensorboard: videos are not logged; install rl-plugin-video (pip install 'rl-plugin-tensorboard[video]')")
            return
        from rl_plugin_video import to_rgb_video

        frames = to_rgb_video(video)
        image = Summary.Image(height=frames.shape[1], width=frames.shape[2], colorspace=3, encoded_image_string=encode_gif(frames, fps))
        self._add(Summary(value=[Summary.Value(tag=name, image=image)]), step)

    def log_histogram(self, name: str, values: Any, step: int) -> None:
        self._writer.add_histogram(name, values if hasattr(values, "detach") else np.asarray(values), int(step))

    def flush(self) -> None:
        if not self._closed:
            self._writer.flush()

    def close(self) -> None:
        """Close the writer; with hparams, end the session as a success, or a failure when called while an
        exception propagates (the trainer closes its loggers in a ``finally`` block)."""
        if self._closed:
            return
        if self._hparams_logged:
            end = SessionEndInfo(status=_STATUS[self.exit_status()], end_time_secs=time.time())
            self._add(_hparams_summary(hp_metadata.SESSION_END_INFO_TAG, HParamsPluginData(session_end_info=end)))
        self._writer.close()
        self._closed = True


def _hparams_summary(tag: str, data: HParamsPluginData) -> Summary:
    data.version = hp_metadata.PLUGIN_DATA_VERSION
    plugin = SummaryMetadata.PluginData(plugin_name=hp_metadata.PLUGIN_NAME, content=data.SerializeToString())
    return Summary(value=[Summary.Value(tag=tag, metadata=SummaryMetadata(plugin_data=plugin))])



def encode_gif(frames: np.ndarray, fps: int) -> bytes:
    """Encode ``uint8`` RGB frames ``[time, height, width, 3]`` as a looping animated GIF.

    :param frames: the video, as ``rl_plugin_video.to_rgb_video`` gives it.
    :param fps: frames per second (browsers play GIF frames no faster than 50 per second).
    """
    from PIL import Image

    pictures = [Image.fromarray(f) for f in frames]
    out = io.BytesIO()
    duration = max(20, round(1000 / max(fps, 1)))
    pictures[0].save(out, format="GIF", save_all=True, append_images=pictures[1:], duration=duration, loop=0)
    return out.getvalue()
