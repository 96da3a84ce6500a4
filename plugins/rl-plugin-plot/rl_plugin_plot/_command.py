"""The ``rlctl plot`` command (light: click only; matplotlib is imported when it runs)."""

from __future__ import annotations

import click


@click.command("plot")
@click.argument("run_dirs", metavar="RUN_DIR...", nargs=-1, required=True, type=click.Path(file_okay=False))
@click.option(
    "-o",
    "--output",
    default="curves.png",
    show_default=True,
    type=click.Path(dir_okay=False),
    help="The image to write; its suffix picks the format.",
)
@click.option(
    "--metric", "metrics", multiple=True, default=("train/episode_return",), show_default=True, help="A metric to draw (repeatable)."
)
def plot(run_dirs: tuple[str, ...], output: str, metrics: tuple[str, ...]) -> None:
    """Draw the learning curves of one or more runs from their metrics.csv (rl-plugin-plot)."""
    from ._plot import plot_runs

    click.echo(plot_runs(run_dirs, metrics, output))


__all__ = ["plot"]
