"""Resume is exact: a run killed with SIGKILL after a checkpoint and resumed ends bit-identical to an uninterrupted one."""

from __future__ import annotations

import csv
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

import rlcore
from rlcore.testing import assert_state_equal

pytest.importorskip("rl_plugin_pg")

FRAMES = 6144
ARGS = ["train", "--algo", "ppo", "--env", "CartPole-v1", "--seed", "11", "--frames", str(FRAMES),
        "--set", "trainer.save_trainer_interval=512", "--set", "checkpoint.keep_last=20", "--set", "loggers.console=null"]


def train(run_dir: Path, backend: str, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "CKPT_BACKEND": backend, "OMP_NUM_THREADS": "1", "RLCORE_PLUGINS": "rl-plugin-pg,rl-plugin-torchsnapshot"}
    return subprocess.Popen([sys.executable, "-m", "rlcore", *ARGS, "--out", str(run_dir), *extra],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def final_state(run_dir: Path, backend: str) -> dict:
    factory = rlcore.get_plugin_manager().factory("checkpoint_backends", backend)
    path, state = factory(directory=run_dir / "checkpoints", keep_last=20).load()
    assert path.name.startswith(f"ckpt-{FRAMES:012d}")
    return state


def rows(run_dir: Path) -> list[tuple[str, str, str]]:
    with open(run_dir / "metrics.csv", newline="") as handle:
        return [(r["frames"], r["name"], r["value"]) for r in csv.DictReader(handle)]


@pytest.mark.parametrize("backend", ["torch", "torchsnapshot"])
def test_sigkill_then_resume_is_bit_identical(tmp_path, backend):
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    reference = train(whole, backend)
    victim = train(killed, backend)
    first = 512 * random.randint(2, 6)  # kill at a random point after some checkpoint
    deadline = time.time() + 120
    while time.time() < deadline and not any(p.name.startswith(f"ckpt-{first:012d}") for p in (killed / "checkpoints").glob("ckpt-*")):
        time.sleep(0.02)
    time.sleep(random.uniform(0.0, 0.3))
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=30)
    assert victim.returncode == -signal.SIGKILL
    assert reference.wait(timeout=300) == 0, reference.stderr.read()

    resumed = train(killed, backend, "--resume", str(killed))
    _, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    assert "resumed from" in err

    assert_state_equal(final_state(whole, backend)["loss_module"], final_state(killed, backend)["loss_module"], "loss_module")
    assert_state_equal(final_state(whole, backend)["optimizer"], final_state(killed, backend)["optimizer"], "optimizer")
    # metrics.csv: every (frames, name) once, and the same values as the uninterrupted run (wall-clock metrics aside)
    killed_rows = [r for r in rows(killed) if r[1] != "perf/fps"]
    assert max(Counter((f, n) for f, n, _ in killed_rows).values()) == 1
    assert killed_rows == [r for r in rows(whole) if r[1] != "perf/fps"]
