"""Writing videos: one shared helper for every logger that stores mp4 files (imageio with ffmpeg, optional)."""

from __future__ import annotations

import os
from typing import Any


def write_mp4(path: str | os.PathLike[str], video: Any, fps: int = 30) -> None:
    """Write frames ``[time, height, width, channels]`` as an H.264 mp4, padded to even sizes.

    Needs ``imageio`` and ``imageio-ffmpeg`` (``pip install rl-core[video]``).

    :param path: the file to write.
    :param video: a ``uint8`` (or ``[0, 1]`` float) array or tensor; one channel is gray, an alpha channel is dropped.
    :param fps: frames per second.
    :raises ValueError: when ``video`` is not a non-empty ``[T, H, W, 1|3|4]`` array.
    """
    import numpy as np

    try:
        import imageio.v2 as imageio
    except ImportError:
        raise ImportError("writing mp4 files needs imageio and imageio-ffmpeg: pip install 'rl-core[video]'") from None

    frames = np.asarray(video.detach().cpu() if hasattr(video, "detach") else video)
    if frames.ndim != 4 or frames.shape[-1] not in (1, 3, 4) or frames.shape[0] == 0:
        raise ValueError(f"a video is [time, height, width, 1|3|4 channels], got shape {frames.shape}")
    if np.issubdtype(frames.dtype, np.floating):
        frames = frames * 255.0
    frames = np.clip(frames, 0, 255).astype(np.uint8)
    frames = np.repeat(frames, 3, axis=-1) if frames.shape[-1] == 1 else frames[..., :3]
    frames = np.pad(frames, ((0, 0), (0, frames.shape[1] % 2), (0, frames.shape[2] % 2), (0, 0)), mode="edge")
    imageio.mimwrite(path, list(frames), fps=fps, macro_block_size=1)
