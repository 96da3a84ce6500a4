"""``rlctl report`` and experiment bands: the statistics against hand computations, the files against what they must hold."""

from __future__ import annotations

import itertools
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest

import rlcore
from rl_plugin_plot import bootstrap_ci, iqm, probability_of_improvement, report


def test_the_iqm_is_the_mean_of_the_middle_half_of_the_runs() -> None:
    assert iqm(np.arange(1.0, 9.0)) == pytest.approx(4.5)  # 3, 4, 5, 6
    assert iqm(np.array([10.0, 1.0, 3.0, 7.0, 5.0])) == pytest.approx(5.0)  # 3, 5, 7: one cut at each end of five
    assert iqm(np.array([2.0, 9.0, 4.0])) == pytest.approx(5.0)  # three: none cut
    curves = np.array([[1.0, 10.0], [2.0, 20.0], [3.0, 30.0], [100.0, 40.0]])
    np.testing.assert_allclose(iqm(curves), [2.5, 25.0])  # per point of a curve


def test_the_bootstrap_interval_matches_the_exact_bootstrap_distribution() -> None:
    scores = np.array([0.0, 1.0, 2.0, 10.0])
    exact = np.sort([iqm(np.array(pick)) for pick in itertools.product(scores, repeat=4)])  # all 256 resamples, equally likely
    low, high = bootstrap_ci(scores, iqm, reps=20000, seed=1)
    assert np.quantile(exact, 0.015) <= low <= np.quantile(exact, 0.035)
    assert np.quantile(exact, 0.965) <= high <= np.quantile(exact, 0.985)
    same_low, same_high = bootstrap_ci(np.full(5, 7.0), iqm)
    assert same_low == same_high == 7.0


def test_the_probability_of_improvement_counts_pairs_and_half_ties() -> None:
    # 1 beats 0; 2 ties 2, 2 and beats 0; 3 beats all: (1 + 2 + 3) / 9
    assert probability_of_improvement(np.array([1.0, 2.0, 3.0]), np.array([2.0, 2.0, 0.0])) == pytest.approx(6 / 9)
    assert probability_of_improvement(np.array([5.0]), np.array([5.0])) == 0.5


def write_experiment(path: Path, finals: list[float]) -> None:
    """An experiment directory: one run per final value, each curve rising linearly to it over 10 evaluations."""
    pm = rlcore.get_plugin_manager(only=[])
    for seed, final in enumerate(finals):
        run = path / f"seed_{seed}"
        logger = rlcore.get_logger("csv", exp_name=run.name, log_dir=run, plugin_manager=pm)
        for step in range(1, 11):
            logger.log_scalars({"eval/episode_return": final * step / 10}, step * 1000)
        logger.close()


def test_a_report_of_two_experiments_writes_the_table_and_the_curves(tmp_path: Path) -> None:
    write_experiment(tmp_path / "a", [100.0, 200.0, 300.0, 400.0, 1000.0])
    write_experiment(tmp_path / "b", [50.0, 60.0, 70.0, 80.0, 90.0])
    text, markdown, image = report([tmp_path / "a", tmp_path / "b"], output=tmp_path / "out" / "report")
    assert markdown.read_text() == text
    scores, improvement = text.split("Probability of improvement")
    rows = {line.split("|")[1].strip(): line for line in scores.splitlines() if line.startswith(("| a", "| b"))}
    assert rows["a"].split("|")[2].strip() == "5"
    assert rows["a"].split("|")[3].strip().startswith("300 [")  # IQM of the finals: 200, 300, 400
    assert rows["a"].split("|")[4].strip().startswith(f"{iqm(np.array([100, 200, 300, 400, 1000]) * 0.55):.4g} [")  # AUC: mean of 0.1..1
    assert rows["a"].split("|")[5].strip() == "400"
    assert "| a | - | 1.00 [" in improvement and "| b | 0.00 [" in improvement  # every run of a beats every run of b
    picture = matplotlib.image.imread(image)
    assert picture.shape[0] > 100 and picture.shape[2] in (3, 4)
    assert len(np.unique(picture.reshape(-1, picture.shape[2]), axis=0)) > 20  # drawn: lines and translucent bands


def test_a_report_refuses_a_run_directory_and_an_unlogged_metric(tmp_path: Path) -> None:
    write_experiment(tmp_path / "a", [1.0, 2.0])
    with pytest.raises(rlcore.ConfigError, match="not an experiment directory"):
        report([tmp_path / "a" / "seed_0"], output=tmp_path / "r")
    with pytest.raises(rlcore.ConfigError, match="--metric: no run of .* logged train/episode_return"):
        report([tmp_path / "a"], metric="train/episode_return", output=tmp_path / "r")
