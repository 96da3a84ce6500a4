"""The checkpoint-backend interface: one checkpoint per save, written atomically, the last K kept."""

from __future__ import annotations

import os
import re
import shutil
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ._errors import RLCoreError


class CheckpointError(RLCoreError):
    """A checkpoint that cannot be read: missing, truncated, corrupted or unsafe."""


class CheckpointBackend:
    """Base class of checkpoint backends.

    A checkpoint is named ``ckpt-<frames, 12 digits><suffix>`` inside ``directory``; it is
    written under a temporary name and renamed into place, so a crash never leaves a half
    checkpoint under a real name. Subclasses implement :meth:`write` and :meth:`read`.

    :param directory: where checkpoints live (``RUN_DIR/checkpoints``).
    :param keep_last: how many checkpoints to keep; older ones are deleted after a save.
    """

    #: ``".pt"`` for a file per checkpoint, ``""`` for a directory per checkpoint.
    suffix: str = ""

    def __init__(self, directory: str | os.PathLike[str], keep_last: int = 3) -> None:
        if keep_last < 1:
            raise ValueError(f"keep_last must be at least 1, got {keep_last}")
        self.directory = Path(directory)
        self.keep_last = keep_last

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
        pattern = re.compile(rf"ckpt-(\d{{12}}){re.escape(self.suffix)}$")
        found = [(int(m.group(1)), p) for p in self.directory.iterdir() if (m := pattern.match(p.name))]
        return [p for _, p in sorted(found)]

    def save(self, state: Mapping[str, Any], frames: int) -> Path:
        """Write a checkpoint atomically, then delete all but the last ``keep_last``.

        :param state: the trainer's state.
        :param frames: collected frames, which name the checkpoint.
        :return: the checkpoint's path.
        """
        self.directory.mkdir(parents=True, exist_ok=True)
        final = self.directory / f"ckpt-{frames:012d}{self.suffix}"
        tmp = self.directory / f".tmp-{final.name}-{os.getpid()}"
        _remove(tmp)
        try:
            self.write(state, tmp)
            _fsync(tmp)
            _remove(final)
            os.replace(tmp, final)
            _fsync_directory(self.directory)
        finally:
            _remove(tmp)
        for old in self.checkpoints()[: -self.keep_last]:
            _remove(old)
        return final

    def load(self, path: str | os.PathLike[str] | None = None) -> tuple[Path, dict[str, Any]]:
        """Load ``path``, or the newest readable checkpoint when ``path`` is ``None``.

        A newest checkpoint that cannot be read is skipped with a warning naming it.

        :return: the path actually loaded and its state.
        :raises CheckpointError: when ``path`` (or every checkpoint) is unreadable.
        """
        if path is not None:
            return Path(path), self.read(Path(path))
        candidates = self.checkpoints()
        if not candidates:
            raise CheckpointError(f"no checkpoint in {self.directory}")
        for candidate in reversed(candidates):
            try:
                return candidate, self.read(candidate)
            except CheckpointError as err:
                warnings.warn(f"skipping unreadable checkpoint {candidate}: {err}", stacklevel=2)
        raise CheckpointError(f"no readable checkpoint in {self.directory}")

    def __repr__(self) -> str:
        return f"{type(self).__name__}(directory={str(self.directory)!r}, keep_last={self.keep_last})"


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


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
