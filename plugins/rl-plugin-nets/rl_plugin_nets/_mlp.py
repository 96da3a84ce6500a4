"""A fast MLP for losses that take many small optimisation steps (DQN's Q-network, SAC's actor):
one ``torch.addmm`` per layer, ReLU and tanh in place."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": torch.relu_,  # in place on a layer's fresh output: its backward needs only the result
    "tanh": torch.tanh_,
    "elu": F.elu,
    "gelu": F.gelu,
    "silu": F.silu,
    "leaky_relu": F.leaky_relu,
}


def linear_parameter(shape: Sequence[int], fan_in: int) -> nn.Parameter:
    """A weight or bias initialised as ``torch.nn.Linear``'s: uniform in ``+-1/sqrt(fan_in)``.

    :param shape: its shape (``[in, out]``, ``[out]``, or batched, ``[2, in, out]`` for twin critics).
    :param fan_in: the layer's input width.
    """
    bound = 1 / math.sqrt(fan_in)
    return nn.Parameter(torch.empty(*shape).uniform_(-bound, bound))


class MLP(nn.Module):
    """Affine layers ``h @ W + b`` (one ``torch.addmm`` each) with the activation between them, none after the last.

    ReLU and tanh are applied in place to each layer's output (a new tensor, which the backward pass of
    ``addmm`` does not need), saving a copy of every activation. Initialised as ``torch.nn.Linear`` is: weights and biases uniform in ``+-1/sqrt(fan_in)``.

    :param sizes: widths from the input to the output, ``[4, 256, 256, 2]``.
    :param activation: a name of :data:`ACTIVATIONS`.
    """

    def __init__(self, sizes: Sequence[int], activation: str = "relu") -> None:
        super().__init__()
        self.activation = ACTIVATIONS[activation]
        self.out_dim = sizes[-1]
        #: parameter names of each layer (plain attributes: iterating a ParameterList costs more than the layer)
        self.layers = [(f"weight{i}", f"bias{i}") for i in range(len(sizes) - 1)]
        for i, (weight, bias) in enumerate(self.layers):
            self.register_parameter(weight, linear_parameter((sizes[i], sizes[i + 1]), sizes[i]))
            self.register_parameter(bias, linear_parameter((sizes[i + 1],), sizes[i]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Outputs ``[B, out]`` of inputs ``[B, in]``."""
        params: Mapping[str, Any] = self._parameters or self._buffers  # a target copy holds its weights as buffers
        last = len(self.layers) - 1
        for i, (weight, bias) in enumerate(self.layers):
            x = torch.addmm(params[bias], x, params[weight])
            if i < last:
                x = self.activation(x)
        return x
