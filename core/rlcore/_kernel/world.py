"""The world of a run of one process: what the trainer and the run builder ask when no plugin provides another."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from .checkpoint import CheckpointBackend
    from .trainer import Trainer

T = TypeVar("T")


class OneProcess:
    """A :class:`rlcore.World` of one process: rank 0 of 1, the main one; every collective is the value itself."""

    rank = 0
    world_size = 1
    is_main = True

    def broadcast(self, value: T) -> T:
        return value

    def gather(self, value: Any) -> list[Any] | None:
        return [value]

    def total(self, count: int) -> int:
        return count

    def any(self, flag: bool) -> bool:
        return flag

    def on_main(self, fn: Callable[[], T], share: bool = True) -> T | None:
        return fn()

    def attach(self, trainer: Trainer) -> None:
        pass

    def checkpoint(self, backend: CheckpointBackend) -> CheckpointBackend:
        return backend

    def close(self) -> None:
        pass

    def __repr__(self) -> str:
        return "OneProcess()"
