"""Convolutional encoders of image observations: the Nature-DQN CNN and its small sibling for MinAtar."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from ._spaces import ImageLayout, image_layout

#: Mnih et al. (2015), "Human-level control through deep reinforcement learning": the Atari network
NATURE: dict[str, Any] = {"channels": (32, 64, 64), "kernels": (8, 4, 3), "strides": (4, 2, 1), "features": 512}
#: Young and Tian (2019), MinAtar's network: one 3 x 3 convolution, 128 features (images smaller than 36 px)
SMALL: dict[str, Any] = {"channels": (16,), "kernels": (3,), "strides": (1,), "features": 128}
#: below this side, the Nature CNN's 8 x 8 / 4 convolution leaves nothing: :data:`SMALL` is the default
NATURE_MIN_SIDE = 36
#: observations valued at once without gradient, beyond which :meth:`CNN.forward` works in chunks
_CHUNK = 1024


class CNN(nn.Module):
    """Convolutions with ReLU, flattened, then a linear layer with ReLU: ``[..., *obs_shape] -> [..., features]``.

    Observations keep their dtype until they are on the network's device: ``uint8`` frames are
    converted to float and divided by 255 there (``bool`` ones become 0/1), so batches and replay
    buffers hold a quarter of the bytes. Any leading dimensions (``[envs, time]``, ``[batch]``) are kept.

    Initialisation is CleanRL's: orthogonal with gain ``sqrt(2)``, zero biases.

    :param obs_shape: one observation's shape: ``[H, W]``, ``[H, W, C]``, ``[C, H, W]`` or ``[S, H, W, C]``.
    :param channels: output channels of each convolution.
    :param kernels: kernel size of each convolution.
    :param strides: stride of each convolution.
    :param features: width of the last (linear) layer, :attr:`out_dim`.
    :param dtype: the observations' dtype (``uint8`` is scaled by 1/255).
    :param channels_last: the layout of a 3-dimensional ``obs_shape``; ``None`` decides from the shape.
    :raises ValueError: for a shape that is no image, or layers that leave no pixel.
    """

    def __init__(
        self,
        obs_shape: Sequence[int],
        channels: Sequence[int] = NATURE["channels"],
        kernels: Sequence[int] = NATURE["kernels"],
        strides: Sequence[int] = NATURE["strides"],
        features: int = NATURE["features"],
        *,
        dtype: Any = "uint8",
        channels_last: bool | None = None,
    ) -> None:
        super().__init__()
        layout = image_layout(tuple(obs_shape), dtype, channels_last)
        if layout is None:
            raise ValueError(f"a CNN needs an image observation [H, W], [H, W, C], [C, H, W] or [S, H, W, C], got shape {tuple(obs_shape)}")
        if not (len(channels) == len(kernels) == len(strides)) or not channels:
            raise ValueError(f"channels, kernels and strides need one entry per convolution, got {list(channels)}, {list(kernels)}, {list(strides)}")
        self.obs_shape = tuple(obs_shape)
        self.layout: ImageLayout = layout
        self.out_dim = int(features)
        layers: list[nn.Module] = []
        in_channels, height, width = layout.channels, layout.height, layout.width
        for out_channels, kernel, stride in zip(channels, kernels, strides):
            height, width = (height - kernel) // stride + 1, (width - kernel) // stride + 1
            if height < 1 or width < 1:
                raise ValueError(
                    f"the CNN's convolutions (kernels {list(kernels)}, strides {list(strides)}) leave no pixel of a "
                    f"{layout.height} x {layout.width} image; use smaller kernels or strides"
                )
            layers += [nn.Conv2d(in_channels, out_channels, kernel, stride), nn.ReLU()]
            in_channels = out_channels
        layers += [nn.Flatten(), nn.Linear(in_channels * height * width, self.out_dim), nn.ReLU()]
        self.net = nn.Sequential(*layers)
        for module in self.net:
            if isinstance(module, (nn.Conv2d, nn.Linear)):
                nn.init.orthogonal_(module.weight, 2**0.5)
                assert module.bias is not None  # (built with one, above)
                nn.init.zeros_(module.bias)

    def to_images(self, obs: torch.Tensor) -> torch.Tensor:
        """Observations ``[B, *obs_shape]`` as float images ``[B, C, H, W]`` on their device, scaled."""
        layout = self.layout
        images = obs.reshape(obs.shape[0], layout.channels, layout.height, layout.width) if not layout.channels_last else None
        if images is None:
            if obs.dim() == 5:  # [B, S, H, W, C]: a stack of colour frames
                obs = obs.permute(0, 2, 3, 1, 4)
            images = obs.reshape(obs.shape[0], layout.height, layout.width, layout.channels).permute(0, 3, 1, 2)
        images = images.float()
        return images / layout.scale if layout.scale != 1.0 else images

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Features ``[..., out_dim]`` of observations ``[..., *obs_shape]``."""
        lead = obs.shape[: obs.dim() - len(self.obs_shape)]
        flat = obs.reshape(-1, *self.obs_shape)
        if flat.shape[0] > _CHUNK and not torch.is_grad_enabled():  # whole batches valued at once: bounded memory
            out = torch.cat([self.net(self.to_images(part)) for part in flat.split(_CHUNK)])
        else:
            out = self.net(self.to_images(flat))
        return out.reshape(*lead, self.out_dim)


class NatureCNN(CNN):
    """The Nature-DQN CNN (:data:`NATURE`): 32 8 x 8 / 4, 64 4 x 4 / 2, 64 3 x 3 / 1, then 512 features.

    :param obs_shape: one observation's shape (84 x 84 x 4 frames in the paper).
    :param features: width of the last layer.
    :param dtype: the observations' dtype (``uint8`` is scaled by 1/255).
    :param channels_last: the layout of a 3-dimensional ``obs_shape``; ``None`` decides from the shape.
    """

    def __init__(self, obs_shape: Sequence[int], features: int = 512, *, dtype: Any = "uint8", channels_last: bool | None = None) -> None:
        super().__init__(obs_shape, NATURE["channels"], NATURE["kernels"], NATURE["strides"], features, dtype=dtype, channels_last=channels_last)


__all__ = ["CNN", "NATURE", "NATURE_MIN_SIDE", "SMALL", "NatureCNN"]
