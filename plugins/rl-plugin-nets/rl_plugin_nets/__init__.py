"""rl-plugin-nets: the network building blocks that algorithm plugins share.

=============================  ==========================================================================
:func:`encoder_for`            the encoder of an observation space: a CNN for images (``uint8`` or
                               ``bool``, channels first or last, frame stacks too), an MLP otherwise
:class:`CNN`                   convolutions, ReLU, one linear layer: ``[..., *image] -> [..., features]``;
                               ``uint8`` stays ``uint8`` until it is on the network's device, scaled there
:class:`NatureCNN`             the CNN of the Nature DQN paper (Mnih et al., 2015): 32-64-64, 512 features
:class:`EncoderOptions`,      the ``algo`` keys of an algorithm that takes a CNN for images (``encoder``,
:func:`image_encoder`,         ``cnn_*``; its options dataclass inherits them), and the CNN they give, or
``ENCODER_KEYS``               ``None`` where it keeps its MLPs
:class:`MLPEncoder`,           flattened observations through an MLP; observations of any dtype as float32
:func:`float_observations`     (``uint8`` scaled by 1/255), for networks that take them flat
:class:`MultiInputEncoder`     ``Dict`` observations: a CNN per image entry, the others flattened, concatenated
:class:`MLP`, ``ACTIVATIONS``  the MLP of every algorithm: one ``addmm`` per layer, ReLU and tanh in
``Activation``                 place; the activations by name, and the type of an ``activation`` option
:func:`linear_parameter`       a weight or bias initialised as ``torch.nn.Linear``'s
:class:`TwinQ`                 twin critics ``Q_i(s, a)`` computed together as batched matrix products
:func:`continuous_control`,    an actor-critic over bounded continuous actions: its CNN, sizes and space
:class:`ActionBounds`,         checks; the map between the env's actions and ``[-1, 1]``; the base of a
:class:`ActorPolicy`,          policy acting with such an actor; the bounds it acts in where the action
:func:`acting_space`           space has none
:func:`is_image_space`,        whether a space is an image, and its layout ``(channels, height, width,
:func:`image_layout`           channels_last)``
``NATURE``, ``SMALL``          the CNN presets: Nature's, and MinAtar's one-layer network for small images
=============================  ==========================================================================

This module stays light: importing it imports neither torch nor gymnasium.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from rlcore import Range, lazy_getattr

__version__ = "0.1.0"

#: An ``activation`` option: a name of :data:`ACTIVATIONS` (declared here, where importing costs nothing).
Activation = Literal["relu", "tanh", "elu", "gelu", "silu", "leaky_relu"]
#: An ``encoder`` option: which encoder reads the observations (:func:`encoder_for`'s ``kind``).
EncoderKind = Literal["auto", "mlp", "cnn"]


@dataclass
class EncoderOptions:
    """The ``algo`` keys of an algorithm whose networks read images through :func:`image_encoder`'s CNN.

    An algorithm's options dataclass inherits them; ``image_encoder(space, **{k: getattr(opts, k) for k in ENCODER_KEYS})``
    builds the CNN they describe.

    :param encoder: ``auto``: a CNN for image observations (``uint8`` or ``bool``, channels first or last),
        the algorithm's MLPs otherwise; ``mlp`` or ``cnn`` to choose.
    :param cnn_channels: output channels of each convolution; ``null``: the Nature-DQN CNN's (32, 64, 64),
        or MinAtar's (16) for images under 36 pixels a side.
    :param cnn_kernels: kernel size of each convolution; ``null``: the preset's.
    :param cnn_strides: stride of each convolution; ``null``: the preset's.
    :param cnn_features: width of the CNN's linear layer, the input of what follows it; ``null``: the preset's (512 or 128).
    :param network: your own encoder, ``package.module:factory``: ``factory(observation_space, action_space)``
        returns a ``torch.nn.Module`` mapping a batch of observations ``[B, *shape]`` to features ``[B, N]``,
        which the algorithm's heads read (in place of ``encoder`` and ``cnn_*``).
    """

    encoder: EncoderKind = "auto"
    cnn_channels: list[Annotated[int, Range(ge=1)]] | None = None
    cnn_kernels: list[Annotated[int, Range(ge=1)]] | None = None
    cnn_strides: list[Annotated[int, Range(ge=1)]] | None = None
    cnn_features: Annotated[int, Range(ge=1)] | None = None
    network: Callable[..., Any] | None = None


#: the keys of :class:`EncoderOptions`: :func:`image_encoder`'s keyword arguments
ENCODER_KEYS = tuple(EncoderOptions.__dataclass_fields__)

if TYPE_CHECKING:
    from ._actions import ActionBounds, ActorPolicy, acting_space, continuous_control
    from ._cnn import CNN, NATURE, SMALL, NatureCNN
    from ._critics import TwinQ
    from ._encoders import ENCODERS, MLPEncoder, MultiInputEncoder, UserEncoder, encoder_for, float_observations, image_encoder
    from ._mlp import ACTIVATIONS, MLP, linear_parameter
    from ._spaces import ImageLayout, image_layout, is_image_space

_LAZY = {
    "ActionBounds": "._actions",
    "ActorPolicy": "._actions",
    "continuous_control": "._actions",
    "acting_space": "._actions",
    "CNN": "._cnn",
    "NATURE": "._cnn",
    "SMALL": "._cnn",
    "NatureCNN": "._cnn",
    "TwinQ": "._critics",
    "ENCODERS": "._encoders",
    "MLPEncoder": "._encoders",
    "MultiInputEncoder": "._encoders",
    "UserEncoder": "._encoders",
    "float_observations": "._encoders",
    "MLP": "._mlp",
    "ACTIVATIONS": "._mlp",
    "linear_parameter": "._mlp",
    "encoder_for": "._encoders",
    "image_encoder": "._encoders",
    "ImageLayout": "._spaces",
    "image_layout": "._spaces",
    "is_image_space": "._spaces",
}

__all__ = [
    "ACTIVATIONS", "CNN", "ENCODERS", "ENCODER_KEYS", "MLP", "NATURE", "SMALL", "ActionBounds", "Activation", "ActorPolicy", "EncoderKind", "EncoderOptions",
    "ImageLayout", "MLPEncoder", "MultiInputEncoder", "NatureCNN", "TwinQ", "UserEncoder", "acting_space",
    "continuous_control", "encoder_for", "float_observations", "image_encoder",
    "image_layout", "is_image_space", "linear_parameter",
]  # fmt: skip


__getattr__ = lazy_getattr(__name__, _LAZY)


def __dir__() -> list[str]:
    return __all__
