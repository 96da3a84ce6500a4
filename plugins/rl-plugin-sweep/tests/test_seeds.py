"""``rlctl train --seeds``: an experiment of real PPO runs, killed, resumed, and equal to lone runs of its seeds."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rl_plugin_sweep import Experiment, parse_seeds
from rlcore import ConfigError, load_config
from rlcore_testing import PluginConformance, assert_state_equal, last_checkpoint, run_rlctl

PLUGINS = {"RLCORE_PLUGINS": "rl-plugin-pg,rl-plugin-nets,rl-plugin-envs,rl-plugin-video,rl-plugin-sweep"}
FRAMES = 3072
#: a small PPO on CartPole: a checkpoint every 256 frames, so that a kill finds some
ARGS = ["--frames", str(FRAMES), "--set", "trainer.save_trainer_interval=256", "--set", "loggers.console=null"]


def rlctl(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "rlcore", *args], env={**os.environ, **PLUGINS}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def test_seeds_are_read_as_ranges_and_lists() -> None:
    assert parse_seeds("0-3") == [0, 1, 2, 3]
    assert parse_seeds("5,1,1-2") == [5, 1, 2]
    for bad in ("", "a", "3-1", "1-", "-2"):
        with pytest.raises(ConfigError, match="--seeds"):
            parse_seeds(bad)


def test_an_experiment_refuses_a_directory_of_another_config(tmp_path: Path) -> None:
    config = load_config(overrides=["trainer.total_frames=1000"])
    Experiment(tmp_path / "exp", config)
    Experiment(tmp_path / "exp", config)  # (the same: continued)
    other = load_config(overrides=["trainer.total_frames=2000"])
    with pytest.raises(ConfigError, match=r"another config \(trainer.total_frames differs\)"):
        Experiment(tmp_path / "exp", other)
    (tmp_path / "stuff").mkdir()
    (tmp_path / "stuff" / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="not an experiment directory"):
        Experiment(tmp_path / "stuff", config)


def test_seed_options_are_refused_without_seeds_and_with_one_seed() -> None:
    code, _, err = run_rlctl("train", "--jobs", "2", env=PLUGINS)
    assert code == 2 and "--jobs runs seeds: give --seeds too" in err
    code, _, err = run_rlctl("train", "--seeds", "0-1", "--seed", "3", env=PLUGINS)
    assert code == 2 and "--seed is for one run" in err
    code, _, err = run_rlctl("train", "--seeds", "x", env=PLUGINS)
    assert code == 2 and "--seeds 'x': expected seeds such as 0-9" in err


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_killed_experiment_resumes_and_each_run_equals_a_lone_run_of_its_seed(tmp_path: Path) -> None:
    exp = tmp_path / "exp"
    command = ["train", "--seeds", "0-3", "--jobs", "2", "--out", str(exp), *ARGS]
    first = rlctl(*command)
    deadline = time.monotonic() + 300
    while not list((exp / "seed_1" / "checkpoints").glob("ckpt-*")):  # killed with a run mid-way
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()[0]
        time.sleep(0.05)
    first.send_signal(signal.SIGKILL)  # (its runs are sent SIGTERM by the kernel: each checkpoints and stops)
    first.wait()
    lone = {seed: rlctl("train", "--seed", str(seed), "--out", str(tmp_path / f"lone_{seed}"), *ARGS) for seed in (0, 1, 2, 3)}
    finished = json.loads((exp / "experiment.json").read_text())["finished"] if (exp / "experiment.json").exists() else []
    assert len(finished) < 4

    again = rlctl(*command)
    out = again.communicate(timeout=300)[0]
    assert again.returncode == 0, out
    assert f"4 seeds, {len(finished)} finished before" in out
    assert "seed 1: resumed" in out
    assert json.loads((exp / "experiment.json").read_text())["finished"] == [0, 1, 2, 3]
    for process in lone.values():
        assert process.wait(timeout=300) == 0, process.communicate()[0]

    from rlcore import read_metrics

    for seed in (0, 1, 2, 3):
        run, alone = exp / f"seed_{seed}", tmp_path / f"lone_{seed}"
        (path, state), (_, expected) = last_checkpoint(run), last_checkpoint(alone)
        assert path.name.startswith(f"ckpt-{FRAMES:012d}")  # trained to the end, once
        for part in ("loss_module", "optimizer", "collector"):
            assert_state_equal(expected[part], state[part], f"seed {seed} {part}")
        metrics = {k: v for k, v in read_metrics(run).items() if k != "perf/fps"}
        assert metrics == {k: v for k, v in read_metrics(alone).items() if k != "perf/fps"}
        frames = metrics["train/episode_return"][0]
        assert frames == sorted(set(frames))  # no row twice


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_report_compares_two_experiments_of_five_seeds(tmp_path: Path) -> None:
    """PPO with and without advantage normalisation, 5 seeds each: the report's numbers are those of the runs' own metrics."""
    import matplotlib.image
    import numpy as np

    from rl_plugin_plot import iqm
    from rlcore import read_metrics

    short = ["--frames", "2048", "--set", "loggers.console=null", "--set", "hooks.evaluation={record_interval: 512, episodes: 3}"]
    for normalize in ("true", "false"):
        done = rlctl("train", "--seeds", "0-4", "--jobs", "2", "--out", str(tmp_path / f"norm_{normalize}"), *short,
                     "--set", f"algo.normalize_advantage={normalize}")  # fmt: skip
        assert done.wait(timeout=400) == 0, done.communicate()[0]
    experiments = [str(tmp_path / "norm_true"), str(tmp_path / "norm_false")]
    code, table, err = run_rlctl("report", *experiments, "-o", str(tmp_path / "report"), env={"RLCORE_PLUGINS": "rl-plugin-plot"})
    assert code == 0, err
    assert (tmp_path / "report.md").read_text() == table
    for name in ("norm_true", "norm_false"):
        finals = np.array([read_metrics(tmp_path / name / f"seed_{s}")["eval/episode_return"][1][-1] for s in range(5)])
        (row,) = [line for line in table.split("Probability")[0].splitlines() if line.startswith(f"| {name} |")]
        cells = [cell.strip() for cell in row.split("|")[1:-1]]
        assert cells[1] == "5" and cells[2].startswith(f"{iqm(finals):.4g} [") and cells[4] == f"{finals.mean():.4g}"
    assert "| norm_true | - | " in table and "| norm_false | " in table.split("Probability")[1]
    assert matplotlib.image.imread(tmp_path / "report.png").shape[0] > 100


class TestSweepPlugin(PluginConformance):
    """Found through its entry point, listed without importing torch, Optuna or Ray, blockable."""

    plugin = "sweep"
    distribution = "rl-plugin-sweep"
    provides = {"commands": ["sweep", "train --address", "train --backend", "train --jobs", "train --seeds"]}
    hooks = ("rl_register_commands",)
    heavy_modules = ("torch", "optuna", "ray", "gymnasium")
