"""Builtin plugin: the ``torch`` checkpoint backend (a file per checkpoint, loaded with ``weights_only=True``)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rlcore import CheckpointBackend, CheckpointError, hookimpl


class TorchCheckpointBackend(CheckpointBackend):
    """Checkpoints as ``torch.save`` files; reading never unpickles arbitrary objects."""

    suffix = ".pt"

    def write(self, state: Mapping[str, Any], path: Path) -> None:
        import torch

        torch.save(dict(state), path)

    def read(self, path: Path) -> dict[str, Any]:
        import pickle
        import zipfile

        import torch

        if not path.is_file():
            raise CheckpointError(f"{path} is not a checkpoint file")
        if not zipfile.is_zipfile(path):  # torch.save writes zip archives
            raise CheckpointError(f"{path} is truncated or corrupted: not a torch zip archive")
        try:
            return torch.load(path, map_location="cpu", weights_only=True)
        except pickle.UnpicklingError as err:
            lines = str(err).splitlines()
            reason = next((line.strip() for line in lines if "Unsupported global" in line), "unpickling refused")
            raise CheckpointError(f"{path} was refused by the safe loader (weights_only=True): {reason}") from None
        except (RuntimeError, EOFError, OSError, ValueError, KeyError, zipfile.BadZipFile) as err:
            raise CheckpointError(f"{path} is truncated or corrupted: {str(err).splitlines()[0]}") from None


@hookimpl
def rl_register_checkpoint_backends() -> dict[str, Any]:
    return {"torch": TorchCheckpointBackend}
