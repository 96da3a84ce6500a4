"""The checkpoint-backend interface: one checkpoint per save, written atomically, the last K kept."""

from __future__ import annotations

import errno
import os
import re
import shutil
import warnings
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import RLCoreError


class CheckpointError(RLCoreError):
    """A checkpoint that cannot be read: missing, truncated, corrupted or unsafe."""


#: The key under which a checkpoint carries the checksum of its content.
CHECKSUM_KEY = "checksum"


class CheckpointBackend:
    """Base class of checkpoint backends.

    A checkpoint is named ``ckpt-<frames, 12 digits><suffix>`` inside ``directory``; it is
    written under a temporary name and renamed into place, so a crash never leaves a half
    checkpoint under a real name (and temporaries a crash left are removed at the next save).
    Each checkpoint carries a checksum of its content (:func:`content_checksum`), checked when it
    is loaded: a checkpoint whose bytes changed on disk is corrupt. Subclasses implement
    :meth:`write` and :meth:`read`.

    :param directory: where checkpoints live (``RUN_DIR/checkpoints``).
    :param keep_last: how many checkpoints to keep; older ones are deleted after a save.
    """

    #: ``".pt"`` for a file per checkpoint, ``""`` for a directory per checkpoint.
    suffix: str = ""
    #: the key under which a checkpoint on disk carries the checksum of its content (:func:`content_checksum`)
    checksum_key = CHECKSUM_KEY

    def __init__(self, directory: str | os.PathLike[str], keep_last: int = 3) -> None:
        if keep_last < 1:
            raise ValueError(f"keep_last must be at least 1, got {keep_last}")
        self.directory = Path(directory)
        self.keep_last = keep_last
        #: what the temporaries of this backend's saves start with
        self.temp_prefix = ".tmp-ckpt-"

    # -- what a backend implements
    def write(self, state: Mapping[str, Any], path: Path) -> None:
        """Write ``state`` to the new path ``path``.

        A state holds tensors, numpy arrays and scalars of numeric dtypes, and plain Python values
        (numbers, strings, ``None``, lists, tuples, dicts).

        :raises TypeError: for a value the backend could not read back, here at the save rather
            than at resume.
        """
        raise NotImplementedError

    def read(self, path: Path) -> dict[str, Any]:
        """Read a checkpoint written by :meth:`write`.

        :raises CheckpointError: when it is unreadable or unsafe.
        """
        raise NotImplementedError

    # -- shared behaviour
    def checkpoints(self) -> list[Path]:
        """The checkpoints present, oldest first."""
        if not self.directory.is_dir():
            return []
        pattern = re.compile(rf"ckpt-(\d{{12,}}){re.escape(self.suffix)}$")  # (12 digits, more past 10^12 frames)
        found = [(int(m.group(1)), p) for p in self.directory.iterdir() if (m := pattern.match(p.name))]
        return [p for _, p in sorted(found)]

    def path_for(self, frames: int) -> Path:
        """Where the checkpoint of ``frames`` collected frames goes."""
        return self.directory / f"ckpt-{frames:012d}{self.suffix}"

    def save(self, state: Mapping[str, Any], frames: int) -> Path:
        """Write a checkpoint atomically, then delete all but the last ``keep_last``.

        :param state: the trainer's state.
        :param frames: collected frames, which name the checkpoint.
        :return: the checkpoint's path.
        """
        self.directory.mkdir(parents=True, exist_ok=True)
        for stale in self.directory.glob(f"{self.temp_prefix}*"):  # left by a run that was killed while saving
            _remove(stale)
        final = self.path_for(frames)
        tmp = self.directory / f".tmp-{final.name}-{os.getpid()}"
        try:
            self.write_checked(state, tmp)
            _fsync(tmp)
            if final.is_dir():  # (os.replace overwrites a file atomically, but not a directory)
                _remove(final)
            os.replace(tmp, final)
            _fsync_directory(self.directory)
        except Exception as err:
            _remove(tmp)
            if _disk_full(err, self.directory):  # (torch.save says "unexpected pos", torchsnapshot what it may)
                last = next(reversed(self.checkpoints()), None)
                kept = f"the last good one is {last.name}" if last is not None else "there is no earlier one"
                raise CheckpointError(f"{final}: no space left on the device (ENOSPC) to write this checkpoint; {kept}") from err
            raise
        finally:
            _remove(tmp)
        others = [p for p in self.checkpoints() if p != final]  # (newer ones too, after resuming past an unreadable one)
        for old in others[: max(len(others) - (self.keep_last - 1), 0)]:
            _remove(old)
        return final

    def load(self, path: str | os.PathLike[str] | None = None) -> tuple[Path, dict[str, Any]]:
        """Load ``path``, or the newest readable checkpoint when ``path`` is ``None``.

        A newest checkpoint that cannot be read is skipped with a warning naming it.

        :return: the path actually loaded and its state.
        :raises CheckpointError: when ``path`` (or every checkpoint) is unreadable.
        """
        if path is not None:
            return Path(path), self.read_checked(Path(path))
        candidates = self.checkpoints()
        if not candidates:
            raise CheckpointError(f"no checkpoint in {self.directory}")
        for candidate in reversed(candidates):
            try:
                return candidate, self.read_checked(candidate)
            except CheckpointError as err:
                warnings.warn(f"skipping unreadable checkpoint {candidate}: {err}", stacklevel=2)
        raise CheckpointError(f"no readable checkpoint in {self.directory}")

    def write_checked(self, state: Mapping[str, Any], path: Path) -> None:
        """:meth:`write` ``state`` with its checksum (what :meth:`save` writes, before it renames it into place)."""
        self.write({**state, CHECKSUM_KEY: content_checksum(state)}, path)

    def read_checked(self, path: Path) -> dict[str, Any]:
        """:meth:`read` ``path`` and check its checksum (checkpoints written before checksums load as they are).

        :raises CheckpointError: when it is unreadable or its content does not match its checksum.
        """
        state = self.read(path)
        expected = state.pop(CHECKSUM_KEY, None)
        if expected is not None and int(expected) != content_checksum(state):
            raise CheckpointError(f"{path} is corrupted: its content does not match its checksum")
        return state

    def __repr__(self) -> str:
        return f"{type(self).__name__}(directory={str(self.directory)!r}, keep_last={self.keep_last})"


class SingleFileCheckpoint(CheckpointBackend):
    """One checkpoint at a fixed path, overwritten atomically at every save (TorchRL's ``save_trainer_file``).

    :param backend: the backend that writes and reads the checkpoint (its own directory is unused).
    :param path: the checkpoint's path: a file for a file backend, a directory for a directory backend.
    """

    def __init__(self, backend: CheckpointBackend, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        super().__init__(self.path.parent, keep_last=1)
        self.backend = backend
        self.suffix = backend.suffix
        self.temp_prefix = f".tmp-{self.path.name}-"

    def write(self, state: Mapping[str, Any], path: Path) -> None:
        self.backend.write(state, path)

    def read(self, path: Path) -> dict[str, Any]:
        return self.backend.read(path)

    def checkpoints(self) -> list[Path]:
        return [self.path] if self.path.exists() else []

    def path_for(self, frames: int) -> Path:
        return self.path

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.backend!r}, path={str(self.path)!r})"


def content_checksum(state: Any) -> int:
    """A CRC-32 of a state's content: every tensor's and array's dtype, shape and bytes, every plain value, every key.

    Containers are walked in key order (dicts) or position order (lists and tuples alike), so a
    state reads back to the same checksum whatever the backend did with container types.

    :param state: nested dicts, lists and tuples of tensors, numpy arrays and plain values.
    """
    import numpy as np  # (lazy: plugins list without numpy nor torch)
    import torch

    crc = 0
    stack: list[tuple[str, Any]] = [("", state)]
    while stack:
        where, value = stack.pop()
        if isinstance(value, Mapping):
            stack.extend((f"{where}.{key}", value[key]) for key in sorted(value, key=str, reverse=True))
            crc = zlib.crc32(f"{where}:dict:{len(value)}".encode(), crc)
        elif isinstance(value, (list, tuple)):
            stack.extend((f"{where}[{i}]", item) for i, item in reversed(list(enumerate(value))))
            crc = zlib.crc32(f"{where}:seq:{len(value)}".encode(), crc)
        elif isinstance(value, torch.Tensor):
            data = value.detach().cpu().contiguous().reshape(-1)
            crc = zlib.crc32(f"{where}:{data.dtype}:{tuple(value.shape)}".encode(), crc)
            crc = zlib.crc32(data.view(torch.uint8).numpy().data, crc)
        elif isinstance(value, np.ndarray) and not value.dtype.hasobject:
            crc = zlib.crc32(f"{where}:{value.dtype.str}:{value.shape}".encode(), crc)
            crc = zlib.crc32(np.ascontiguousarray(value).view(np.uint8).data, crc)
        else:
            plain = value.item() if isinstance(value, np.generic) else value
            crc = zlib.crc32(f"{where}={plain!r}".encode(), crc)
    return crc


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _disk_full(error: BaseException, directory: Path) -> bool:
    """Whether ``error``, raised writing into ``directory``, is a full disk: ENOSPC, or less than 1 MiB left there after it."""
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        return True
    try:
        return shutil.disk_usage(directory).free < 2**20
    except OSError:
        return False


def _fsync_directory(path: Path) -> None:
    """Make a rename in ``path`` durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync(path: Path) -> None:
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    for file in files:
        with open(file, "rb") as handle:
            os.fsync(handle.fileno())
