"""The wrappers' observation transforms as torch modules, for a policy that leaves Python (``rlctl export``)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class Standardize(nn.Module):
    """``(obs - loc) / scale``, clipped to ``[-clip, clip]``, in float64 and then float32: the normalisation
    wrappers' numpy arithmetic, with their statistics as buffers.

    :param loc: the means.
    :param scale: the standard deviations.
    :param clip: the bound, or ``None``.
    """

    loc: torch.Tensor
    scale: torch.Tensor

    def __init__(self, loc: Any, scale: Any, clip: float | None) -> None:
        super().__init__()
        self.register_buffer("loc", torch.as_tensor(loc, dtype=torch.float64).clone())
        self.register_buffer("scale", torch.as_tensor(scale, dtype=torch.float64).clone())
        self.clip = clip

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        out = (observation.double() - self.loc) / self.scale
        if self.clip is not None:
            out = out.clamp(-self.clip, self.clip)
        return out.float()


__all__ = ["Standardize"]
