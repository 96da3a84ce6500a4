"""The torchsnapshot checkpoint backend: one snapshot directory per checkpoint.

A checkpoint ``ckpt-<frames>/`` is a torchsnapshot snapshot of one stateful, ``rlcore``,
holding the JSON skeleton of the state (a ``uint8`` tensor), its CRC-32 and the tensors
(see :mod:`rl_plugin_torchsnapshot._codec`). torchsnapshot writes ``.snapshot_metadata``
(its manifest) last, so a snapshot without it is incomplete.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

import torch

from rlcore import CheckpointBackend, CheckpointError, error_line

from . import _codec

with warnings.catch_warnings():
    # torchsnapshot 0.1.0 decorates helpers with torch.jit.script, deprecated in recent torch.
    warnings.filterwarnings("ignore", message=r".*torch\.jit\.script.* is deprecated", category=DeprecationWarning)
    from torchsnapshot import Snapshot, StateDict
    from torchsnapshot.manifest import (
        ChunkedTensorEntry,
        DictEntry,
        Entry,
        ListEntry,
        OrderedDictEntry,
        PrimitiveEntry,
        TensorEntry,
    )
    from torchsnapshot.serialization import string_to_dtype

#: The key of the single stateful in every snapshot.
APP_KEY = "rlcore"
#: torchsnapshot's manifest, written once every tensor is on disk.
MANIFEST = ".snapshot_metadata"
_SKELETON, _SKELETON_CRC = "skeleton", "skeleton_crc32"
_SAFE_SERIALIZER = "buffer_protocol"  # raw bytes; "torch_save" would unpickle


class TorchSnapshotBackend(CheckpointBackend):
    """Checkpoints as torchsnapshot snapshots; reading never unpickles anything.

    Tensors come back on the CPU. Non-tensor values are stored as JSON, so the state may hold
    only tensors, numpy arrays and scalars, ``None``/``bool``/``int``/``float``/``str``/``bytes``,
    ``torch.Size``/``dtype``/``device``, and dicts, lists and tuples of them; other mappings come
    back as ``dict`` and tuple subclasses as ``tuple``.

    :param directory: where checkpoints live (``RUN_DIR/checkpoints``).
    :param keep_last: how many checkpoints to keep; older ones are deleted after a save.
    """

    suffix = ""

    def write(self, state: Mapping[str, Any], path: Path) -> None:
        """Take a snapshot of ``state`` at the new directory ``path``.

        :param state: the trainer's state.
        :param path: the (temporary) snapshot directory; it must not exist.
        :raises TypeError: when ``state`` holds a value that cannot be stored.
        """
        skeleton, tensors = _codec.encode(state)
        skeleton_tensor = torch.frombuffer(bytearray(skeleton), dtype=torch.uint8)
        payload = {_SKELETON: skeleton_tensor, _SKELETON_CRC: _codec.crc32(skeleton_tensor), **tensors}
        Snapshot.take(str(path), {APP_KEY: StateDict(payload)})

    def read(self, path: Path) -> dict[str, Any]:
        """Read a snapshot written by :meth:`write`.

        :param path: the snapshot directory.
        :return: the state.
        :raises CheckpointError: when the snapshot is missing, incomplete, corrupted or holds pickled objects.
        """
        if not path.is_dir():
            raise CheckpointError(f"{path} is not a snapshot directory")
        if not (path / MANIFEST).is_file():
            raise CheckpointError(f"{path} has no {MANIFEST} (an incomplete snapshot)")
        snapshot = Snapshot(str(path))
        try:
            manifest = snapshot.metadata.manifest  # get_manifest() would deep-copy it
        except Exception as err:
            raise CheckpointError(f"{path}/{MANIFEST} is unreadable: {error_line(err)}") from None
        _check_manifest(manifest, path)
        payload = StateDict()
        try:
            snapshot.restore({APP_KEY: payload})  # reuses the manifest checked above
        except Exception as err:
            raise CheckpointError(f"{path} has missing or truncated data: {error_line(err)}") from None
        skeleton = payload.get(_SKELETON)
        if not isinstance(skeleton, torch.Tensor) or skeleton.dtype != torch.uint8:
            raise CheckpointError(f"{path} holds no state skeleton")
        if _codec.crc32(skeleton) != payload.get(_SKELETON_CRC):
            raise CheckpointError(f"{path}: the state skeleton is corrupted (CRC-32 mismatch)")
        tensors = {k: v for k, v in payload.items() if k not in (_SKELETON, _SKELETON_CRC)}
        try:
            return _codec.decode(skeleton.numpy().tobytes(), tensors)
        except CheckpointError as err:
            raise CheckpointError(f"{path}: {err}") from None


def _check_manifest(manifest: Mapping[str, Entry], path: Path) -> None:
    """Refuse a manifest this plugin did not write, one that would unpickle or read outside
    ``path``, and one whose data files are missing or shorter than it says.

    The size check matters: torchsnapshot 0.1.0 drops the errors of tensors read from a
    batched file, so a truncated file would otherwise leave uninitialised memory behind.

    :raises CheckpointError: naming the offending entry or file.
    """
    if f"0/{APP_KEY}" not in manifest:
        raise CheckpointError(f"{path} was not written by rl-plugin-torchsnapshot (no {APP_KEY!r} entry)")
    sizes: dict[str, int] = {}  # data file -> bytes the manifest needs from it
    for logical_path, entry in manifest.items():
        if isinstance(entry, (DictEntry, OrderedDictEntry, ListEntry, PrimitiveEntry)):
            continue
        if isinstance(entry, TensorEntry):
            tensors = [entry]
        elif isinstance(entry, ChunkedTensorEntry):
            tensors = [chunk.tensor for chunk in entry.chunks]
        else:
            raise CheckpointError(f"{path}: refusing entry {logical_path} of type {entry.type} (it would be unpickled)")
        for tensor in tensors:
            if tensor.serializer != _SAFE_SERIALIZER:
                raise CheckpointError(f"{path}: refusing entry {logical_path} serialized with {tensor.serializer!r}")
            location = PurePosixPath(tensor.location)
            if location.is_absolute() or ".." in location.parts:
                raise CheckpointError(f"{path}: entry {logical_path} points outside the snapshot ({tensor.location})")
            end = tensor.byte_range[1] if tensor.byte_range else _nbytes(tensor)
            sizes[tensor.location] = max(sizes.get(tensor.location, 0), end)
    for name, needed in sizes.items():
        file = path / name
        if not file.is_file():
            raise CheckpointError(f"{path} is missing its data file {name}")
        if file.stat().st_size < needed:
            raise CheckpointError(f"{path}: data file {name} is truncated ({file.stat().st_size} of {needed} bytes)")


def _nbytes(entry: TensorEntry) -> int:
    """The size of a tensor entry's raw bytes."""
    try:
        element_size = torch.empty((), dtype=string_to_dtype(entry.dtype)).element_size()
    except ValueError:
        raise CheckpointError(f"unknown dtype {entry.dtype!r} in the manifest") from None
    return math.prod(entry.shape) * element_size
