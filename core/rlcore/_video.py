"""Writing mp4 videos (imageio with its ffmpeg plugin, an optional dependency: ``rl-core[video]``)."""

from __future__ import annotations

import os
from typing import Any


def _frame(frame: Any) -> Any:
    """One frame as ``uint8`` RGB ``[H, W, 3]`` with even sides (H.264 needs them)."""
    import numpy as np

    array = np.asarray(frame.detach().cpu() if hasattr(frame, "detach") else frame)
    if array.ndim != 3 or array.shape[-1] not in (1, 3, 4):
        raise ValueError(f"a frame is [height, width, 1|3|4 channels], got shape {array.shape}")
    if np.issubdtype(array.dtype, np.floating):
        array = array * 255.0
    array = np.clip(array, 0, 255).astype(np.uint8)
    array = np.repeat(array, 3, axis=-1) if array.shape[-1] == 1 else array[..., :3]
    return np.pad(array, ((0, array.shape[0] % 2), (0, array.shape[1] % 2), (0, 0)), mode="edge")


class VideoWriter:
    """Streams frames into an mp4 file, so that memory does not grow with the video's length.

    :param path: the file to write.
    :param fps: frames per second.
    """

    def __init__(self, path: str | os.PathLike[str], fps: int = 30) -> None:
        try:
            import imageio.v2 as imageio
        except ImportError:
            raise ImportError("writing mp4 files needs imageio and imageio-ffmpeg: pip install 'rl-core[video]'") from None
        self.path = path
        self.frames = 0
        self._writer = imageio.get_writer(path, format="FFMPEG", mode="I", fps=fps, macro_block_size=1, ffmpeg_log_level="error")

    def append(self, frame: Any) -> None:
        """Add one ``[H, W, C]`` frame (``uint8``, or floats in ``[0, 1]``)."""
        self._writer.append_data(_frame(frame))
        self.frames += 1

    def close(self) -> None:
        """Finish the file."""
        self._writer.close()

    def __enter__(self) -> VideoWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_mp4(path: str | os.PathLike[str], video: Any, fps: int = 30) -> None:
    """Write frames ``[time, height, width, channels]`` as an H.264 mp4.

    :param path: the file to write.
    :param video: a ``uint8`` (or ``[0, 1]`` float) array or tensor; one channel is gray, an alpha channel is dropped.
    :param fps: frames per second.
    :raises ValueError: when ``video`` is not a non-empty ``[T, H, W, 1|3|4]`` array.
    """
    if len(getattr(video, "shape", ())) != 4 or video.shape[0] == 0:
        raise ValueError(f"a video is [time, height, width, 1|3|4 channels], got shape {getattr(video, 'shape', None)}")
    with VideoWriter(path, fps) as writer:
        for frame in video:
            writer.append(frame)
