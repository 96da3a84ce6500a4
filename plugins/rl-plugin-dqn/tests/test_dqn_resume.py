"""A DQN run killed with SIGKILL after a checkpoint and resumed ends bit-identical to an uninterrupted one, replay buffer included."""

from __future__ import annotations

import csv
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import rlcore
from rlcore.testing import assert_state_equal

FRAMES = 2048
ARGS = [
    "train",
    "--algo",
    "dqn",
    "--env",
    "CartPole-v1",
    "--seed",
    "5",
    "--frames",
    str(FRAMES),
    "--set",
    "collector.frames_per_batch=128",
    "--set",
    "trainer.optim_steps_per_batch=8",
    "--set",
    "algo.hidden_sizes=[32, 32]",
    "--set",
    "algo.init_random_frames=256",
    "--set",
    "algo.n_step=3",
    "--set",
    "algo.eps_annealing_frames=1024",
    "--set",
    "hooks.target_updater.interval=16",
    "--set",
    "hooks.replay_buffer.capacity=1500",
    "--set",
    "hooks.replay_buffer.sampler=prioritized",
    "--set",
    "trainer.save_trainer_interval=128",
    "--set",
    "checkpoint.keep_last=20",
    "--set",
    "loggers.console=null",
]


def train(run_dir: Path, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "RLCORE_PLUGINS": "rl-plugin-dqn,rl-plugin-replay"}
    return subprocess.Popen(
        [sys.executable, "-m", "rlcore", *ARGS, "--out", str(run_dir), *extra],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def final_state(run_dir: Path) -> dict:
    factory = rlcore.get_plugin_manager().factory("checkpoint_backends", "torch")
    path, state = factory(directory=run_dir / "checkpoints", keep_last=20).load()
    assert path.name.startswith(f"ckpt-{FRAMES:012d}")
    return state


def rows(run_dir: Path) -> list[tuple[str, str, str]]:
    with open(run_dir / "metrics.csv", newline="") as handle:
        return [(r["frames"], r["name"], r["value"]) for r in csv.DictReader(handle) if r["name"] != "perf/fps"]


def test_sigkill_then_resume_is_bit_identical_with_the_buffer(tmp_path):
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    reference = train(whole)
    victim = train(killed)
    first = 128 * random.randint(3, 10)  # after the learning started (256 frames), the buffer not yet full
    deadline = time.time() + 120
    while time.time() < deadline and not any(p.name.startswith(f"ckpt-{first:012d}") for p in (killed / "checkpoints").glob("ckpt-*")):
        if victim.poll() is not None:
            break
        time.sleep(0.02)
    time.sleep(random.uniform(0.0, 0.2))
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=30)
    assert reference.wait(timeout=240) == 0, reference.stderr.read()

    resumed = train(killed, "--resume", str(killed))
    _, err = resumed.communicate(timeout=240)
    assert resumed.returncode == 0, err
    assert "resumed from" in err

    a, b = final_state(whole), final_state(killed)
    assert a["modules"]["replay_buffer"]["replay_buffer"]["storage"]["size"] == 1500  # the buffer wrapped around
    for part in ("loss_module", "optimizer", "modules", "collector", "counters"):
        assert_state_equal(a[part], b[part], part)
    assert rows(killed) == rows(whole)
