"""``rlctl report``: each experiment's seeds aggregated into scores with confidence intervals, as Markdown and a PNG."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rlcore import ConfigError

from ._experiments import curves, runs_of
from ._plot import plot_runs
from ._stats import REPS, auc_score, bootstrap_ci, final_score, improvement_ci, iqm, probability_of_improvement

SCORES = {"final": final_score, "auc": auc_score}


def scores(experiment: Path, metric: str) -> dict[str, np.ndarray]:
    """Each run's final and area-under-curve score of ``metric``, by score name.

    :raises ConfigError: when ``experiment`` is no experiment directory, or none of its runs logged ``metric``.
    """
    if not runs_of(experiment):
        raise ConfigError(f"{experiment}: not an experiment directory (rlctl train --seeds writes one; it holds one run directory per seed)")
    logged = curves(experiment, metric)
    if not logged:
        raise ConfigError(f"--metric: no run of {experiment} logged {metric}")
    return {name: np.array([score(f, v) for f, v in logged]) for name, score in SCORES.items()}


def _interval(values: np.ndarray, seed: int) -> str:
    low, high = bootstrap_ci(values, iqm, REPS, seed=seed)
    return f"{float(iqm(values)):.4g} [{float(low):.4g}, {float(high):.4g}]"


def report(
    experiments: Sequence[str | os.PathLike[str]],
    metric: str = "eval/episode_return",
    output: str | os.PathLike[str] = "report",
    seed: int = 0,
) -> tuple[str, Path, Path]:
    """Aggregate each experiment's seeds: the IQM of the final and of the area-under-curve scores with 95% bootstrap
    confidence intervals, and (for two experiments or more) the probability that a run of one beats a run of another.

    :param experiments: experiment directories.
    :param metric: the curve scored.
    :param output: ``OUTPUT.md`` and ``OUTPUT.png`` are written (the curves, IQM with a band per experiment).
    :param seed: the bootstraps' seed.
    :return: the Markdown text, and the paths of the Markdown file and the PNG.
    """
    paths = [Path(e) for e in experiments]
    if not paths:
        raise ConfigError("EXP_DIR: name at least one experiment directory")
    table = {path: scores(path, metric) for path in paths}
    names = [path.name or str(path) for path in paths]
    lines = [
        f"# {metric}",
        "",
        "Interquartile mean over the runs, 95% percentile bootstrap confidence interval in brackets "
        f"({REPS} resamples); final: the last value, AUC: the mean over training.",
        "",
        "| experiment | runs | final IQM | AUC IQM | final mean |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, values in zip(names, table.values()):
        final, auc = _interval(values["final"], seed), _interval(values["auc"], seed)
        lines.append(f"| {name} | {len(values['final'])} | {final} | {auc} | {values['final'].mean():.4g} |")
    if len(paths) > 1:
        lines += ["", "Probability of improvement, P(row > column), of the final scores [95% CI]:", ""]
        lines += ["| | " + " | ".join(names) + " |", "| --- |" + " --- |" * len(names)]
        for x_name, x in zip(names, table.values()):
            cells = []
            for y_name, y in zip(names, table.values()):
                if x_name == y_name:
                    cells.append("-")
                    continue
                low, high = improvement_ci(x["final"], y["final"], seed=seed)
                cells.append(f"{probability_of_improvement(x['final'], y['final']):.2f} [{low:.2f}, {high:.2f}]")
            lines.append(f"| {x_name} | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    markdown, image = Path(f"{output}.md"), Path(f"{output}.png")
    try:
        markdown.parent.mkdir(parents=True, exist_ok=True)
        markdown.write_text(text, encoding="utf-8")
    except OSError as err:
        raise ConfigError(f"-o {output}: cannot write {markdown} ({err.strerror or err})") from None
    plot_runs(paths, [metric], image)
    return text, markdown, image
