"""Preallocated tensor storage for a replay buffer: ``capacity`` rows per key, written in a circle.

The storage takes its keys, shapes and dtypes from the first data written to it and allocates
each key's ``[capacity, *shape]`` tensor then, once (TorchRL's ``LazyTensorStorage``); nothing
grows afterwards, so its memory is bounded by its capacity times the size of one item.
With ``memmap=True`` the tensors are memory-mapped files (TorchRL's ``LazyMemmapStorage``):
the operating system pages them in and out, so a buffer larger than the RAM still works.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase

#: a key of the storage: the path of a leaf in the TensorDicts it stores
Key = tuple[str, ...]


class TensorStorage:
    """``capacity`` items of a fixed TensorDict structure, in preallocated tensors.

    An item is one row of the data written: a batch ``[N, *item_shape]`` writes ``N`` items
    (``item_shape`` is empty for single transitions, ``[T]`` for trajectories of ``T`` steps).

    :param capacity: the number of items kept; the oldest are overwritten first.
    :param device: where the tensors live.
    :param memmap: memory-map the tensors to files (CPU only).
    :param scratch_dir: where the memory-mapped files go (a temporary directory inside it, removed
        once they are mapped on POSIX systems, so that a killed run leaves nothing there; elsewhere by
        :meth:`close`); default the system's temporary directory.
    """

    def __init__(
        self,
        capacity: int,
        device: str | torch.device = "cpu",
        memmap: bool = False,
        scratch_dir: str | Path | None = None,
    ) -> None:
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.capacity = int(capacity)
        self.device = torch.device(device)
        if memmap and self.device.type != "cpu":
            raise ValueError(f"memmap storage lives on the CPU, not on {self.device}")
        self.memmap = memmap
        self.scratch_dir = scratch_dir
        self.cursor = 0  # the next row to write
        self.size = 0
        self.item_shape: torch.Size | None = None
        self._columns: dict[Key, torch.Tensor] = {}
        self._dir: Path | None = None

    def __len__(self) -> int:
        return self.size

    @property
    def allocated(self) -> bool:
        """Whether the tensors exist (after the first write)."""
        return bool(self._columns)

    @property
    def keys(self) -> list[Key]:
        """The keys of the stored items (empty before the first write)."""
        return list(self._columns)

    @property
    def nbytes(self) -> int:
        """Bytes held by the preallocated tensors: capacity times the size of one item."""
        return sum(t.numel() * t.element_size() for t in self._columns.values())

    # ------------------------------------------------------------------ allocation
    def _allocate(self, columns: Mapping[Key, torch.Tensor], item_shape: torch.Size) -> None:
        row = sum(v[0].numel() * v.element_size() for v in columns.values())
        where = Path(self.scratch_dir or tempfile.gettempdir()) if self.memmap else self.device
        check_fits(self.capacity * row, where, f"{self.capacity:,} items of {row:,} bytes")
        self.item_shape = item_shape
        if self.memmap:
            self._dir = Path(tempfile.mkdtemp(prefix="rl-replay-", dir=self.scratch_dir))
        for key, value in columns.items():
            shape = (self.capacity, *value.shape[1:])
            if self.memmap:
                assert self._dir is not None
                try:
                    dtype = torch.empty((), dtype=value.dtype).numpy().dtype
                except TypeError:
                    raise ValueError(f"cannot memory-map {'.'.join(key)} of dtype {value.dtype}") from None
                array = np.lib.format.open_memmap(self._dir / f"{'.'.join(key)}.npy", mode="w+", dtype=dtype, shape=shape)
                self._columns[key] = torch.from_numpy(array)
            else:
                self._columns[key] = torch.empty(shape, dtype=value.dtype, device=self.device)
        if self.memmap and os.name == "posix":  # the mappings keep the files: their names go now, so a killed run leaves nothing
            self._remove_files()

    def _remove_files(self) -> None:
        """Remove the memory-mapped files' directory (the mappings, while they last, keep the data)."""
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def close(self) -> None:
        """Free the tensors (and remove the memory-mapped files)."""
        self._columns.clear()
        self.cursor = self.size = 0
        self._remove_files()

    # ------------------------------------------------------------------ writing and reading
    def write(self, data: TensorDictBase) -> torch.Tensor:
        """Write the items of ``data`` (its first dimension) after the last ones, overwriting the oldest.

        :param data: a TensorDict ``[N, *item_shape]`` with the keys of the first write.
        :return: the row of each item ``[N]`` (of the last ``capacity`` items when ``N`` is larger).
        """
        if data.batch_dims < 1:
            raise ValueError("write a TensorDict with a batch dimension: one row per item")
        columns = {_key(k): cast(torch.Tensor, v) for k, v in data.items(include_nested=True, leaves_only=True)}
        n = data.batch_size[0]
        if n > self.capacity:  # only the last capacity items would survive
            columns = {k: v[n - self.capacity :] for k, v in columns.items()}
            n = self.capacity
        if not self._columns:
            self._allocate(columns, data.batch_size[1:])
        elif columns.keys() != self._columns.keys() or data.batch_size[1:] != self.item_shape:
            raise KeyError(_mismatch(list(self._columns), list(columns), self.item_shape, data.batch_size[1:]))
        start, stop = self.cursor, self.cursor + n
        for key, value in columns.items():
            column = self._columns[key]
            value = value.to(column.device, non_blocking=column.device.type == "cuda")  # never to the CPU: it would be read unfinished
            if stop <= self.capacity:
                column[start:stop] = value
            else:  # wrap around
                split = self.capacity - start
                column[start:] = value[:split]
                column[: n - split] = value[split:]
        self.cursor = stop % self.capacity
        self.size = min(self.size + n, self.capacity)
        return torch.arange(start, stop, device=self.device) % self.capacity

    def get(self, index: torch.Tensor) -> TensorDict:
        """The items at rows ``index`` ``[B]``, as a TensorDict ``[B, *item_shape]``."""
        index = index.to(self.device)
        nested: dict[str, Any] = {}
        for key, column in self._columns.items():
            node = nested
            for part in key[:-1]:
                node = node.setdefault(part, {})
            node[key[-1]] = column.index_select(0, index)
        return _tensordict(nested, torch.Size([index.shape[0], *(self.item_shape or ())]), self.device)

    def column(self, key: str | Key) -> torch.Tensor:
        """The whole preallocated tensor of ``key`` ``[capacity, ...]`` (rows ``>= len(self)`` hold garbage)."""
        return self._columns[_key(key)]

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> dict[str, Any]:
        """The stored items (copies of the first ``len(self)`` rows) and where writing stands."""
        return {
            "cursor": self.cursor,
            "size": self.size,
            "item_shape": list(self.item_shape or []),
            "columns": {".".join(k): v[: self.size].clone() for k, v in self._columns.items()},
        }

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state_dict`; the capacity must hold the saved items."""
        columns = {tuple(k.split(".")): v for k, v in state["columns"].items()}
        size = int(state["size"])
        if size > self.capacity:
            raise ValueError(f"the checkpoint holds {size} items, more than this buffer's capacity {self.capacity}")
        cursor = int(state["cursor"])
        if cursor != size and size < self.capacity:  # saved full and wrapped, restored into a larger capacity: oldest first
            columns = {k: torch.cat([v[cursor:size], v[:cursor]]) for k, v in columns.items()}
            cursor = size % self.capacity
        self.close()
        if columns:
            self._allocate(columns, torch.Size(state["item_shape"]))
            for key, value in columns.items():
                self._columns[key][:size] = value.to(self.device)
        self.cursor, self.size = cursor, size


def check_fits(nbytes: int, where: torch.device | Path, what: str) -> None:
    """Refuse to allocate more than ``where`` has at all: the machine's memory, a GPU's, or the free space of a folder.

    Allocating more fails late and badly (an allocator's multi-line error, or the kernel killing
    the process as the pages are touched), so buffers check first.

    :param nbytes: the bytes about to be allocated.
    :param where: a device, or the folder of memory-mapped files.
    :param what: what needs them, for the message.
    :raises MemoryError: with a one-line message.
    """
    if isinstance(where, Path):
        limit, place = shutil.disk_usage(where).free, f"free space in {where}"
    elif where.type == "cuda":
        limit, place = torch.cuda.mem_get_info(where)[1], f"memory of {where}"
    else:
        limit, place = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), "memory of this machine"
    if nbytes > limit:
        raise MemoryError(f"{what} would take {_size(nbytes)}, more than the {_size(limit)} {place}")


def _size(nbytes: float) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if nbytes < 1000:
            return f"{nbytes:.3g} {unit}"
        nbytes /= 1000
    return f"{nbytes:.3g} TB"


def _tensordict(nested: dict[str, Any], batch_size: torch.Size, device: torch.device) -> TensorDict:
    """A TensorDict of tensors known to fit ``batch_size`` and ``device`` (they were stored so), without checking them again.

    ``TensorDict._new_unsafe`` skips the per-tensor checks of the constructor, a fifth of a sample's cost; a tensordict
    without it gets the checked constructor.
    """
    new = getattr(TensorDict, "_new_unsafe", None)
    if new is None:
        return TensorDict(nested, batch_size=batch_size, device=device)
    children = {k: _tensordict(v, batch_size, device) if isinstance(v, dict) else v for k, v in nested.items()}
    return new(children, batch_size=batch_size, device=device)


def _key(key: str | tuple[str, ...]) -> Key:
    return (key,) if isinstance(key, str) else tuple(key)


def _mismatch(have: list[Key], got: list[Key], have_shape: Any, got_shape: Any) -> str:
    if have_shape != got_shape:
        return f"items of shape {list(got_shape)} do not fit a storage of items of shape {list(have_shape)}"
    missing = sorted(".".join(k) for k in set(have) - set(got))
    extra = sorted(".".join(k) for k in set(got) - set(have))
    return f"the data's keys differ from the stored ones (missing: {', '.join(missing) or 'none'}; new: {', '.join(extra) or 'none'})"
