"""Twin critics ``Q_1(s, a), Q_2(s, a)`` as one module of batched matrix products (SAC's, TD3's, and DDPG's one)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import nn

from ._mlp import ACTIVATIONS, linear_parameter


class TwinQ(nn.Module):
    """Two critics ``Q_i(s, a)``, ``[x, action] -> hidden_sizes -> 1``, computed together as batched matrix products.

    ``x`` is what :meth:`encode` makes of an observation: the observation itself, or the features of
    the ``encoder`` (a CNN of image observations) that the critics share and their loss trains.
    Each layer holds every critic's weights ``[K, in, out]``: one ``torch.baddbmm`` computes the layer for all.

    :param obs_dim: size of ``x``: of an observation, or the encoder's ``out_dim``.
    :param action_dim: size of an action.
    :param hidden_sizes: hidden layer widths of each critic.
    :param activation: a name of ``rl_plugin_nets.ACTIVATIONS``.
    :param encoder: a module ``[B, *obs_shape] -> [B, obs_dim]``, or ``None``.
    :param critics: ``K``, how many: 2, the twins; 1, DDPG's single critic.
    """

    def __init__(
        self, obs_dim: int, action_dim: int, hidden_sizes: Sequence[int], activation: str = "relu", encoder: nn.Module | None = None, critics: int = 2
    ) -> None:
        super().__init__()
        if critics < 1:
            raise ValueError(f"critics must be >= 1, got {critics}")
        self.encoder = encoder
        self.critics = critics
        sizes = [obs_dim + action_dim, *hidden_sizes, 1]
        self.layers = [(f"weight{i}", f"bias{i}") for i in range(len(sizes) - 1)]
        for i, (weight, bias) in enumerate(self.layers):
            self.register_parameter(weight, linear_parameter((critics, sizes[i], sizes[i + 1]), sizes[i]))
            self.register_parameter(bias, linear_parameter((critics, 1, sizes[i + 1]), sizes[i]))
        self.activation = ACTIVATIONS[activation]

    def encode(self, obs: torch.Tensor) -> torch.Tensor:
        """The critics' input ``x`` of observations ``[B, *obs_shape]``: the encoder's features, or the observations."""
        return obs if self.encoder is None else self.encoder(obs)

    def forward(self, x: torch.Tensor, action: torch.Tensor, params: Mapping[str, Any] | None = None) -> torch.Tensor:
        """``[Q_1(s, a), ..., Q_K(s, a)]`` as ``[K, B, 1]``.

        :param x: encoded observations ``[B, obs_dim]`` (:meth:`encode`).
        :param action: actions in ``[-1, 1]``, ``[B, action_dim]``.
        :param params: weights of the layers to use instead of the module's own (e.g. detached ones).
        """
        weights: Mapping[str, Any] = params if params is not None else self._parameters or self._buffers  # a target: buffers
        x = torch.cat([x, action], dim=-1)
        h = x.unsqueeze(0).expand(self.critics, *x.shape)
        last = len(self.layers) - 1
        for i, (weight, bias) in enumerate(self.layers):
            h = torch.baddbmm(weights[bias], h, weights[weight])
            if i < last:
                h = self.activation(h)
        return h

    def detached(self) -> dict[str, torch.Tensor]:
        """The module's weights, cut from the autograd graph (gradients reach the inputs, not the critics)."""
        return {name: p.detach() for name, p in self._parameters.items() if p is not None}


__all__ = ["TwinQ"]
