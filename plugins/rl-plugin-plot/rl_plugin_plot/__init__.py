"""rl-core plugin: ``rlctl plot RUN_DIR... [-o FILE.png] [--metric NAME]...``, the learning curves of runs.

The curves come from each run's ``metrics.csv`` (the builtin CSV logger's ``frames,name,value,wall_time``
rows): one panel per metric, one line per run, against collected frames. From Python::

    from rl_plugin_plot import plot_runs, read_metrics

    plot_runs(["runs/a", "runs/b"], ["train/episode_return", "loss/objective"], "curves.png")
    frames, values = read_metrics("runs/a")["train/episode_return"]

This module stays light: matplotlib is imported only when a plot is drawn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlcore import hookimpl, lazy_getattr

if TYPE_CHECKING:
    import click

    from ._plot import plot_runs

from rlcore import read_metrics  # (the kernel reads what its CSV logger writes)

_LAZY = {"plot_runs": "._plot"}

__all__ = ["plot_runs", "read_metrics"]


__getattr__ = lazy_getattr(__name__, _LAZY)


@hookimpl
def rl_register_commands(cli: click.Group) -> None:
    """``rlctl plot``."""
    from ._command import plot

    cli.add_command(plot)
