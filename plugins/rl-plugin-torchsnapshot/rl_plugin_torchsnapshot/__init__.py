"""rl-plugin-torchsnapshot: the ``torchsnapshot`` checkpoint backend for rl-core.

Select it with ``checkpoint.backend: torchsnapshot`` or ``CKPT_BACKEND=torchsnapshot``.
This module stays light: torch and torchsnapshot are imported only when a backend is built,
so ``rlctl plugins list`` does not import them.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from rlcore import CheckpointBackendFactory, hookimpl

if TYPE_CHECKING:
    from ._backend import TorchSnapshotBackend

__version__ = "0.1.0"
__all__ = ["make_backend", "rl_register_checkpoint_backends"]


def make_backend(directory: str | os.PathLike[str], keep_last: int = 3) -> TorchSnapshotBackend:
    """Build a torchsnapshot checkpoint backend.

    :param directory: where checkpoints live (``RUN_DIR/checkpoints``).
    :param keep_last: how many checkpoints to keep.
    :return: a :class:`rlcore.CheckpointBackend` writing one snapshot directory per checkpoint.
    """
    from ._backend import TorchSnapshotBackend

    return TorchSnapshotBackend(directory=directory, keep_last=keep_last)


@hookimpl
def rl_register_checkpoint_backends() -> dict[str, CheckpointBackendFactory]:
    """Register the ``torchsnapshot`` checkpoint backend."""
    return {"torchsnapshot": make_backend}
