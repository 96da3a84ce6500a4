"""SIGKILL, then resume, on a MuJoCo env: the resumed run ends bit-identical to an uninterrupted one (as tests/test_resume.py for CartPole)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import rlcore
from rlcore.testing import assert_state_equal

pytest.importorskip("mujoco", reason="MuJoCo envs need the mujoco package")
pytest.importorskip("rl_plugin_pg")

FRAMES = 768
ARGS = ["train", "--algo", "ppo", "--env", "HalfCheetah-v5", "--seed", "5", "--frames", str(FRAMES),
        "--set", "env.num_envs=2", "--set", "collector.frames_per_batch=128", "--set", "algo.epochs=2", "--set", "algo.minibatches=2",
        "--set", "env.wrappers={normalize_observation: {}, normalize_reward: {}}",
        "--set", "trainer.save_trainer_interval=128", "--set", "checkpoint.keep_last=20", "--set", "loggers.console=null"]  # fmt: skip


def train(run_dir: Path, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "RLCORE_PLUGINS": "rl-plugin-pg,rl-plugin-envs,rl-plugin-nets"}
    command = [sys.executable, "-m", "rlcore", *ARGS, "--out", str(run_dir), *extra]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def final_state(run_dir: Path) -> dict:
    factory = rlcore.get_plugin_manager().factory("checkpoint_backends", "torch")
    path, state = factory(directory=run_dir / "checkpoints", keep_last=20).load()
    assert path.name.startswith(f"ckpt-{FRAMES:012d}")
    return state


def test_sigkill_then_resume_is_bit_identical_on_halfcheetah(tmp_path: Path) -> None:
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    reference = train(whole)
    victim = train(killed)
    first = 128 * 3
    deadline = time.time() + 120
    while time.time() < deadline and not any(p.name.startswith(f"ckpt-{first:012d}") for p in (killed / "checkpoints").glob("ckpt-*")):
        time.sleep(0.02)
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=30)
    assert victim.returncode == -signal.SIGKILL
    assert reference.wait(timeout=300) == 0, reference.stderr.read()
    resumed = train(killed, "--resume", str(killed))
    assert resumed.wait(timeout=300) == 0, resumed.stderr.read()
    assert "cannot be saved" not in resumed.stderr.read()  # the MuJoCo envs were saved: their episodes go on
    a, b = final_state(whole), final_state(killed)
    assert a["collector"]["envs"] is not None
    assert_state_equal(a, b)
