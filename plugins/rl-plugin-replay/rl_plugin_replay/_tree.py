"""A sum tree (with a min tree beside it) over priorities, vectorised: no per-item Python.

The leaves are the priorities, padded to a multiple of ``fanout``; each level above holds the
sums (and minima) of blocks of ``fanout`` nodes of the level below, up to a top level of at most
``fanout`` nodes. Writing a batch of leaves recomputes, level by level, only the blocks it
touched, from their children (never by adding deltas, so no rounding drift accumulates).
Finding the leaves of a batch of prefix sums walks down the levels for the whole batch at once:
one ``[batch, fanout]`` cumulative sum per level. With ``fanout=32`` a million leaves make four
levels.

The tree lives in NumPy arrays on the CPU, as TorchRL's sum tree does, whatever the device of
the stored data: its operations are on a few hundred numbers at a time, where NumPy's per-call
cost is a fraction of torch's. Its interface takes and returns torch tensors.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from ._storage import check_fits


class SumTree:
    """Sums and minima of ``capacity`` non-negative values, with prefix-sum search.

    :param capacity: number of leaves.
    :param fanout: children per node.
    """

    def __init__(self, capacity: int, fanout: int = 32) -> None:
        if capacity < 1 or fanout < 2:
            raise ValueError(f"capacity must be >= 1 and fanout >= 2, got {capacity} and {fanout}")
        check_fits(2 * 8 * capacity * fanout // (fanout - 1), torch.device("cpu"), f"a sum tree of {capacity:,} priorities")
        self.capacity = capacity
        self.fanout = fanout
        self.sums: list[np.ndarray] = []  # level 0: the leaves; each level padded to a multiple of fanout
        self.mins: list[np.ndarray] = []
        size = capacity
        while True:
            padded = math.ceil(size / fanout) * fanout
            self.sums.append(np.zeros(padded, dtype=np.float64))
            self.mins.append(np.full(padded, np.inf, dtype=np.float64))
            if padded == fanout:
                break
            size = padded // fanout

    @property
    def leaves(self) -> torch.Tensor:
        """The values of the leaves ``[capacity]`` (float64, sharing the tree's memory)."""
        return torch.from_numpy(self.sums[0][: self.capacity])

    def total(self) -> float:
        """The sum of all leaves."""
        return float(self.sums[-1].sum())

    def min(self) -> float:
        """The smallest leaf that was ever set (``inf`` while none is)."""
        return float(self.mins[-1].min())

    def set(self, index: torch.Tensor, value: torch.Tensor | float) -> None:
        """Set leaves ``index`` to ``value`` and update the blocks above them.

        :param index: leaf indices ``[n]`` (duplicates allowed: the last one wins).
        :param value: non-negative values ``[n]``, or one for all.
        """
        node = index.detach().cpu().numpy().astype(np.int64, copy=False)
        values = value.detach().cpu().numpy() if isinstance(value, torch.Tensor) else value
        self.sums[0][node] = values
        self.mins[0][node] = values
        for level in range(1, len(self.sums)):
            node = node // self.fanout
            self.sums[level][node] = self.sums[level - 1].reshape(-1, self.fanout)[node].sum(1)
            self.mins[level][node] = self.mins[level - 1].reshape(-1, self.fanout)[node].min(1)

    def find(self, prefix: torch.Tensor) -> torch.Tensor:
        """The leaf where each prefix sum falls: the first ``i`` with ``sum(leaves[:i + 1]) > prefix``.

        A leaf of value zero is never returned; prefixes at or above the total give the last
        non-zero leaf.

        :param prefix: prefix sums ``[n]`` in ``[0, total())``.
        :return: leaf indices ``[n]`` (int64, CPU).
        """
        F = self.fanout
        u = prefix.detach().cpu().numpy().astype(np.float64)
        rows = np.arange(len(u))
        node = np.zeros(len(u), dtype=np.int64)
        for level in reversed(range(len(self.sums))):
            children = self.sums[level].reshape(-1, F)[node]  # [n, F]
            cumsum = children.cumsum(1)
            u = np.minimum(u, np.nextafter(cumsum[:, -1], 0))  # stay inside this block's mass
            child = np.minimum((cumsum <= u[:, None]).sum(1), F - 1)
            # the mass left of the chosen child: cumsum[child - 1] <= u, so u stays >= 0
            u = u - np.where(child > 0, cumsum[rows, child - 1], 0.0)
            node = node * F + child
        return torch.from_numpy(node)

    def state_dict(self) -> dict[str, Any]:
        """The leaves up to the last one ever set (copies): what is saved grows with the items, not the capacity."""
        used = int(np.flatnonzero(self.mins[0] != np.inf)[-1]) + 1 if self.min() != np.inf else 0
        return {
            "capacity": self.capacity,
            "sums": torch.from_numpy(self.sums[0][:used].copy()),
            "mins": torch.from_numpy(self.mins[0][:used].copy()),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` (same capacity and fanout): the leaves, then every level above them."""
        if int(state["capacity"]) != self.capacity:
            raise ValueError(f"a sum tree of {state['capacity']} leaves does not fit one of {self.capacity}")
        used = len(state["sums"])
        for level, saved, empty in ((self.sums, state["sums"], 0.0), (self.mins, state["mins"], np.inf)):
            level[0][:used] = np.asarray(saved)
            level[0][used:] = empty
        for depth in range(1, len(self.sums)):  # as set() computes them: each block from its children (then padding)
            blocks = len(self.sums[depth - 1]) // self.fanout
            self.sums[depth][:blocks] = self.sums[depth - 1].reshape(-1, self.fanout).sum(1)
            self.mins[depth][:blocks] = self.mins[depth - 1].reshape(-1, self.fanout).min(1)
