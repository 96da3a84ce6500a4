"""rl-plugin-nets: the network building blocks that algorithm plugins share.

=============================  ==========================================================================
:func:`encoder_for`            the encoder of an observation space: a CNN for images (``uint8`` or
                               ``bool``, channels first or last, frame stacks too), an MLP otherwise
:class:`CNN`                   convolutions, ReLU, one linear layer: ``[..., *image] -> [..., features]``;
                               ``uint8`` stays ``uint8`` until it is on the network's device, scaled there
:class:`NatureCNN`             the CNN of the Nature DQN paper (Mnih et al., 2015): 32-64-64, 512 features
:func:`image_encoder`,         the CNN an algorithm puts before its heads, from its ``algo`` keys
``ENCODER_KEYS``               (``encoder``, ``cnn_*``), or ``None`` where it keeps its MLPs
:class:`MLPEncoder`            flattened observations through an MLP
:class:`MLP`, ``ACTIVATIONS``  the MLP of every algorithm: one ``addmm`` per layer, ReLU and tanh in
``Activation``                 place; the activations by name, and the type of an ``activation`` option
:func:`linear_parameter`       a weight or bias initialised as ``torch.nn.Linear``'s
:func:`is_image_space`,        whether a space is an image, and its layout ``(channels, height, width,
:func:`image_layout`           channels_last)``
``NATURE``, ``SMALL``          the CNN presets: Nature's, and MinAtar's one-layer network for small images
=============================  ==========================================================================

This module stays light: importing it imports neither torch nor gymnasium.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from rlcore import lazy_getattr

__version__ = "0.1.0"

#: An ``activation`` option: a name of :data:`ACTIVATIONS` (declared here, where importing costs nothing).
Activation = Literal["relu", "tanh", "elu", "gelu", "silu", "leaky_relu"]

if TYPE_CHECKING:
    from ._cnn import CNN, NATURE, SMALL, NatureCNN
    from ._encoders import ENCODER_KEYS, ENCODERS, MLPEncoder, encoder_for, image_encoder
    from ._mlp import ACTIVATIONS, MLP, linear_parameter
    from ._spaces import ImageLayout, image_layout, is_image_space

_LAZY = {
    "CNN": "._cnn",
    "NATURE": "._cnn",
    "SMALL": "._cnn",
    "NatureCNN": "._cnn",
    "ENCODERS": "._encoders",
    "ENCODER_KEYS": "._encoders",
    "MLPEncoder": "._encoders",
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
    "ACTIVATIONS", "CNN", "ENCODERS", "ENCODER_KEYS", "MLP", "NATURE", "SMALL", "Activation", "ImageLayout", "MLPEncoder", "NatureCNN",
    "encoder_for", "image_encoder", "image_layout", "is_image_space", "linear_parameter",
]  # fmt: skip


__getattr__ = lazy_getattr(__name__, _LAZY)


def __dir__() -> list[str]:
    return __all__
