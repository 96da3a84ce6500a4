"""Which observation spaces are images, and how their pixels are laid out (no torch here)."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

#: the smallest side of an image: smaller arrays are vectors to an MLP
MIN_SIDE = 8


class ImageLayout(NamedTuple):
    """How one observation's pixels are laid out.

    :param channels: input channels of the CNN (frames x colours for a stack of colour frames).
    :param height: rows.
    :param width: columns.
    :param channels_last: ``[H, W, C]`` (or ``[S, H, W, C]``) rather than ``[C, H, W]``.
    :param scale: what raw values are divided by on the device (255 for ``uint8``, 1 otherwise).
    """

    channels: int
    height: int
    width: int
    channels_last: bool
    scale: float


def image_layout(shape: tuple[int, ...], dtype: Any = np.uint8, channels_last: bool | None = None) -> ImageLayout | None:
    """The layout of an observation of ``shape``, or ``None`` when it is no image.

    ``[H, W]`` is one grey channel; ``[H, W, C]`` or ``[C, H, W]`` is decided by where the smaller
    axis is (channels last when in doubt, Gymnasium's convention); ``[S, H, W, C]`` (a stack of
    colour frames, Gymnasium's ``FrameStackObservation`` over RGB) is ``S x C`` channels.

    :param shape: one observation's shape.
    :param dtype: its dtype: ``uint8`` is scaled by 1/255.
    :param channels_last: force the layout of a 3-dimensional shape; ``None`` decides from the shape.
    """
    scale = 255.0 if np.dtype(dtype) == np.uint8 else 1.0
    if len(shape) == 2:
        height, width = shape
        return ImageLayout(1, height, width, False, scale) if min(shape) >= MIN_SIDE else None
    if len(shape) == 3:
        if channels_last is None:
            channels_last = not (shape[0] < min(shape[1], shape[2]) and shape[2] >= min(shape[0], shape[1]))
        channels, height, width = (shape[2], shape[0], shape[1]) if channels_last else shape
        return ImageLayout(channels, height, width, channels_last, scale) if min(height, width) >= MIN_SIDE else None
    if len(shape) == 4:
        stack, height, width, colours = shape
        return ImageLayout(stack * colours, height, width, True, scale) if min(height, width) >= MIN_SIDE else None
    return None


def is_image_space(space: Any) -> bool:
    """Whether ``space`` is an image: a ``Box`` of ``uint8`` or ``bool`` with 2 to 4 dimensions, sides of at least 8.

    Float boxes are vectors here (force a CNN on them with ``encoder_for(..., kind="cnn")``).

    :param space: a Gymnasium space.
    """
    from gymnasium import spaces

    if not isinstance(space, spaces.Box) or np.dtype(space.dtype) not in (np.dtype(np.uint8), np.dtype(bool)):
        return False
    return image_layout(space.shape, space.dtype) is not None


__all__ = ["MIN_SIDE", "ImageLayout", "image_layout", "is_image_space"]
