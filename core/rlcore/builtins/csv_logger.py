"""Builtin plugin: the ``csv`` logger, ``RUN_DIR/metrics.csv`` with one row per value, flushed as written."""

from __future__ import annotations

import csv
import os
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rlcore import Logger, RunPath, hookimpl
from rlcore._rundir import inside

HEADER = ("frames", "name", "value", "wall_time")


class CSVLogger(Logger):
    """Appends ``frames,name,value,wall_time`` rows to ``<log_dir>/<filename>``.

    A resumed run appends to the same file, so the file always holds every value logged.

    :param exp_name: the run's name.
    :param log_dir: the run directory.
    :param filename: the file's name inside ``log_dir``.
    """

    def __init__(self, exp_name: str, log_dir: str | os.PathLike[str], filename: RunPath = "metrics.csv") -> None:
        super().__init__(exp_name, log_dir)
        self.path = inside(Path(log_dir), filename, "loggers.csv.filename")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fresh = not self.path.exists() or self.path.stat().st_size == 0
        self._file = open(self.path, "a", newline="", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self._writer = csv.writer(self._file)
        if fresh:
            self._writer.writerow(HEADER)
            self._file.flush()

    def log_scalar(self, name: str, value: float, step: int) -> None:
        self.log_scalars({name: value}, step)

    def log_scalars(self, values: Mapping[str, float], step: int) -> None:
        now = f"{time.time():.3f}"
        self._writer.writerows((step, name, repr(float(value)), now) for name, value in values.items())
        self._file.flush()

    def resume(self, step: int) -> None:
        """Drop the rows logged after ``step`` (they are logged again), atomically.

        A damaged row (a crash while the file was written, an edit by hand) is dropped too, with a
        warning naming its line; every good row is kept.
        """
        self._file.close()
        with open(self.path, newline="", encoding="utf-8", errors="replace") as handle:
            rows = list(csv.reader(handle))
        kept = [list(HEADER)]
        for line, row in enumerate(rows[1:], start=2):
            if not _good(row):
                warnings.warn(f"{self.path} line {line} is damaged and was dropped: {','.join(row)[:80]!r}", stacklevel=2)
            elif int(row[0]) <= step:
                kept.append(row)
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w", newline="", encoding="utf-8") as handle:
            csv.writer(handle).writerows(kept)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)
        self._file = open(self.path, "a", newline="", encoding="utf-8")  # noqa: SIM115 - closed in close()
        self._writer = csv.writer(self._file)

    def flush(self) -> None:
        if not self._file.closed:
            self._file.flush()
            os.fsync(self._file.fileno())

    def close(self) -> None:
        if not self._file.closed:
            self.flush()
            self._file.close()


def _good(row: list[str]) -> bool:
    """Whether ``row`` is a well-formed ``frames,name,value,wall_time`` row."""
    if len(row) != len(HEADER) or not row[1]:
        return False
    try:
        int(row[0]), float(row[2]), float(row[3])
    except ValueError:
        return False
    return True


@hookimpl
def rl_register_loggers() -> dict[str, Any]:
    return {"csv": CSVLogger}
