"""The kit's pytest fixtures; rl-core-testing registers them with pytest through its ``pytest11`` entry point."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ._install import install_plugin
from ._memory import MemoryLogger
from ._recorder import HookRecorder
from ._trainer import make_trainer

if TYPE_CHECKING:
    from rlcore import Trainer


@pytest.fixture
def rl_make_trainer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Trainer]]:
    """``rl_make_trainer(**options) -> Trainer``: :func:`rlcore_testing.make_trainer` in a fresh temporary run directory.

    Every option of :func:`~rlcore_testing.make_trainer` may be given (``run_dir`` too, e.g. to
    resume in the directory of an earlier trainer). The envs of every trainer made are closed at
    the end of the test, trained or not.
    """
    made: list[Trainer] = []

    def make(run_dir: str | os.PathLike[str] | None = None, **options: Any) -> Trainer:
        trainer = make_trainer(run_dir if run_dir is not None else tmp_path_factory.mktemp("run"), **options)
        made.append(trainer)
        return trainer

    yield make
    for trainer in made:
        trainer.collector.shutdown()  # type: ignore[attr-defined]


@pytest.fixture
def rl_logger() -> MemoryLogger:
    """A fresh :class:`rlcore_testing.MemoryLogger`; ``rl_trainer`` logs to it (``rl_logger.values`` after ``train()``)."""
    return MemoryLogger()


@pytest.fixture
def rl_hook_recorder() -> HookRecorder:
    """A fresh :class:`rlcore_testing.HookRecorder`; ``rl_trainer`` registers it, ``recorder.register(trainer)`` does elsewhere."""
    return HookRecorder()


@pytest.fixture
def rl_trainer(rl_make_trainer: Callable[..., Trainer], rl_hook_recorder: HookRecorder, rl_logger: MemoryLogger) -> Trainer:
    """A tiny trainer with the kit's defaults (4 batches of 32 frames on CartPole).

    It logs to ``rl_logger``, and ``rl_hook_recorder`` is registered with it.
    """
    trainer = rl_make_trainer(loggers=[rl_logger])
    rl_hook_recorder.register(trainer)
    return trainer


@pytest.fixture
def rl_install_plugin(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Callable[..., dict[str, Any]]:
    """``rl_install_plugin(project_dir, name=None) -> dict``: pip-install a plugin project as a real distribution.

    The distribution goes to a temporary site on ``sys.path`` and ``PYTHONPATH`` for this test (so
    ``rlcore.get_plugin_manager()`` and ``rlctl`` subprocesses find its entry points); the return
    value is its entry in ``rlctl plugins list --json`` (``name``, ``distribution``, ``version``,
    ``hooks``, ``provides``, ``status``).
    """
    site = tmp_path_factory.mktemp("site")

    def install(project: str | os.PathLike[str], name: str | None = None) -> dict[str, Any]:
        return install_plugin(Path(project), site, monkeypatch, name=name)

    return install


__all__ = ["rl_hook_recorder", "rl_install_plugin", "rl_logger", "rl_make_trainer", "rl_trainer"]
