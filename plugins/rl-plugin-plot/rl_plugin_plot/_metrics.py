"""Reading a run's ``metrics.csv`` (no matplotlib)."""

from __future__ import annotations

import csv
import os
import warnings
from collections import defaultdict
from pathlib import Path

from rlcore import ConfigError

#: the file of a run directory that the curves come from (the builtin CSV logger's)
METRICS_FILE = "metrics.csv"


def read_metrics(run_dir: str | os.PathLike[str]) -> dict[str, tuple[list[int], list[float]]]:
    """Every metric of a run, as ``{name: (frames, values)}`` in the order the rows were written.

    A damaged row (the last one of a run that was killed while writing it) is dropped with a warning
    naming it, as the CSV logger does when a run is resumed.

    :param run_dir: the run directory (its ``metrics.csv`` has the header ``frames,name,value,wall_time``).
    :raises rlcore.ConfigError: naming the file, when it cannot be read or is not a metrics file.
    """
    path = Path(run_dir) / METRICS_FILE
    series: dict[str, tuple[list[int], list[float]]] = defaultdict(lambda: ([], []))
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            if not {"frames", "name", "value"} <= set(reader.fieldnames or ()):
                raise ConfigError(f"{path}: not an rl-core metrics file (expected the columns frames,name,value,wall_time)")
            for row in reader:
                try:
                    point = int(row["frames"]), float(row["value"])
                except (TypeError, ValueError):
                    warnings.warn(f"{path} line {reader.line_num} is damaged and was dropped", stacklevel=2)
                    continue
                frames, values = series[row["name"]]
                frames.append(point[0])
                values.append(point[1])
    except OSError as err:
        raise ConfigError(f"{path}: cannot read metrics ({err.strerror or err})") from None
    return dict(series)


__all__ = ["METRICS_FILE", "read_metrics"]
