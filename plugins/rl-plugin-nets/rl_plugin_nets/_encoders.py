"""``encoder_for``: the encoder of an observation space, a CNN for images and an MLP otherwise."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, cast, get_args

import numpy as np
import torch
from torch import nn

from . import EncoderKind
from ._cnn import CNN, NATURE, NATURE_MIN_SIDE, SMALL
from ._mlp import MLP
from ._spaces import image_layout, is_image_space

#: the choices of ``kind``
ENCODERS: tuple[str, ...] = get_args(EncoderKind)


def float_observations(obs: torch.Tensor) -> torch.Tensor:
    """``obs`` as float32, for a network: ``uint8`` (frames) scaled to ``[0, 1]``, other dtypes converted as they are.

    :param obs: observations of any dtype, on the network's device.
    """
    if obs.dtype == torch.float32:
        return obs
    return obs.float() / 255.0 if obs.dtype == torch.uint8 else obs.float()


class MLPEncoder(nn.Module):
    """Flattened observations through an :class:`MLP` trunk (CleanRL's initialisation, each layer activated):
    ``[..., *obs_shape] -> [..., out_dim]``.

    With no hidden size it is the flattening alone (``out_dim`` is the observation's size).
    Observations of any dtype are converted to float32 (:func:`float_observations`: ``uint8`` scaled by 1/255).

    :param obs_shape: one observation's shape.
    :param hidden_sizes: widths of the layers.
    :param activation: ``tanh``, ``relu``, ``elu``, ``gelu``, ``silu`` or ``leaky_relu``.
    """

    def __init__(self, obs_shape: Sequence[int], hidden_sizes: Sequence[int] = (64, 64), activation: str = "tanh") -> None:
        super().__init__()
        self.obs_shape = tuple(obs_shape)
        self.net = MLP([math.prod(self.obs_shape), *hidden_sizes], activation, init="orthogonal", activate_last=True)
        self.out_dim = self.net.out_dim

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Features ``[..., out_dim]`` of observations ``[..., *obs_shape]``."""
        lead = obs.shape[: obs.dim() - len(self.obs_shape)]
        return self.net(float_observations(obs.reshape(*lead, -1)))


def encoder_for(
    observation_space: Any,
    kind: EncoderKind = "auto",
    *,
    hidden_sizes: Sequence[int] = (64, 64),
    activation: str = "tanh",
    cnn_channels: Sequence[int] | None = None,
    cnn_kernels: Sequence[int] | None = None,
    cnn_strides: Sequence[int] | None = None,
    cnn_features: int | None = None,
    channels_last: bool | None = None,
) -> CNN | MLPEncoder:
    """The encoder of ``observation_space``: ``[..., *shape] -> [..., encoder.out_dim]``.

    ``auto`` picks a :class:`CNN` for image spaces (:func:`is_image_space`: ``uint8`` or ``bool``
    boxes of 2 to 4 dimensions, channels first or last) and an :class:`MLPEncoder` otherwise. The
    CNN's layers default to the Nature DQN's (:data:`NATURE`) for images of at least 36 pixels a
    side and to MinAtar's one-layer network (:data:`SMALL`) for smaller ones; each ``cnn_*``
    option replaces its part of that preset.

    :param observation_space: a Gymnasium ``Box``.
    :param kind: ``auto``, ``mlp`` or ``cnn`` (a CNN on any 2- to 4-dimensional box).
    :param hidden_sizes: the MLP's widths.
    :param activation: the MLP's activation.
    :param cnn_channels: output channels of each convolution.
    :param cnn_kernels: kernel size of each convolution.
    :param cnn_strides: stride of each convolution.
    :param cnn_features: width of the CNN's last (linear) layer.
    :param channels_last: the layout of 3-dimensional images; ``None`` decides from the shape.
    :raises ValueError: for an unknown ``kind``, or ``cnn`` on a space that is no image.
    """
    if kind not in ENCODERS:
        raise ValueError(f"unknown encoder {kind!r}; valid choices: {', '.join(ENCODERS)}")
    shape, dtype = tuple(observation_space.shape), observation_space.dtype
    if kind == "mlp" or (kind == "auto" and not is_image_space(observation_space)):
        return MLPEncoder(shape, hidden_sizes, activation)
    layout = image_layout(shape, dtype, channels_last)
    if layout is None:
        raise ValueError(f"a CNN needs an image observation space ([H, W], [H, W, C], [C, H, W] or [S, H, W, C]), got shape {shape}")
    preset = NATURE if min(layout.height, layout.width) >= NATURE_MIN_SIDE else SMALL
    layers = {"cnn_channels": cnn_channels, "cnn_kernels": cnn_kernels, "cnn_strides": cnn_strides}
    given = {name: list(value) for name, value in layers.items() if value is not None}
    if given and len({len(value) for value in given.values()}) == 1 and len(given) < 3:  # a depth of its own: each list then
        depth, missing = len(next(iter(given.values()))), [name for name in layers if name not in given]
        if depth != len(preset["channels"]):
            raise ValueError(f"{next(iter(given))}: {depth} convolutions, and the preset's {' and '.join(missing)} are for "
                             f"{len(preset['channels'])}: set them too (one entry per convolution)")  # fmt: skip
    return CNN(
        shape,
        channels=preset["channels"] if cnn_channels is None else cnn_channels,
        kernels=preset["kernels"] if cnn_kernels is None else cnn_kernels,
        strides=preset["strides"] if cnn_strides is None else cnn_strides,
        features=preset["features"] if cnn_features is None else cnn_features,
        dtype=dtype,
        channels_last=channels_last,
    )


def image_encoder(
    observation_space: Any,
    encoder: str = "auto",
    *,
    cnn_channels: Sequence[int] | None = None,
    cnn_kernels: Sequence[int] | None = None,
    cnn_strides: Sequence[int] | None = None,
    cnn_features: int | None = None,
    network: Callable[..., Any] | str | None = None,
    action_space: Any = None,
) -> nn.Module | None:
    """The encoder an algorithm puts before its heads, from its ``algo`` keys ``network``, ``encoder`` and ``cnn_*``;
    ``None`` where it keeps its MLPs. It maps observations ``[..., *shape]`` to features ``[..., encoder.out_dim]``.

    ``network`` (an import path) gives the user's own module (:class:`UserEncoder`). Otherwise ``auto`` gives a CNN
    for image spaces (:func:`is_image_space`), ``cnn`` a CNN for any image-shaped box, ``mlp`` none. The ``cnn_*``
    keys are :func:`encoder_for`'s. A ``Dict`` space always gets a :class:`MultiInputEncoder` (its images through CNNs,
    unless ``mlp``).

    :param observation_space: the single env's observation space.
    :param encoder: ``auto``, ``mlp`` or ``cnn``.
    :param network: a factory, or its import path ``package.module:factory``, called as ``factory(observation_space, action_space)``.
    :param action_space: the single env's action space, for ``network``'s factory.
    :raises rlcore.ConfigError: ``algo.encoder: ...`` for an unknown kind, or when no CNN fits the space;
        ``algo.network: ...`` for a factory that cannot be imported or gives no fitting module.
    """
    from gymnasium import spaces

    from rlcore import ConfigError, shown

    if network is not None:
        return UserEncoder.build(network, observation_space, action_space)
    if encoder not in ENCODERS:
        raise ConfigError(f"algo.encoder: unknown value {shown(encoder)} (valid choices: {', '.join(ENCODERS)})")
    if isinstance(observation_space, spaces.Dict):
        sizes = {"cnn_channels": cnn_channels, "cnn_kernels": cnn_kernels, "cnn_strides": cnn_strides, "cnn_features": cnn_features}
        return MultiInputEncoder(observation_space, images=encoder != "mlp", **sizes)
    if encoder == "mlp" or (encoder == "auto" and not is_image_space(observation_space)):
        return None
    try:
        cnn = encoder_for(
            observation_space, "cnn", cnn_channels=cnn_channels, cnn_kernels=cnn_kernels, cnn_strides=cnn_strides, cnn_features=cnn_features
        )
    except ValueError as err:  # a message on the cnn_* keys names them
        raise ConfigError(f"algo.{err}" if str(err).startswith("cnn_") else f"algo.encoder: {err}") from None
    assert isinstance(cnn, CNN)
    return cnn


class MultiInputEncoder(nn.Module):
    """The encoder of a ``Dict`` observation space (SB3's ``CombinedExtractor``): each image entry through a CNN of its
    own (:func:`encoder_for`), every other entry flattened, all concatenated in the space's key order:
    ``TensorDict [...] -> [..., out_dim]``.

    :param observation_space: a Gymnasium ``Dict`` of ``Box`` entries.
    :param images: image entries (:func:`is_image_space`) through CNNs; ``False``: flattened as the others.
    :param cnn_options: :func:`encoder_for`'s ``cnn_*`` keywords, for every CNN.
    :raises rlcore.ConfigError: naming the entry that is no ``Box``, or whose CNN does not fit.
    """

    def __init__(self, observation_space: Any, images: bool = True, **cnn_options: Any) -> None:
        from gymnasium import spaces

        from rlcore import ConfigError

        super().__init__()
        encoders: dict[str, nn.Module] = {}
        for key, space in observation_space.spaces.items():
            if not isinstance(space, spaces.Box):
                raise ConfigError(f"algo.encoder: the Dict observation's entry {key!r} is {space}; the encoder reads Box entries only")
            try:
                encoders[key] = encoder_for(space, "cnn", **cnn_options) if images and is_image_space(space) else MLPEncoder(space.shape, ())
            except ValueError as err:
                raise ConfigError(f"algo.{err}" if str(err).startswith("cnn_") else f"algo.encoder: entry {key!r}: {err}") from None
        self.keys = list(encoders)
        self.encoders = nn.ModuleDict(encoders)
        self.out_dim = sum(int(cast(int, encoder.out_dim)) for encoder in encoders.values())

    def forward(self, obs: Any) -> torch.Tensor:
        """Features ``[..., out_dim]`` of a ``TensorDict`` of observations ``[...]``."""
        return torch.cat([self.encoders[key](obs.get(key)) for key in self.keys], dim=-1)


class UserEncoder(nn.Module):
    """A user's module (``algo.network``) as an encoder: observations ``[..., *shape]`` are handed to it as a batch
    ``[B, *shape]`` (float32 for float spaces, the env's dtype otherwise), its features ``[B, out_dim]`` come back
    with the leading dimensions restored.

    :param module: the user's module.
    :param obs_shape: one observation's shape.
    :param out_dim: the width of its features.
    """

    def __init__(self, module: nn.Module, obs_shape: Sequence[int], out_dim: int) -> None:
        super().__init__()
        self.module, self.obs_shape, self.out_dim = module, tuple(obs_shape), out_dim

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        lead = obs.shape[: obs.dim() - len(self.obs_shape)]
        if obs.is_floating_point() and obs.dtype != torch.float32:
            obs = obs.float()
        return self.module(obs.reshape(-1, *self.obs_shape)).reshape(*lead, self.out_dim)

    @classmethod
    def build(cls, factory: Callable[..., Any] | str, observation_space: Any, action_space: Any) -> UserEncoder:
        """The module of ``factory`` (or of the factory at that import path), checked on a batch of two sampled observations.

        :raises rlcore.ConfigError: naming ``algo.network`` when the factory cannot be imported, returns no
            ``torch.nn.Module``, or the module does not map ``[B, *shape]`` to ``[B, features]``.
        """
        from rlcore import ConfigError, error_line, import_object, shown

        name = factory if isinstance(factory, str) else getattr(factory, "__qualname__", repr(factory))
        make: Callable[..., Any]
        if not isinstance(factory, str):
            make = factory
        else:
            try:
                make = import_object(factory)
            except (ImportError, AttributeError, ValueError) as err:
                raise ConfigError(f"algo.network: cannot import {shown(factory)} ({error_line(err)})") from None
        module = make(observation_space, action_space)
        if not isinstance(module, nn.Module):
            raise ConfigError(f"algo.network: {name}(observation_space, action_space) returned {type(module).__name__}, expected a torch.nn.Module")
        shape = tuple(observation_space.shape)
        sample = torch.as_tensor(np.stack([observation_space.sample() for _ in range(2)]))
        try:
            with torch.no_grad():
                features = module(sample.float() if sample.is_floating_point() else sample)
        except Exception as err:  # (whatever the user's forward raises)
            raise ConfigError(f"algo.network: {type(module).__name__} fails on a batch of observations {(2, *shape)} ({error_line(err)})") from None
        if not isinstance(features, torch.Tensor) or features.dim() != 2 or features.shape[0] != 2:
            got = tuple(features.shape) if isinstance(features, torch.Tensor) else type(features).__name__
            raise ConfigError(f"algo.network: {type(module).__name__} maps observations {(2, *shape)} to {got}, expected features (2, N)")
        return cls(module, shape, int(features.shape[1]))


__all__ = ["ENCODERS", "MLPEncoder", "MultiInputEncoder", "UserEncoder", "encoder_for", "image_encoder"]
