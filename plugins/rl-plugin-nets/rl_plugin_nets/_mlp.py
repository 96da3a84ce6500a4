"""The MLP of every algorithm (the policy-gradient actors and critics, DQN's Q-network, SAC's actor): one
``torch.addmm`` per layer, ReLU and tanh in place, ``torch.nn.Linear``'s initialisation or CleanRL's."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

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
    """Affine layers ``h @ W + b`` (one ``torch.addmm`` each) with the activation between them, and after the last one
    for a trunk (``activate_last``).

    ReLU and tanh are applied in place to each layer's output (a new tensor, which the backward pass of
    ``addmm`` does not need), saving a copy of every activation. Weights are stored ``[in, out]``.

    :param sizes: widths from the input to the output, ``[4, 256, 256, 2]``; one width only: the identity.
    :param activation: a name of :data:`ACTIVATIONS`.
    :param init: ``linear``: as ``torch.nn.Linear`` is, weights and biases uniform in ``+-1/sqrt(fan_in)``;
        ``orthogonal``: CleanRL's, orthogonal weights with gain ``sqrt(2)`` (``out_gain`` for the output
        layer), zero biases.
    :param out_gain: the output layer's gain, with ``init="orthogonal"`` (``0.01``: a near-uniform initial policy).
    :param activate_last: activate the last layer too: a trunk, whose features feed heads.
    """

    def __init__(
        self,
        sizes: Sequence[int],
        activation: str = "relu",
        *,
        init: Literal["linear", "orthogonal"] = "linear",
        out_gain: float = 1.0,
        activate_last: bool = False,
    ) -> None:
        super().__init__()
        if activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {activation!r}; valid choices: {', '.join(ACTIVATIONS)}")
        self.activation = ACTIVATIONS[activation]
        self.out_dim = sizes[-1]
        #: parameter names of each layer (plain attributes: iterating a ParameterList costs more than the layer)
        self.layers = [(f"weight{i}", f"bias{i}") for i in range(len(sizes) - 1)]
        self.activated = len(self.layers) - (not activate_last)
        for i, (weight, bias) in enumerate(self.layers):
            if init == "orthogonal":
                w = torch.empty(sizes[i + 1], sizes[i])
                nn.init.orthogonal_(w, math.sqrt(2) if i < self.activated else out_gain)
                self.register_parameter(weight, nn.Parameter(w.t().contiguous()))
                self.register_parameter(bias, nn.Parameter(torch.zeros(sizes[i + 1])))
            else:
                self.register_parameter(weight, linear_parameter((sizes[i], sizes[i + 1]), sizes[i]))
                self.register_parameter(bias, linear_parameter((sizes[i + 1],), sizes[i]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Outputs ``[..., out]`` of inputs ``[..., in]``."""
        params: Mapping[str, Any] = self._parameters or self._buffers  # a target copy holds its weights as buffers
        lead = x.shape[:-1]
        h = x if len(lead) == 1 else x.reshape(-1, x.shape[-1])
        for i, (weight, bias) in enumerate(self.layers):
            h = torch.addmm(params[bias], h, params[weight])
            if i < self.activated:
                h = self.activation(h)
        return h if len(lead) == 1 else h.reshape(*lead, h.shape[-1])
