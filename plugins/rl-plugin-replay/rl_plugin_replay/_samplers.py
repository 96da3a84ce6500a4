"""Which stored items a replay buffer samples: uniformly, or in proportion to their priorities.

Prioritized experience replay (Schaul et al., 2016), proportional variant::

    p_i  = (|delta_i| + eps) ** alpha             priority of item i (new items: the largest seen so far)
    P(i) = p_i / sum_j p_j                        probability of sampling i
    w_i  = (N * P(i)) ** -beta / max_j w_j        importance weight = (p_i / min_j p_j) ** -beta

The weights correct the bias of sampling non-uniformly (``beta = 1`` corrects it fully); a loss
multiplies each item's error by its weight. Indices are drawn with torch's generator, so that
the trainer's seeding and checkpoints of the RNG state make sampling reproducible.
"""

from __future__ import annotations

from typing import Any

import torch

from ._tree import SumTree


class UniformSampler:
    """Every stored item equally likely, drawn with replacement."""

    def add(self, index: torch.Tensor) -> None:
        """Items ``index`` were written (nothing to do)."""

    def sample(self, size: int, batch_size: int, device: torch.device) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """``batch_size`` rows of ``range(size)``, and no extra keys."""
        return torch.randint(size, (batch_size,), device=device), {}

    def update_priority(self, index: torch.Tensor, priority: torch.Tensor) -> None:
        """Uniform sampling has no priorities: nothing to do."""

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass


class PrioritizedSampler:
    """Proportional prioritized sampling over a :class:`~rl_plugin_replay.SumTree`.

    :param capacity: the storage's capacity.
    :param alpha: how much prioritisation is used (0: uniform).
    :param beta: importance-sampling exponent (1: full correction).
    :param eps: added to ``|priority|`` so that no item has probability zero.
    :param max_priority: the priority of the first items written.
    """

    def __init__(
        self,
        capacity: int,
        alpha: float = 0.6,
        beta: float = 0.4,
        eps: float = 1e-6,
        max_priority: float = 1.0,
    ) -> None:
        if alpha < 0 or beta < 0 or eps <= 0:
            raise ValueError(f"alpha and beta must be >= 0 and eps > 0, got {alpha}, {beta}, {eps}")
        self.alpha = alpha
        self.beta = beta
        self.eps = eps
        self.tree = SumTree(capacity)  # on the CPU, whatever the storage's device
        #: the largest ``|priority| + eps`` seen so far
        self.max_priority = float(max_priority)

    def add(self, index: torch.Tensor) -> None:
        """New items get the largest priority seen so far, so that each is sampled soon."""
        self.tree.set(index, self.max_priority**self.alpha)

    def sample(self, size: int, batch_size: int, device: torch.device) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """``batch_size`` rows drawn with ``P(i) = p_i / sum_j p_j``, and their importance weights under ``"_weight"``."""
        tree = self.tree
        prefix = torch.rand(batch_size, dtype=torch.float64) * tree.total()
        index = tree.find(prefix)
        weight = (tree.leaves[index] / tree.min()).pow_(-self.beta).float()
        return index.to(device), {"_weight": weight.to(device)}

    def update_priority(self, index: torch.Tensor, priority: torch.Tensor) -> None:
        """Set the priorities of items ``index`` to ``(|priority| + eps) ** alpha``."""
        raw = priority.detach().reshape(-1).to("cpu", torch.float64).abs() + self.eps
        index = index.reshape(-1)
        if raw.numel() == 1 and index.numel() > 1:
            raw = raw.expand(index.shape)
        self.max_priority = max(self.max_priority, float(raw.max()))
        self.tree.set(index, raw.pow(self.alpha))

    def probabilities(self, size: int) -> torch.Tensor:
        """``P(i)`` of the first ``size`` items (for inspection and tests)."""
        leaves = self.tree.leaves[:size]
        return leaves / leaves.sum()

    def state_dict(self) -> dict[str, Any]:
        return {"tree": self.tree.state_dict(), "max_priority": self.max_priority, "beta": self.beta}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.tree.load_state_dict(state["tree"])
        self.max_priority = float(state["max_priority"])
        self.beta = float(state["beta"])
