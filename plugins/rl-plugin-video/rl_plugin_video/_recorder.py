"""mp4 files: the video recorder (frames streamed to a file), :func:`write_mp4` and :func:`read_video`, through imageio's ffmpeg plugin."""

from __future__ import annotations

import os
import uuid
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from ._frames import pad_even, to_rgb_video, to_video_frame

#: the ffmpeg video codec of every mp4 file written here
CODEC = "libx264"


class VideoRecorder:
    """Writes frames to an mp4 file as they come; nothing but the open writer is kept in memory.

    Each frame offered to :meth:`add` counts; one in ``skip`` is written, up to ``max_frames``
    per video. :meth:`dump` closes the current video as ``<directory>/<prefix>_<step>.mp4``,
    where ``step`` is the trainer's collected frame count, hands it to every logger whose
    ``supports_video`` is true, and lets the next frame start a new video.

    A batch of frames (one per env) becomes one frame of a grid; both sides of a frame are
    padded to even sizes for H.264.

    :param directory: where the mp4 files go (created when the first frame comes).
    :param prefix: the files' prefix and, with ``/video``, the name logged.
    :param fps: frames per second.
    :param skip: keep one frame in ``skip`` (the first one of each group).
    :param max_frames: the most frames one video holds (``None``: no limit); later frames are dropped until :meth:`dump`.
    :param loggers: :class:`rlcore.Logger` objects; those with ``supports_video`` receive each video.
    :param codec: the ffmpeg video codec.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        prefix: str = "video",
        fps: int = 30,
        skip: int = 1,
        max_frames: int | None = 1000,
        loggers: Iterable[Any] = (),
        codec: str = CODEC,
    ) -> None:
        if skip < 1 or (max_frames is not None and max_frames < 1) or fps < 1:
            raise ValueError(f"fps, skip and max_frames must be positive, got {fps}, {skip}, {max_frames}")
        self.directory = Path(directory)
        self.prefix = prefix
        self.fps = fps
        self.skip = skip
        self.max_frames = max_frames
        self.loggers = loggers
        self.codec = codec
        self._writer: Any = None
        self._partial: Path | None = None
        self._shape: tuple[int, ...] | None = None
        self._offered = 0
        self._written = 0

    def __len__(self) -> int:
        """Frames written to the current video."""
        return self._written

    @property
    def full(self) -> bool:
        """Whether the current video holds ``max_frames`` frames."""
        return self.max_frames is not None and self._written >= self.max_frames

    @property
    def wants_frame(self) -> bool:
        """Whether the next frame offered to :meth:`add` will be written."""
        return not self.full and self._offered % self.skip == 0

    def add(self, frames: Any) -> bool:
        """Offer one frame; it is written when :attr:`wants_frame` says so.

        :param frames: a frame ``[H, W, C]`` / ``[C, H, W]``, a batch ``[N, ...]`` or a sequence of
            frames (tiled into a grid), or a callable returning one of these, called only when the
            frame is written (so skipped frames are never rendered).
        :return: whether the frame was written.
        """
        wanted = self.wants_frame
        self._offered += 1
        if not wanted:
            return False
        if callable(frames):
            frames = frames()
        frame = pad_even(to_video_frame(frames))
        if self._writer is None:
            self._open(frame.shape)
        elif frame.shape != self._shape:
            raise ValueError(f"frame of shape {frame.shape} in a video of frames {self._shape}")
        self._writer.append_data(frame)
        self._written += 1
        return True

    def dump(self, step: int, name: str | None = None) -> Path | None:
        """Close the current video, name it for ``step`` and log it; the next frame starts a new one.

        :param step: the trainer's collected frames (used in the file name and by the loggers).
        :param name: the name logged; default ``<prefix>/video``.
        :return: the mp4 file, or ``None`` when no frame was written.
        """
        if self._writer is None:
            self._reset()
            return None
        self._writer.close()
        assert self._partial is not None
        path = self._free_path(step)
        os.replace(self._partial, path)
        self._reset()
        self._log(path, name or f"{self.prefix}/video", step)
        return path

    def close(self) -> None:
        """Discard the video in progress (its partial file included)."""
        if self._writer is not None:
            self._writer.close()
            assert self._partial is not None
            self._partial.unlink(missing_ok=True)
        self._reset()

    # ------------------------------------------------------------------ internals
    def _open(self, shape: tuple[int, ...]) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self._partial = self.directory / f".{self.prefix}_{uuid.uuid4().hex[:8]}.partial.mp4"
        self._shape = shape
        self._writer = _open_writer(self._partial, self.fps, self.codec)

    def _reset(self) -> None:
        self._writer = None
        self._partial = None
        self._shape = None
        self._offered = 0
        self._written = 0

    def _free_path(self, step: int) -> Path:
        path = self.directory / f"{self.prefix}_{step:09d}.mp4"
        index = 1
        while path.exists():
            path = self.directory / f"{self.prefix}_{step:09d}_{index}.mp4"
            index += 1
        return path

    def _log(self, path: Path, name: str, step: int) -> None:
        loggers = [logger for logger in self.loggers if getattr(logger, "supports_video", False)]
        if not loggers:
            return
        video = read_video(path)
        for logger in loggers:
            try:
                logger.log_video(name, video, step=step, fps=self.fps)
            except Exception as err:  # a logger's failure must not end training
                warnings.warn(f"{type(logger).__name__}.log_video failed for {path.name}: {err}", stacklevel=3)


def _open_writer(path: str | os.PathLike[str], fps: int, codec: str = CODEC) -> Any:
    """imageio's ffmpeg writer of H.264 in yuv420p; frames must have even sides (:func:`pad_even`)."""
    import imageio.v2 as imageio

    return imageio.get_writer(
        Path(path),
        format="FFMPEG",
        mode="I",
        fps=fps,
        codec=codec,
        pixelformat="yuv420p",
        macro_block_size=2,  # frames are padded to even sides: no resizing
        ffmpeg_log_level="error",
    )


def write_mp4(path: str | os.PathLike[str], video: Any, fps: int = 30) -> Path:
    """Write a whole video as an H.264 mp4 file, as :class:`VideoRecorder` writes its frames.

    :param path: the file to write.
    :param video: ``[time, height, width, 1|3|4]`` or a sequence of frames (see :func:`to_rgb_video`);
        both sides are padded to even sizes.
    :param fps: frames per second.
    :return: ``path``.
    :raises ValueError: when ``video`` is not a non-empty video.
    """
    frames = to_rgb_video(video)
    writer = _open_writer(path, fps)
    try:
        for frame in frames:
            writer.append_data(pad_even(frame))
    finally:
        writer.close()
    return Path(path)


def read_video(path: str | os.PathLike[str]) -> np.ndarray:
    """Decode an mp4 file into ``uint8`` ``[time, height, width, 3]``.

    :param path: the file.
    """
    import imageio.v3 as iio

    return iio.imread(Path(path), plugin="FFMPEG")


__all__ = ["VideoRecorder", "read_video", "write_mp4"]
