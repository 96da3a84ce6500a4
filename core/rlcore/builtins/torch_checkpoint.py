"""Builtin plugin: the ``torch`` checkpoint backend (a file per checkpoint, loaded with ``weights_only=True``)."""

from __future__ import annotations

import pickle
import re
import zipfile
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from rlcore import CheckpointBackend, CheckpointBackendFactory, CheckpointError, hookimpl


class TorchCheckpointBackend(CheckpointBackend):
    """Checkpoints as ``torch.save`` files; reading never unpickles arbitrary objects.

    Besides what torch's safe loader takes (tensors, plain Python values, dicts, lists, tuples),
    numpy arrays and scalars of bool, integer, float and complex dtypes are allowed, as the
    ``torchsnapshot`` backend allows them. Every write is read back with the safe loader
    (memory-mapped: only the pickle is parsed), so a state that could not be resumed from fails
    at its first save instead of at resume.
    """

    suffix = ".pt"

    def write(self, state: Mapping[str, Any], path: Path) -> None:
        import torch  # (lazy: rlctl plugins list imports neither torch nor numpy; so below)

        torch.save(dict(state), path)
        try:
            _safe_load(path, mmap=True)
        except _Refused as err:
            at = next((f" at {where}" for where in _paths_of(err.name, state, "")), "")
            raise TypeError(
                f"cannot checkpoint a value of type {err.name}{at} (the safe loader would refuse it); "
                "store tensors, numeric numpy arrays, plain Python values and dicts/lists/tuples of them"
            ) from None

    def read(self, path: Path) -> dict[str, Any]:
        if not path.is_file():
            raise CheckpointError(f"{path} is not a checkpoint file")
        if not zipfile.is_zipfile(path):  # torch.save writes zip archives
            raise CheckpointError(f"{path} is truncated or corrupted: not a torch zip archive")
        try:
            return _safe_load(path, mmap=False)
        except _Refused as err:
            raise CheckpointError(f"{path} was refused by the safe loader: it holds {err.name}") from None
        except CheckpointError as err:
            raise CheckpointError(f"{path} {err}") from None


class _Refused(CheckpointError):
    """The safe loader met a class or function it does not rebuild."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _paths_of(name: str, value: Any, at: str) -> Iterator[str]:
    """Where in ``value`` an object of the type called ``name`` (or a numpy dtype of that class) sits."""
    import numpy as np  # (lazy: numpy)

    kind = type(value.dtype) if isinstance(value, (np.ndarray, np.generic)) else type(value)
    if name in (f"{kind.__module__}.{kind.__qualname__}", kind.__qualname__ if kind.__module__ == "builtins" else None):
        yield at or "the state"
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _paths_of(name, item, f"{at}.{key}" if at else str(key))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _paths_of(name, item, f"{at}[{index}]")


def _safe_load(path: Path, mmap: bool) -> dict[str, Any]:
    """``torch.load`` with ``weights_only=True`` and numeric numpy values allowed.

    :param mmap: map the tensors' storage instead of reading it (only the pickle is parsed).
    :raises _Refused: naming the class or function the safe loader refused.
    :raises CheckpointError: "is truncated or corrupted: ...".
    """
    import torch  # (lazy: torch)

    try:
        with torch.serialization.safe_globals(numpy_globals()):
            return torch.load(path, map_location="cpu", weights_only=True, mmap=mmap)
    except pickle.UnpicklingError as err:
        found = re.search(r"GLOBAL (\S+) was not|but got <class '([^']+)'>", str(err))
        raise _Refused(next(filter(None, found.groups())) if found else "an object it cannot rebuild") from None
    except (RuntimeError, EOFError, OSError, ValueError, KeyError, zipfile.BadZipFile) as err:
        raise CheckpointError(f"is truncated or corrupted: {str(err).splitlines()[0]}") from None


@cache
def numpy_globals() -> list[Any]:
    """What the safe loader needs to rebuild numpy arrays and scalars of numeric dtypes (never ``object``)."""
    import numpy as np  # (lazy: numpy)

    numeric = "?" + np.typecodes["AllInteger"] + np.typecodes["AllFloat"]
    reconstruct, scalar = np.ndarray((0,)).__reduce__()[0], np.float64(0).__reduce__()[0]
    return [np.ndarray, np.dtype, reconstruct, scalar, *{type(np.dtype(code)) for code in numeric}]


@hookimpl
def rl_register_checkpoint_backends() -> dict[str, CheckpointBackendFactory]:
    return {"torch": TorchCheckpointBackend}
