"""Builtin plugin: the ``console`` logger, one line per logged step on stderr."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Annotated, Literal, TextIO

from tqdm import tqdm

from rlcore import Logger, LoggerFactory, Range, hookimpl


class ConsoleLogger(Logger):
    """Prints ``frames  name=value ...`` for the chosen metrics, at most once per ``every`` frames.

    :param exp_name: the run's name.
    :param log_dir: the run directory (unused).
    :param every: frames between two printed lines.
    :param keys: metric names to print; empty prints every metric.
    :param stream: where to print: ``stderr`` or ``stdout`` (from a config), or a stream (from Python).
    """

    def __init__(
        self,
        exp_name: str,
        log_dir: str | os.PathLike[str],
        every: Annotated[int, Range(ge=0)] = 10000,
        keys: list[str] | tuple[str, ...] = ("train/episode_return", "eval/episode_return", "perf/fps"),
        stream: Literal["stderr", "stdout"] | TextIO = "stderr",
    ) -> None:
        super().__init__(exp_name, log_dir)
        self.every = every
        self.keys = tuple(keys)
        self.stream = getattr(sys, stream) if isinstance(stream, str) else stream
        self._last: int | None = None
        self._latest: dict[str, float] = {}

    def log_scalar(self, name: str, value: float, step: int) -> None:
        self.log_scalars({name: value}, step)

    def log_scalars(self, values: Mapping[str, float], step: int) -> None:
        self._latest.update((k, v) for k, v in values.items() if not self.keys or k in self.keys)
        if self._latest and (self._last is None or step - self._last >= self.every):
            self._last = step
            shown = "  ".join(f"{k}={v:.4g}" for k, v in sorted(self._latest.items()))
            tqdm.write(f"{step:>10}  {shown}", file=self.stream)  # above a progress bar, if one is shown


@hookimpl
def rl_register_loggers() -> dict[str, LoggerFactory]:
    return {"console": ConsoleLogger}
