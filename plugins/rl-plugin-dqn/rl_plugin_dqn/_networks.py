"""The Q-network: an MLP from observations to one value per action, with an optional dueling head,
and the greedy policy that acts with it."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from tensordict import TensorDictBase
from tensordict.nn import TensorDictModuleBase
from torch import nn

ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "relu": torch.relu_,  # in place on a layer's fresh output: its backward needs only the result
    "tanh": torch.tanh_,
    "elu": F.elu,
    "gelu": F.gelu,
    "silu": F.silu,
    "leaky_relu": F.leaky_relu,
}


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
            bound = 1 / math.sqrt(sizes[i])
            self.register_parameter(weight, nn.Parameter(torch.empty(sizes[i], sizes[i + 1]).uniform_(-bound, bound)))
            self.register_parameter(bias, nn.Parameter(torch.empty(sizes[i + 1]).uniform_(-bound, bound)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Outputs ``[B, out]`` of inputs ``[B, in]``."""
        params: Mapping[str, Any] = self._parameters or self._buffers  # a target copy holds its weights as buffers
        last = len(self.layers) - 1
        for i, (weight, bias) in enumerate(self.layers):
            x = torch.addmm(params[bias], x, params[weight])
            if i < last:
                x = self.activation(x)
        return x


class QNetwork(nn.Module):
    """``Q(s, .)``: one value per action.

    Plain: an MLP ``obs -> hidden_sizes -> actions``. Dueling: a trunk ``obs -> hidden_sizes``
    (activated) with two linear heads, ``Q(s, a) = V(s) + A(s, a) - mean_a' A(s, a')``.

    :param obs_dim: size of a (flattened) observation.
    :param num_actions: number of discrete actions.
    :param hidden_sizes: hidden layer widths.
    :param activation: a name of :data:`ACTIVATIONS`.
    :param dueling: use the dueling head.
    """

    def __init__(
        self, obs_dim: int, num_actions: int, hidden_sizes: Sequence[int], activation: str = "relu", dueling: bool = False
    ) -> None:
        super().__init__()
        self.dueling = dueling
        self.num_actions = num_actions
        if dueling:
            self.trunk = MLP([obs_dim, *hidden_sizes], activation)
            self.activation = ACTIVATIONS[activation]
            width = hidden_sizes[-1] if hidden_sizes else obs_dim
            self.heads = MLP([width, 1 + num_actions])  # [value, advantages...] in one layer
        else:
            self.net = MLP([obs_dim, *hidden_sizes, num_actions], activation)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """Q-values ``[B, num_actions]`` of observations ``[B, *obs_shape]``."""
        if obs.dim() != 2 or obs.dtype != torch.float32:
            obs = obs.reshape(obs.shape[0], -1).float()
        if not self.dueling:
            return self.net.forward(obs)
        features = self.trunk.forward(obs)
        if self.trunk.layers:
            features = self.activation(features)
        value, advantage = self.heads.forward(features).split([1, self.num_actions], dim=-1)
        return value + advantage - advantage.mean(-1, keepdim=True)


class GreedyPolicy(TensorDictModuleBase):
    """Acts greedily: ``action = argmax_a Q(observation, a)`` (exploration wraps it, see ``rl_plugin_replay.EGreedy``).

    :param qnet: the Q-network.
    """

    in_keys = ["observation"]
    out_keys = ["action"]

    def __init__(self, qnet: QNetwork) -> None:
        super().__init__()
        self.qnet = qnet

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        tensordict.set("action", self.qnet.forward(tensordict.get("observation")).argmax(-1))
        return tensordict
