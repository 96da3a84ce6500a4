"""The ``tensordict_recorder`` hook: collected batches saved as memory-mapped TensorDicts, and read back."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tensordict import TensorDict, TensorDictBase

from rlcore import ConfigError, as_key, hookimpl, shown

from ._hook import PluginHook, output_directory
from ._options import TensorDictRecorderOptions

if TYPE_CHECKING:
    from rlcore import Trainer

META = "meta.json"


def save_rollout(rollout: TensorDictBase, path: str | os.PathLike[str]) -> Path:
    """Write ``rollout`` to the folder ``path`` with tensordict's memmap format, atomically.

    The TensorDict is written beside ``path`` first and renamed into place, so a folder that
    exists is complete; an older folder of the same name is replaced.

    :param rollout: the TensorDict (moved to the CPU if it is elsewhere; left unchanged).
    :param path: the folder to create.
    :return: ``path``.
    """
    path = Path(path)
    partial = path.with_name(f".{path.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    rollout.detach().cpu().memmap(prefix=partial)
    if path.exists():
        shutil.rmtree(path)
    os.replace(partial, path)
    return path


def load_rollouts(path: str | os.PathLike[str]) -> list[TensorDictBase]:
    """Read back what :func:`save_rollout` (or the ``tensordict_recorder`` hook) wrote.

    The tensors are memory-mapped from the files; ``.clone()`` one to hold it in memory.

    :param path: one rollout folder, or a folder of them (``RUN_DIR/rollouts``), read in name
        order, which is the order of collection.
    :return: the TensorDicts, shaped as saved (``[envs, time]`` for batches).
    :raises FileNotFoundError: when ``path`` does not exist.
    """
    path = Path(path)
    if not path.is_dir():
        raise FileNotFoundError(f"no rollout folder at {path}")
    if (path / META).is_file():
        return [TensorDict.load_memmap(path)]
    folders = sorted(p for p in path.iterdir() if (p / META).is_file() and not p.name.startswith("."))
    return [TensorDict.load_memmap(folder) for folder in folders]


class TensorDictRecorderHook(TensorDictRecorderOptions, PluginHook):
    """Saves collected batches to ``RUN_DIR/rollouts/batch_<frames>/`` (tensordict's memmap format).

    It sees each batch as the collector made it, before any other ``rl_batch_process``
    implementation (``tryfirst``). The first batch is saved, then one whenever ``interval``
    frames have passed since the last one saved, until ``max_batches`` are saved. Read them back
    with :func:`load_rollouts`. Of data-parallel learners, rank 0 gathers every rank's share of the
    batch and saves the whole batch, its envs in rank order, as one process collects it. The options
    are those of :class:`~rl_plugin_video._options.TensorDictRecorderOptions`.
    """

    every_rank = True

    def __post_init__(self) -> None:
        super().__post_init__()
        self._saved = 0
        self._last_saved: int | None = None
        self._directory: Path | None = None

    def state_dict(self) -> dict[str, Any]:
        return {"saved": self._saved, "last_saved": -1 if self._last_saved is None else self._last_saved}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self._saved = int(state_dict["saved"])
        last = int(state_dict["last_saved"])
        self._last_saved = None if last < 0 else last

    @hookimpl
    def rl_setup(self, trainer: Trainer) -> None:
        self._directory = self._output(trainer)

    @hookimpl(tryfirst=True)
    def rl_batch_process(self, trainer: Trainer, batch: TensorDictBase) -> None:
        frames = trainer.collected_frames
        if self.max_batches is not None and self._saved >= self.max_batches:
            return
        if self._last_saved is not None and frames - self._last_saved < self.interval:
            return
        selected = self._select(batch)
        self._saved += 1
        self._last_saved = frames
        if trainer.world.world_size > 1:  # every process reaches this batch: the schedule counts the frames of all
            shares = trainer.world.gather(selected.cpu())
            if shares is None:
                return
            selected = TensorDict.cat(shares, dim=0)  # [envs, time]: the processes' envs side by side
        directory = self._directory or self._output(trainer)
        save_rollout(selected, directory / f"batch_{frames:09d}")

    def _output(self, trainer: Trainer) -> Path:
        return output_directory(trainer, self.directory, "rollouts", "hooks.tensordict_recorder.directory")

    def _select(self, batch: TensorDictBase) -> TensorDictBase:
        if self.keys is None:
            return batch
        keys = [as_key(k) for k in self.keys]
        missing = [k for k in keys if k not in batch.keys(include_nested=True)]
        if missing:
            names = ", ".join(".".join(k) if isinstance(k, tuple) else k for k in batch.keys(True, True))
            raise ConfigError(f"hooks.tensordict_recorder.keys: the batch has no key {shown(missing[0])} (keys: {names})")
        return batch.select(*keys)


__all__ = ["TensorDictRecorderHook", "load_rollouts", "save_rollout"]
