"""Builtin plugin: the ``csv`` logger, ``RUN_DIR/metrics.csv`` with one row per value, flushed as written,
and :func:`read_metrics`, which reads such a file back (``rlcore.read_metrics``)."""

from __future__ import annotations

import csv
import os
import time
import warnings
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from rlcore import ConfigError, Logger, LoggerFactory, RunPath, hookimpl, run_path

HEADER = ("frames", "name", "value", "wall_time")
#: the file of a run directory the CSV logger writes by default
METRICS_FILE = "metrics.csv"


class CSVLogger(Logger):
    """Appends ``frames,name,value,wall_time`` rows to ``<log_dir>/<filename>``.

    A resumed run appends to the same file, after dropping the rows logged after its checkpoint (:meth:`resume`: they
    are logged again), so the file holds every value of the run once.

    :param exp_name: the run's name.
    :param log_dir: the run directory.
    :param filename: the file's name inside ``log_dir``.
    """

    def __init__(self, exp_name: str, log_dir: str | os.PathLike[str], filename: RunPath = METRICS_FILE) -> None:
        super().__init__(exp_name, log_dir)
        self.path = run_path(log_dir, filename, "loggers.csv.filename")
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
            handle.readline()  # the header
            kept = [list(HEADER), *(row for row in good_rows(handle, self.path) if int(row[0]) <= step)]
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


def good_rows(lines: Iterable[str], path: Path) -> Iterator[list[str]]:
    """The well-formed ``frames,name,value,wall_time`` rows of ``lines``: the metrics file ``path`` after its header line.

    Each line is parsed on its own, and a damaged one (the last one of a run killed while writing
    it, an edit by hand) is dropped with a warning naming it: a stray quote costs its line only,
    not the lines after it.
    """
    for number, line in enumerate(lines, start=2):
        try:
            row = next(csv.reader([line]), [])
        except csv.Error:
            row = []
        if _good(row):
            yield row
        else:
            warnings.warn(f"{path} line {number} is damaged and was dropped: {line.rstrip()[:80]!r}", stacklevel=2)


def _good(row: list[str]) -> bool:
    if len(row) != len(HEADER) or not row[1]:
        return False
    try:
        int(row[0]), float(row[2]), float(row[3])
    except ValueError:
        return False
    return True


def read_metrics(run_dir: str | os.PathLike[str]) -> dict[str, tuple[list[int], list[float]]]:
    """Every metric of a run, as ``{name: (frames, values)}`` in the order the rows were written.

    A damaged row is dropped with a warning naming its line, as the CSV logger does when a run is resumed.

    :param run_dir: the run directory (its ``metrics.csv``, written by the ``csv`` logger; or the file its
        ``config.yaml`` names in ``loggers.csv.filename``).
    :raises rlcore.ConfigError: naming the file, when it cannot be read or is not a metrics file.
    """
    path = Path(run_dir) / _metrics_file(Path(run_dir))
    series: dict[str, tuple[list[int], list[float]]] = defaultdict(lambda: ([], []))
    try:
        with open(path, newline="", encoding="utf-8", errors="replace") as handle:
            if tuple(next(csv.reader([handle.readline()]), [])) != HEADER:
                raise ConfigError(f"{path}: not an rl-core metrics file (expected the columns {','.join(HEADER)})")
            for frames, name, value, _ in good_rows(handle, path):
                series[name][0].append(int(frames))
                series[name][1].append(float(value))
    except OSError as err:
        raise ConfigError(f"{path}: cannot read metrics ({err.strerror or err})") from None
    return dict(series)


def _metrics_file(run_dir: Path) -> str:
    """The CSV logger's file of a run: ``loggers.csv.filename`` of its ``config.yaml``, else ``metrics.csv``."""
    from rlcore import read_config_file  # (lazy: the config module imports gymnasium, which rlctl plugins list needs not)

    try:
        csv_options = read_config_file(run_dir / "config.yaml").get("loggers", {}).get("csv") or {}
        filename = csv_options.get("filename", METRICS_FILE) if isinstance(csv_options, dict) else METRICS_FILE
        run_path(run_dir, filename, "loggers.csv.filename")
    except ConfigError:  # no config (a metrics file alone), an unreadable one, or a name that is no RunPath: the default name
        return METRICS_FILE
    return str(filename)


@hookimpl
def rl_register_loggers() -> dict[str, LoggerFactory]:
    return {"csv": CSVLogger}
