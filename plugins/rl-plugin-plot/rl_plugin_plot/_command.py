"""The ``rlctl plot`` and ``rlctl report`` commands (light: click only; matplotlib is imported when they run)."""

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
    """Draw the learning curves of runs from their metrics.csv, an experiment directory's as one band (rl-plugin-plot)."""
    from ._plot import plot_runs

    click.echo(plot_runs(run_dirs, metrics, output))


@click.command("report")
@click.argument("experiments", metavar="EXP_DIR...", nargs=-1, required=True, type=click.Path(file_okay=False))
@click.option("--metric", default="eval/episode_return", show_default=True, help="The curve scored.")
@click.option("-o", "--output", default="report", show_default=True, help="Writes OUTPUT.md and OUTPUT.png.")
@click.option("--seed", type=int, default=0, show_default=True, help="The bootstraps' seed.")
def report(experiments: tuple[str, ...], metric: str, output: str, seed: int) -> None:
    """Compare experiments over their seeds: IQM of final and AUC scores with 95% bootstrap CIs, probability of
    improvement, curves with bands (rl-plugin-plot). Prints the Markdown table."""
    from ._report import report as write_report

    text, markdown, image = write_report(experiments, metric, output, seed)
    click.echo(text, nl=False)
    click.echo(f"rlctl: wrote {markdown} and {image}", err=True)


__all__ = ["plot", "report"]
