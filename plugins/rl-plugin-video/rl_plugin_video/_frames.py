"""The frame pipeline: frames and videos as every writer and logger takes them, ``uint8`` RGB channels last.

One frame is ``[height, width, 3]``; a batch of frames (one per env) is tiled into a grid; a video is
``[time, height, width, 3]``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

CHANNELS = (1, 3, 4)


def as_array(value: Any) -> np.ndarray:
    """A numpy array from a numpy array or a tensor on any device.

    :param value: an array-like or a ``torch.Tensor``.
    """
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    return np.asarray(value)


def to_rgb(frame: Any) -> np.ndarray:
    """One frame as ``uint8`` ``[height, width, 3]``.

    Accepts ``[H, W]`` (grey), ``[H, W, C]`` or ``[C, H, W]`` with ``C`` in 1, 3, 4 (alpha is dropped);
    floats are read as values in ``[0, 1]``.

    :param frame: an array or tensor.
    :raises ValueError: for any other shape.
    """
    array = as_array(frame)
    if array.ndim == 2:
        array = array[..., None]
    if array.ndim != 3:
        raise ValueError(f"a frame must have 2 or 3 dimensions, got shape {array.shape}")
    if array.shape[-1] not in CHANNELS and array.shape[0] in CHANNELS:
        array = np.moveaxis(array, 0, -1)
    if array.shape[-1] not in CHANNELS:
        raise ValueError(f"a frame must have 1, 3 or 4 channels first or last, got shape {array.shape}")
    if array.dtype != np.uint8:
        if np.issubdtype(array.dtype, np.floating):
            array = np.rint(np.clip(array, 0.0, 1.0) * 255.0)
        array = np.clip(array, 0, 255).astype(np.uint8)
    if array.shape[-1] == 1:
        array = np.repeat(array, 3, axis=-1)
    return np.ascontiguousarray(array[..., :3])


def tile(frames: Sequence[Any]) -> np.ndarray:
    """Tile frames into a near-square grid, row by row (4 frames: 2 x 2); empty cells stay black.

    :param frames: one frame per env; each goes through :func:`to_rgb`, smaller ones are padded.
    """
    images = [to_rgb(f) for f in frames]
    if not images:
        raise ValueError("no frame to tile")
    if len(images) == 1:
        return images[0]
    height = max(i.shape[0] for i in images)
    width = max(i.shape[1] for i in images)
    cols = math.ceil(math.sqrt(len(images)))
    rows = math.ceil(len(images) / cols)
    grid = np.zeros((rows * height, cols * width, 3), dtype=np.uint8)
    for index, image in enumerate(images):
        top, left = (index // cols) * height, (index % cols) * width
        grid[top : top + image.shape[0], left : left + image.shape[1]] = image
    return grid


def to_video_frame(frames: Any) -> np.ndarray:
    """One video frame from a single frame, a batch ``[N, ...]`` or a sequence of frames (tiled).

    :param frames: what a recorder was given.
    """
    if isinstance(frames, (list, tuple)):
        return tile(frames)
    array = as_array(frames)
    if array.ndim == 4:
        return tile(list(array))
    return to_rgb(array)


def to_rgb_video(video: Any) -> np.ndarray:
    """A video as ``uint8`` RGB ``[time, height, width, 3]``, each frame through :func:`to_rgb`.

    :param video: ``[time, height, width, 1|3|4]`` or ``[time, 1|3|4, height, width]`` (array or tensor;
        floats in ``[0, 1]``), or a non-empty sequence of frames of one size.
    :raises ValueError: when ``video`` is empty or not a sequence of frames.
    """
    frames = [to_rgb(f) for f in video] if isinstance(video, (list, tuple)) else None
    if frames is None:
        array = as_array(video)
        if array.ndim != 4 or array.shape[0] == 0:
            raise ValueError(f"a video is [time, height, width, 1|3|4 channels], got shape {array.shape}")
        if array.dtype == np.uint8 and array.shape[-1] == 3:
            return np.ascontiguousarray(array)
        frames = [to_rgb(f) for f in array]
    if not frames or len({f.shape for f in frames}) != 1:
        raise ValueError(f"a video is [time, height, width, 1|3|4 channels] with frames of one size, got {len(frames)} frames")
    return np.stack(frames)


def pad_even(frame: np.ndarray) -> np.ndarray:
    """Pad the bottom and right edges with black so both sides are even, as H.264 in yuv420p needs.

    :param frame: ``[height, width, 3]``.
    """
    height, width = frame.shape[:2]
    if height % 2 == 0 and width % 2 == 0:
        return frame
    return np.pad(frame, ((0, height % 2), (0, width % 2), (0, 0)))


__all__ = ["as_array", "pad_even", "tile", "to_rgb", "to_rgb_video", "to_video_frame"]
