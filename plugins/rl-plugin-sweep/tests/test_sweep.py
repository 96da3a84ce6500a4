"""``rlctl sweep``: a real Optuna search over PPO on CartPole, pruned, killed, continued, and its best config trained."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
import yaml

from rl_plugin_sweep import read_sweep
from rlcore import ConfigError, read_metrics
from rlcore_testing import run_rlctl

PLUGINS = {"RLCORE_PLUGINS": "rl-plugin-pg,rl-plugin-nets,rl-plugin-envs,rl-plugin-video,rl-plugin-sweep"}
SWEEP = """\
algo: {name: ppo}
env: {id: CartPole-v1}
trainer: {total_frames: 12288, save_trainer_interval: 1024}
loggers: {console: null}
hooks:
  evaluation: {record_interval: 2048, episodes: 3}
sweep:
  space:
    optim.lr: {loguniform: [1.0e-5, 1.0e-2]}
    algo.clip_range: {choice: [0.1, 0.2, 0.3]}
  trials: 12
  startup_trials: 2
"""


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ("sweep: {}", "sweep.space: name at least one key"),
        ("sweep: {space: {optim.lr: {normal: [0, 1]}}}", "sweep.space.optim.lr: expected one of {uniform: [low, high]}"),
        ("sweep: {space: {optim.lr: {loguniform: [0, 1]}}}", "sweep.space.optim.lr.loguniform: expected 0 < low < high, got [0, 1]"),
        ("sweep: {space: {optim.lr: {uniform: [1, 0]}}}", "sweep.space.optim.lr.uniform: expected numbers low < high"),
        ("sweep: {space: {optim.lr: {choice: []}}}", r"sweep.space.optim.lr.choice: expected [value, ...]"),
        ("sweep: {space: {optim.lr: {choice: [1]}}, trails: 3}", "unknown key sweep.trails (valid choices: space, metric"),
        ("algo: {name: ppo}", "has no sweep section"),
    ],
)
def test_a_bad_sweep_file_is_one_line_naming_the_key(tmp_path: Path, section: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        read_sweep(write(tmp_path / "s.yaml", section))


def test_a_space_key_the_config_lacks_is_refused_before_any_trial_runs(tmp_path: Path) -> None:
    sweep = write(tmp_path / "s.yaml", "algo: {name: ppo}\nsweep: {space: {optim.lrr: {choice: [0.1]}}, trials: 1}\n")
    code, _, err = run_rlctl("sweep", str(sweep), "--out", str(tmp_path / "out"), env=PLUGINS)
    assert code == 2
    assert "optim.lrr" in err and "Traceback" not in err


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_pruned_sweep_killed_midway_continues_to_all_its_trials_and_its_best_config_trains(tmp_path: Path) -> None:
    sweep, out = write(tmp_path / "ppo.yaml", SWEEP), tmp_path / "sweep"
    command = [sys.executable, "-m", "rlcore", "sweep", str(sweep), "--out", str(out), "--jobs", "2"]
    env = {**os.environ, **PLUGINS}
    first = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 400
    while not list((out / "trial_0005" / "seed_0" / "checkpoints").glob("ckpt-*")):  # killed with trials mid-way
        assert first.poll() is None and time.monotonic() < deadline, first.communicate()[0]
        time.sleep(0.05)
    first.send_signal(signal.SIGKILL)
    first.wait()
    storage = f"sqlite:///{out / 'optuna.db'}"
    before = optuna.load_study(study_name="sweep", storage=storage).get_trials()
    assert any(t.state == optuna.trial.TrialState.RUNNING for t in before)

    again = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr
    assert "to resume" in again.stderr
    trials = optuna.load_study(study_name="sweep", storage=storage).get_trials()
    states = [t.state for t in trials]
    assert len(trials) == 12
    assert states.count(optuna.trial.TrialState.PRUNED) >= 1, again.stderr
    assert states.count(optuna.trial.TrialState.COMPLETE) + states.count(optuna.trial.TrialState.PRUNED) == 12, again.stderr
    for trial in trials:  # none trained twice: each run's evaluations at distinct frame counts
        frames = read_metrics(out / trial.user_attrs["trial_dir"] / "seed_0")["eval/episode_return"][0]
        assert frames == sorted(set(frames))

    code, best, err = run_rlctl("sweep", str(sweep), "--out", str(out), "--best", env=PLUGINS)
    assert code == 0, err
    config = yaml.safe_load(best)
    study = optuna.load_study(study_name="sweep", storage=storage)
    assert config["optim"]["lr"] == pytest.approx(study.best_params["optim.lr"])
    assert config["algo"]["clip_range"] == study.best_params["algo.clip_range"]
    best_file = write(tmp_path / "best.yaml", best)
    code, _, err = run_rlctl("train", str(best_file), "--seed", "0", "--out", str(tmp_path / "best"), subprocess=True, env=PLUGINS, timeout=300)
    assert code == 0, err
    assert read_metrics(tmp_path / "best")["eval/episode_return"][1][-1] >= 475


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_sweep_on_ray_retries_the_trial_whose_worker_was_killed(tmp_path: Path) -> None:
    """The sweep above on a local 2-CPU Ray cluster, its trials a third as long (what is checked is the retry, not the returns)."""
    sweep, out = write(tmp_path / "ppo.yaml", SWEEP.replace("total_frames: 12288", "total_frames: 4096")), tmp_path / "sweep"
    command = [sys.executable, "-m", "rlcore", "sweep", str(sweep), "--out", str(out), "--jobs", "2", "--backend", "ray"]
    running = subprocess.Popen(command, env={**os.environ, **PLUGINS}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log = out / "trial_0002" / "logs" / "seed_0.log"
    deadline = time.monotonic() + 400
    while not list((out / "trial_0002" / "seed_0" / "checkpoints").glob("ckpt-*")):  # the trial mid-way
        assert running.poll() is None and time.monotonic() < deadline, running.communicate()[0]
        time.sleep(0.05)
    (worker,) = [int(line.split()[-1]) for line in log.read_text().splitlines() if line.startswith("rl-plugin-sweep: in Ray worker pid")]
    os.kill(worker, signal.SIGKILL)
    output = running.communicate(timeout=600)[0]
    assert running.returncode == 0, output

    workers = [line for line in log.read_text().splitlines() if line.startswith("rl-plugin-sweep: in Ray worker pid")]
    assert len(workers) == 2 and str(worker) in workers[0]  # started again in a new worker
    assert "rlctl: resumed from" in log.read_text()  # from the checkpoint the killed run left
    trials = optuna.load_study(study_name="sweep", storage=f"sqlite:///{out / 'optuna.db'}").get_trials()
    assert len(trials) == 12
    assert {t.state for t in trials} <= {optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED}, output
    assert trials[2].state in (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)
