"""Experiment directories (``rlctl train --seeds``): a directory whose run directories hold the seeds of one config."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rlcore import ConfigError, read_metrics

from ._stats import bootstrap_ci, iqm

#: points of a curve of an experiment, between the frames all its runs have logged
GRID = 100


def runs_of(path: Path) -> list[Path]:
    """The run directories of an experiment (each with a ``metrics.csv``), or ``[]`` when ``path`` is a run itself or holds none."""
    if (path / "metrics.csv").is_file() or not path.is_dir():
        return []
    return sorted((p for p in path.iterdir() if (p / "metrics.csv").is_file()), key=lambda p: (len(p.name), p.name))


def curves(path: Path, metric: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each run's ``(frames, values)`` of ``metric``, the runs that did not log it left out.

    :raises ConfigError: when ``path`` holds no run.
    """
    runs = runs_of(path)
    if not runs:
        raise ConfigError(f"{path}: neither a run nor an experiment directory (no metrics.csv in it or in its directories)")
    return logged([read_metrics(run) for run in runs], metric)


def logged(runs: list[dict[str, tuple[list[int], list[float]]]], metric: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """The ``(frames, values)`` of ``metric`` in each of ``runs`` (their :func:`rlcore.read_metrics`) that logged it."""
    found = [series.get(metric) for series in runs]
    return [(np.asarray(f, dtype=np.float64), np.asarray(v, dtype=np.float64)) for f, v in (s for s in found if s and s[0])]


def band(runs: list[tuple[np.ndarray, np.ndarray]], points: int = GRID) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """An experiment's curve: the IQM over its runs and its 95% bootstrap interval, at ``points`` frame counts that every
    run has reached (each run's curve interpolated linearly).

    :return: frames, IQM, low, high.
    """
    start, end = max(f[0] for f, _ in runs), min(f[-1] for f, _ in runs)
    grid = np.linspace(start, end, points) if end > start else np.array([end])
    values = np.stack([np.interp(grid, f, v) for f, v in runs])
    low, high = bootstrap_ci(values, iqm, reps=500)
    return grid, iqm(values), low, high
