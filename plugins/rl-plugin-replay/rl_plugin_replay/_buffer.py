"""The replay buffer: a :class:`TensorStorage` and a sampler, TorchRL's ``TensorDictReplayBuffer`` in small."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from tensordict import TensorDictBase

from ._keys import INDEX_KEY, PRIORITY_KEY
from ._samplers import PrioritizedSampler, UniformSampler
from ._storage import TensorStorage
from ._tree import SumTree

SAMPLERS = ("uniform", "prioritized")


class ReplayBuffer:
    """Stores TensorDicts and samples batches of them.

    A sample is a TensorDict ``[batch_size, *item_shape]`` with the stored keys, plus
    ``"index"`` (the rows sampled, for :meth:`update_priority`) and, with a prioritized sampler,
    ``"_weight"`` (the importance weights).

    :param storage: where the items live.
    :param sampler: a :class:`UniformSampler` (default) or a :class:`PrioritizedSampler`.
    :param batch_size: the default size of :meth:`sample`.
    """

    def __init__(self, storage: TensorStorage, sampler: UniformSampler | PrioritizedSampler | None = None, batch_size: int | None = None) -> None:
        self.storage = storage
        self.sampler = sampler if sampler is not None else UniformSampler()
        self.batch_size = batch_size

    def __len__(self) -> int:
        return len(self.storage)

    @property
    def capacity(self) -> int:
        """How many items the buffer keeps."""
        return self.storage.capacity

    def resize(self, capacity: int) -> None:
        """Keep ``capacity`` items instead: for an empty buffer, before its storage is allocated.

        :raises ValueError: when the buffer holds items, or ``capacity`` is below 1.
        """
        if len(self) or self.storage.allocated:
            raise ValueError("only an empty buffer can be resized")
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.storage.capacity = capacity
        if isinstance(self.sampler, PrioritizedSampler):
            self.sampler.tree = SumTree(capacity)

    @property
    def prioritized(self) -> bool:
        """Whether sampling follows priorities."""
        return isinstance(self.sampler, PrioritizedSampler)

    def extend(self, data: TensorDictBase) -> torch.Tensor:
        """Add the items of ``data`` (one per row of its first dimension).

        :return: the rows they were written to.
        """
        index = self.storage.write(data)
        self.sampler.add(index)
        return index

    def sample(self, batch_size: int | None = None) -> TensorDictBase:
        """A batch of stored items, drawn with replacement.

        :param batch_size: how many; default the buffer's ``batch_size``.
        :raises RuntimeError: when the buffer is empty.
        """
        batch_size = batch_size or self.batch_size
        if batch_size is None:
            raise ValueError("no batch_size: give one here or to the buffer")
        if len(self.storage) == 0:
            raise RuntimeError("cannot sample from an empty replay buffer")
        index, extra = self.sampler.sample(len(self.storage), batch_size, self.storage.device)
        batch = self.storage.get(index)
        if batch.batch_dims == 1:
            batch.set(INDEX_KEY, index)
            for key, value in extra.items():
                batch.set(key, value)
        else:  # items are trajectories: every step of an item carries its row and weight
            trailing = (1,) * (batch.batch_dims - 1)
            batch.set(INDEX_KEY, index.reshape(-1, *trailing).expand(batch.batch_size))
            for key, value in extra.items():
                batch.set(key, value.reshape(-1, *trailing).expand(batch.batch_size))
        return batch

    def update_priority(self, index: torch.Tensor, priority: torch.Tensor) -> None:
        """Set new priorities (e.g. absolute TD errors) for the rows ``index`` (no-op when uniform)."""
        self.sampler.update_priority(index, priority)

    def update_tensordict_priority(self, data: TensorDictBase, priority_key: str = PRIORITY_KEY) -> None:
        """Update priorities from a sample on which a loss wrote ``priority_key`` (TorchRL's method name).

        Does nothing when the sampler is uniform or the sample carries no priorities.
        """
        if not self.prioritized:
            return
        priority = data.get(priority_key, None)
        if priority is None:
            return
        index = data.get(INDEX_KEY)
        rows = index.shape[0]
        if index.dim() > 1:  # trajectories: one row per item
            index = index.reshape(rows, -1)[:, 0]
        self.update_priority(index, priority.reshape(rows, -1).amax(-1))  # an item's largest error

    def to(self, device: str | torch.device) -> ReplayBuffer:
        """Move the storage to ``device`` (before the first write)."""
        device = torch.device(device)
        if self.storage.allocated:
            raise RuntimeError("move a replay buffer before writing to it")
        self.storage.device = device  # (a sampler's priorities stay on the CPU)
        return self

    def empty(self) -> None:
        """Forget every item (the storage is freed and allocated again at the next write)."""
        self.storage.close()
        if isinstance(self.sampler, PrioritizedSampler):
            sampler = self.sampler
            self.sampler = PrioritizedSampler(self.capacity, sampler.alpha, sampler.beta, sampler.eps)

    def state_dict(self) -> dict[str, Any]:
        """The stored items and the sampler's state (priorities)."""
        return {"storage": self.storage.state_dict(), "sampler": self.sampler.state_dict()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict`; items saved without priorities (a uniform buffer's) get the same, largest one."""
        self.storage.load_state_dict(state["storage"])
        if isinstance(self.sampler, PrioritizedSampler) and not state["sampler"]:
            self.sampler.add(torch.arange(len(self.storage)))
        else:
            self.sampler.load_state_dict(state["sampler"])


def make_replay_buffer(
    capacity: int,
    *,
    sampler: str = "uniform",
    alpha: float = 0.6,
    beta: float = 0.4,
    priority_eps: float = 1e-6,
    batch_size: int | None = None,
    device: str | torch.device = "cpu",
    memmap: bool = False,
    scratch_dir: str | Path | None = None,
) -> ReplayBuffer:
    """A replay buffer over a preallocated storage (TorchRL's ``make_replay_buffer``).

    :param capacity: items kept.
    :param sampler: ``"uniform"`` or ``"prioritized"``.
    :param alpha: prioritisation exponent (prioritized only).
    :param beta: importance-sampling exponent (prioritized only).
    :param priority_eps: added to ``|priority|`` (prioritized only).
    :param batch_size: the default sample size.
    :param device: where the storage lives (a prioritized sampler's sum tree stays on the CPU).
    :param memmap: memory-map the storage to files.
    :param scratch_dir: where memory-mapped files go.
    :raises ValueError: for an unknown sampler.
    """
    if sampler not in SAMPLERS:
        raise ValueError(f"unknown sampler {sampler!r} (valid choices: {', '.join(SAMPLERS)})")
    storage = TensorStorage(capacity, device=device, memmap=memmap, scratch_dir=scratch_dir)
    chosen: UniformSampler | PrioritizedSampler = (
        PrioritizedSampler(capacity, alpha=alpha, beta=beta, eps=priority_eps) if sampler == "prioritized" else UniformSampler()
    )
    return ReplayBuffer(storage, chosen, batch_size=batch_size)
