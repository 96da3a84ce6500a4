"""Learning curves from the ``metrics.csv`` of one or more runs (matplotlib, optional)."""

from __future__ import annotations

import csv
import os
from collections import defaultdict
from pathlib import Path

from ._errors import ConfigError


def read_metrics(run_dir: str | os.PathLike[str]) -> dict[str, tuple[list[int], list[float]]]:
    """``{name: (frames, values)}`` from ``RUN_DIR/metrics.csv``.

    :raises ConfigError: when the run has no readable ``metrics.csv``.
    """
    path = Path(run_dir) / "metrics.csv"
    series: dict[str, tuple[list[int], list[float]]] = defaultdict(lambda: ([], []))
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                frames, values = series[row["name"]]
                frames.append(int(row["frames"]))
                values.append(float(row["value"]))
    except OSError as err:
        raise ConfigError(f"{path}: cannot read metrics ({err.strerror or err})") from None
    except (KeyError, ValueError) as err:
        raise ConfigError(f"{path}: not an rl-core metrics file ({err})") from None
    return dict(series)


def plot_runs(run_dirs: list[str], metrics: list[str], output: str | os.PathLike[str]) -> Path:
    """Draw ``metrics`` against frames, one panel per metric and one line per run, into ``output``.

    :param run_dirs: run directories.
    :param metrics: metric names, e.g. ``train/episode_return``.
    :param output: the image file to write (its suffix picks the format).
    :raises ConfigError: when a run or a metric is missing everywhere.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError("rlctl plot needs matplotlib: pip install 'rl-core[plot]'") from None

    runs = {run: read_metrics(run) for run in run_dirs}
    for metric in metrics:
        if not any(metric in series for series in runs.values()):
            known = sorted({name for series in runs.values() for name in series})
            raise ConfigError(f"--metric: no run has {metric!r} (valid choices: {', '.join(known)})")
    fig, axes = plt.subplots(len(metrics), 1, figsize=(8, 3.2 * len(metrics)), squeeze=False)
    for ax, metric in zip(axes[:, 0], metrics):
        for run, series in runs.items():
            if metric in series:
                frames, values = series[metric]
                ax.plot(frames, values, label=Path(run).name, linewidth=1.2)
        ax.set_title(metric)
        ax.set_xlabel("frames")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    fig.tight_layout()
    output = Path(output)
    fig.savefig(output, dpi=100)
    plt.close(fig)
    return output
