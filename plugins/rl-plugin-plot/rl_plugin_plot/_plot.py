"""Drawing learning curves with matplotlib's object API (no pyplot: no global figure, no GUI backend)."""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

from rlcore import ConfigError, read_metrics, shown

from ._experiments import band, logged, runs_of

#: inches of one panel (width, height); saved at :data:`DPI`
PANEL = (8.0, 3.2)
DPI = 100


def plot_runs(
    run_dirs: Sequence[str | os.PathLike[str]],
    metrics: Sequence[str] = ("train/episode_return",),
    output: str | os.PathLike[str] = "curves.png",
) -> Path:
    """Draw ``metrics`` against collected frames, one panel per metric and one line per run, into ``output``.

    An experiment directory (``rlctl train --seeds``) is drawn as one band: the IQM over its runs and its 95%
    bootstrap confidence interval, over the frames all its runs reached.

    :param run_dirs: run directories, each with its ``metrics.csv``, or experiment directories of such runs.
    :param metrics: metric names, e.g. ``train/episode_return``.
    :param output: the image to write; its suffix picks the format (``.png``, ``.pdf``, ``.svg``, ...);
        missing folders are created.
    :return: ``output``.
    :raises rlcore.ConfigError: when there is no run or metric, a run has no readable ``metrics.csv``,
        no run has one of ``metrics``, the format is unknown (one line, with the valid choices), or ``output``
        cannot be written.
    """
    if not run_dirs:
        raise ConfigError("RUN_DIR: name at least one run directory")
    if not metrics:
        raise ConfigError("--metric: name at least one metric")
    experiments = {Path(path): runs_of(Path(path)) for path in run_dirs}
    runs = {Path(run): read_metrics(run) for run in run_dirs if not experiments[Path(run)]}
    for members in experiments.values():
        runs |= {member: read_metrics(member) for member in members}
    known = sorted({name for series in runs.values() for name in series})
    for metric in metrics:
        if not any(metric in series for series in runs.values()):
            raise ConfigError(f"--metric: no run has {shown(metric)} (valid choices: {', '.join(known) or 'none, the runs logged nothing'})")
        finite = [v for series in runs.values() if metric in series for v in series[metric][1] if math.isfinite(v)]
        if finite and not math.isfinite(max(finite) - min(finite)):  # (an axis from -1e308 to 1e308: matplotlib cannot tick it)
            raise ConfigError(f"--metric {metric}: its values span {min(finite):g} to {max(finite):g}, more than a plot's axis holds")

    from matplotlib.figure import Figure

    fig = Figure(figsize=(PANEL[0], PANEL[1] * len(metrics)))
    output = Path(output)
    formats = fig.canvas.get_supported_filetypes()
    suffix = output.suffix[1:].lower()
    if suffix not in formats:
        raise ConfigError(f"-o {output}: unknown image format {shown(suffix)} (valid choices: {', '.join(sorted(formats))})")
    axes = fig.subplots(len(metrics), 1, squeeze=False)[:, 0]
    for ax, metric in zip(axes, metrics):
        for path, members in experiments.items():
            if not members:
                if metric in runs[path]:
                    frames, values = runs[path][metric]
                    ax.plot(frames, values, label=path.name, linewidth=1.2)
                continue
            curves = logged([runs[member] for member in members], metric)  # (each run's metrics read once, above)
            if curves:
                grid, middle, low, high = band(curves)
                (line,) = ax.plot(grid, middle, label=f"{path.name} (IQM of {len(curves)} runs, 95% CI)", linewidth=1.2)
                ax.fill_between(grid, low, high, color=line.get_color(), alpha=0.25, linewidth=0)
        ax.set_title(metric)
        ax.set_xlabel("frames")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    fig.tight_layout()
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(output, dpi=DPI)
    except OSError as err:
        raise ConfigError(f"-o {output}: cannot write it ({err.strerror or err})") from None
    return output


__all__ = ["plot_runs"]
