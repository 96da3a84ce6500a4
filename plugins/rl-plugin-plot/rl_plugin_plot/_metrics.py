"""Reading a run's ``metrics.csv`` (no matplotlib)."""

from __future__ import annotations

import csv
import os
from collections import defaultdict
from pathlib import Path

from rlcore import ConfigError

#: the file of a run directory that the curves come from (the builtin CSV logger's)
METRICS_FILE = "metrics.csv"


def read_metrics(run_dir: str | os.PathLike[str]) -> dict[str, tuple[list[int], list[float]]]:
    """Every metric of a run, as ``{name: (frames, values)}`` in the order the rows were written.

    :param run_dir: the run directory (its ``metrics.csv`` has the header ``frames,name,value,wall_time``).
    :raises rlcore.ConfigError: naming the file, when it cannot be read or is not a metrics file.
    """
    path = Path(run_dir) / METRICS_FILE
    series: dict[str, tuple[list[int], list[float]]] = defaultdict(lambda: ([], []))
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                frames, values = series[row["name"]]
                frames.append(int(row["frames"]))
                values.append(float(row["value"]))
    except OSError as err:
        raise ConfigError(f"{path}: cannot read metrics ({err.strerror or err})") from None
    except (KeyError, TypeError, ValueError) as err:
        raise ConfigError(f"{path}: not an rl-core metrics file (expected the columns frames,name,value,wall_time; {err})") from None
    return dict(series)


__all__ = ["METRICS_FILE", "read_metrics"]
