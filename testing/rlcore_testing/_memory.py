"""A logger that keeps everything in memory, for tests."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from rlcore import Logger


class MemoryLogger(Logger):
    """Keeps every logged value in memory: :attr:`values` maps a name to its ``(step, value)`` pairs.

    It honours the whole :class:`rlcore.Logger` contract (its own tests run the kit's
    :class:`~rlcore_testing.LoggerConformance`), so a test can read what a run logged::

        logger = MemoryLogger()
        trainer = make_trainer(run_dir, loggers=[logger])
        trainer.train()
        assert logger.steps("loss/objective") == [32, 64, 96, 128]

    :param exp_name: the run's name.
    :param log_dir: the run directory (nothing is written there).
    """

    supports_video = True

    def __init__(self, exp_name: str = "test", log_dir: str | os.PathLike[str] = ".") -> None:
        super().__init__(exp_name, log_dir)
        #: ``{name: [(step, value), ...]}`` in the order logged
        self.values: dict[str, list[tuple[int, float]]] = {}
        #: what :meth:`log_hparams` received, merged
        self.hparams: dict[str, Any] = {}
        #: ``{name: [(step, array), ...]}`` of :meth:`log_histogram`
        self.histograms: dict[str, list[tuple[int, Any]]] = {}
        #: ``{name: [(step, video, fps), ...]}`` of :meth:`log_video`
        self.videos: dict[str, list[tuple[int, Any, int]]] = {}
        #: once closed, :meth:`~rlcore.Logger.exit_status`: ``"finished"``, ``"failed"`` (closed while an exception
        #: propagated) or ``"killed"`` (by a ``KeyboardInterrupt``, or after a signal stopped the run)
        self.status: str | None = None

    def log_scalar(self, name: str, value: float, step: int) -> None:
        self.values.setdefault(name, []).append((int(step), float(value)))

    def log_hparams(self, params: Mapping[str, Any]) -> None:
        self.hparams.update(params)

    def log_histogram(self, name: str, values: Any, step: int) -> None:
        self.histograms.setdefault(name, []).append((int(step), values))

    def log_video(self, name: str, video: Any, step: int, fps: int = 30) -> None:
        self.videos.setdefault(name, []).append((int(step), video, fps))

    def resume(self, step: int) -> None:
        """Drop the values logged after ``step``: one value per step and metric, as the CSV logger keeps."""
        for name, pairs in self.values.items():
            self.values[name] = [(s, v) for s, v in pairs if s <= step]

    def steps(self, name: str) -> list[int]:
        """The steps at which ``name`` was logged.

        :param name: a metric name.
        """
        return [step for step, _ in self.values.get(name, [])]

    def last(self, name: str) -> float:
        """The last value logged under ``name``.

        :param name: a metric name.
        :raises KeyError: when nothing was logged under it.
        """
        if not self.values.get(name):
            raise KeyError(f"nothing logged under {name!r}; logged: {', '.join(sorted(self.values)) or 'nothing'}")
        return self.values[name][-1][1]

    def close(self) -> None:
        if self.status is None:
            self.status = self.exit_status()
