"""rl-core plugin: ``rlctl plot`` (learning curves) and ``rlctl report`` (reliable comparisons over seeds).

The curves come from each run's ``metrics.csv`` (the builtin CSV logger's ``frames,name,value,wall_time``
rows): one panel per metric, one line per run (one band per experiment directory), against collected
frames. ``rlctl report EXP_DIR...`` scores each experiment's runs (final value, area under the curve),
aggregates them with the interquartile mean and 95% bootstrap confidence intervals, and compares the
experiments by the probability of improvement (Agarwal et al., 2021). From Python::

    from rl_plugin_plot import plot_runs, read_metrics, report

    plot_runs(["runs/a", "runs/b"], ["train/episode_return", "loss/objective"], "curves.png")
    frames, values = read_metrics("runs/a")["train/episode_return"]
    text, markdown, image = report(["experiments/a", "experiments/b"], "eval/episode_return", "report")

This module stays light: matplotlib and numpy are imported only when a plot or a report is made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rlcore import hookimpl, lazy_getattr

if TYPE_CHECKING:
    import click

    from ._plot import plot_runs
    from ._report import report
    from ._stats import bootstrap_ci, iqm, probability_of_improvement

from rlcore import read_metrics  # (the kernel reads what its CSV logger writes)

_LAZY = {
    "plot_runs": "._plot",
    "report": "._report",
    "bootstrap_ci": "._stats",
    "iqm": "._stats",
    "probability_of_improvement": "._stats",
}

__all__ = ["bootstrap_ci", "iqm", "plot_runs", "probability_of_improvement", "read_metrics", "report"]


__getattr__ = lazy_getattr(__name__, _LAZY)


@hookimpl
def rl_register_commands(cli: click.Group) -> None:
    """``rlctl plot`` and ``rlctl report``."""
    from ._command import plot, report

    cli.add_command(plot)
    cli.add_command(report)
