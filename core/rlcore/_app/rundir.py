"""The run directory: claimed by one run at a time, never mixed with another run, every file inside it."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import socket
import sys
import time
from pathlib import Path

from .._kernel.contracts import CHECKPOINTS, CONFIG_FILE, HOLDER_FILE
from .._kernel.errors import ConfigError


class RunDirectoryError(ConfigError):
    """The run directory cannot be used: held by another run, not a run of rl-core, or not fresh."""


class RunDirectory:
    """A run directory, locked for the lifetime of the run that claims it.

    The lock is an exclusive ``flock`` on the directory itself, so a crashed run (even one killed
    with SIGKILL) never leaves a stale lock behind. A run starts only in a fresh directory (absent
    or empty); an existing run directory is continued with ``resume`` or started afresh with
    ``force``; anything else is refused. Nothing is written until :meth:`commit`, so a run whose
    build fails leaves an existing directory exactly as it was, and removes one it created.

    :param path: the directory.
    :param resume: continue the run in ``path``.
    :param force: start ``path`` afresh, deleting the earlier run's files (only an rl-core run's).
    :raises RunDirectoryError: when ``path`` is not a fresh directory or an rl-core run (as the flags ask),
        or another run holds it.
    """

    def __init__(self, path: str | os.PathLike[str], resume: bool = False, force: bool = False) -> None:
        self.path = Path(path)
        self.resume = resume
        self.force = force
        self.created = False
        self.committed = False
        self._fd: int | None = None
        try:
            is_run, exists = is_run_directory(self.path), self.path.exists()
        except OSError as err:  # a name too long, a part of it not a directory
            raise RunDirectoryError(f"{str(self.path)[:80]}{'...' if len(str(self.path)) > 80 else ''}: cannot be used ({err.strerror or err})") from None
        if exists and not self.path.is_dir():
            raise RunDirectoryError(f"{self.path}: not a directory")
        if resume and not is_run:
            raise RunDirectoryError(f"--resume {self.path}: not an rl-core run directory")
        if not resume and exists and any(self.path.iterdir()):
            if not is_run:
                raise RunDirectoryError(f"{self.path}: exists and is not an rl-core run directory; choose a new or empty one")
            if not force:
                raise RunDirectoryError(f"{self.path}: already holds a run; --resume it, or start it afresh with --force")
        if not exists:
            try:
                self.path.mkdir(parents=True)
            except OSError as err:
                raise RunDirectoryError(f"{self.path}: cannot be created ({err.strerror or err})") from None
            self.created = True
        self._lock()

    def _lock(self) -> None:
        fd = os.open(self.path, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as err:
            os.close(fd)
            if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            raise RunDirectoryError(f"{self.path}: in use by another run ({self.holder() or 'a process that is starting'})") from None
        self._fd = fd

    def holder(self) -> str | None:
        """Who holds (or last held) the directory: ``pid 123 on host since 2026-11-24 10:00:00``."""
        try:
            info = json.loads((self.path / HOLDER_FILE).read_text(encoding="utf-8"))
            return f"pid {info['pid']} on {info['host']} since {info['started']}"
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def commit(self) -> None:
        """The run is built: clear an earlier run's files (``force``) and record the holder."""
        self.committed = True
        if self.force and not self.resume:
            self._empty()
        info = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%d %H:%M:%S"), "argv": sys.argv}
        tmp = self.path / f".{HOLDER_FILE}.tmp"
        tmp.write_text(json.dumps(info), encoding="utf-8")
        os.replace(tmp, self.path / HOLDER_FILE)

    def abandon(self) -> None:
        """The run could not be built or start: remove the directory if this run created it (else, once the run has
        written to it, not resuming, empty it again: it was empty, or its earlier run was cleared by ``force``), and release it."""
        if self.created:
            shutil.rmtree(self.path, ignore_errors=True)
        elif self.committed and not self.resume:
            self._empty(quietly=True)  # (on the way out of a failure)
        self.release()

    def _empty(self, quietly: bool = False) -> None:
        """Remove everything in the directory (links as links); ``quietly``: what is gone or cannot be removed is let be."""
        for child in self.path.iterdir():
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child, ignore_errors=quietly)
            else:
                child.unlink(missing_ok=quietly)

    def release(self) -> None:
        """Unlock the directory (also done by the OS when the process ends)."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"RunDirectory({str(self.path)!r})"


def is_run_directory(path: Path) -> bool:
    """Whether ``path`` holds an rl-core run: its config and the trace a run leaves (its holder file, or checkpoints)."""
    return (path / CONFIG_FILE).is_file() and ((path / HOLDER_FILE).is_file() or (path / CHECKPOINTS).is_dir())
