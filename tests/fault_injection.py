"""Kill a training run with SIGKILL again and again, resume it each time, and compare it with a run never killed.

Shared by ``tests/test_fault_injection.py`` (a few kills per run in CI) and
``benchmarks/fault_injection.py`` (as many as asked). Half of the kills land while a checkpoint is
being written (the moment its temporary file appears), the others at a random moment after the
run got going. The run is PPO (rl-plugin-pg) on CartPole, checkpointed after every batch.
"""

from __future__ import annotations

import csv
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BATCH = 256


def command(run: Path, frames: int, vectorization: str, resume: bool) -> list[str]:
    """``rlctl train`` of the test run (a fresh one, or ``--resume``)."""
    where = ["--resume", str(run)] if resume else ["--out", str(run)]
    config = [
        "--algo", "ppo", "--seed", "7", "--frames", str(frames),
        "--set", f"trainer.save_trainer_interval={BATCH}", "--set", "checkpoint.keep_last=3",
        "--set", "loggers.console=null", "--set", f"env.vectorization={vectorization}", "--set", "env.num_envs=4",
    ]  # fmt: skip
    return [sys.executable, "-m", "rlcore", "train", *where, *([] if resume else config), *(["--frames", str(frames)] if resume else [])]


def start(run: Path, frames: int, vectorization: str, resume: bool) -> subprocess.Popen[str]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "RLCORE_PLUGINS": "rl-plugin-pg"}
    return subprocess.Popen(command(run, frames, vectorization, resume), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@dataclass
class Kills:
    """What a series of kills did."""

    kills: int = 0
    inside_writes: int = 0
    resumes: list[str] = field(default_factory=list)


def kill_and_resume(run: Path, frames: int, kills: int, vectorization: str = "sync", seed: int = 0, timeout: float = 240) -> Kills:
    """Start the run, then ``kills`` times: kill it with SIGKILL and resume it; finally let it finish.

    :return: how many kills there were and how many landed inside a checkpoint write.
    :raises AssertionError: when a resume fails or the run does not finish.
    """
    rng = random.Random(seed)
    done = Kills()
    checkpoints = run / "checkpoints"
    for index in range(kills):
        process = start(run, frames, vectorization, resume=index > 0)
        inside = index % 2 == 0
        deadline = time.time() + timeout
        seen = {p.name for p in checkpoints.glob("ckpt-*")} if checkpoints.is_dir() else set()
        while time.time() < deadline and process.poll() is None:
            names = {p.name for p in checkpoints.glob("*")} if checkpoints.is_dir() else set()
            if inside and any(n.startswith(".tmp-") for n in names):
                break  # a checkpoint is being written right now
            if not inside and {n for n in names if n.startswith("ckpt-")} - seen:
                time.sleep(rng.uniform(0.0, 0.4))  # somewhere in the next batches
                break
            time.sleep(0.001)
        if process.poll() is not None:  # it finished before the kill came
            _, err = process.communicate()
            assert process.returncode == 0, err
            return done
        process.send_signal(signal.SIGKILL)
        _, err = process.communicate(timeout=60)
        done.kills += 1
        done.inside_writes += inside and any(p.name.startswith(".tmp-") for p in checkpoints.glob("*"))
        done.resumes.append(err.strip().splitlines()[0] if err.strip() else "")
    last = start(run, frames, vectorization, resume=True)
    _, err = last.communicate(timeout=timeout)
    assert last.returncode == 0, err
    return done


def final_state(run: Path, frames: int) -> dict[str, Any]:
    """The state of the run's last checkpoint, which must be at ``frames``."""
    import rlcore

    factory = rlcore.get_plugin_manager().factory("checkpoint_backends", "torch")
    path, state = factory(directory=run / "checkpoints", keep_last=3).load()
    assert path.name == f"ckpt-{frames:012d}.pt", path
    return state


def metric_rows(run: Path) -> list[tuple[str, str, str]]:
    """``(frames, name, value)`` of every row of ``metrics.csv``, wall-clock metrics aside."""
    with open(run / "metrics.csv", newline="") as handle:
        return [(r["frames"], r["name"], r["value"]) for r in csv.DictReader(handle) if r["name"] != "perf/fps"]


def assert_same_run(whole: Path, killed: Path, frames: int) -> None:
    """The killed-and-resumed run ended bit-identical to the whole one, with the same metrics, each logged once."""
    from rlcore_testing import assert_state_equal

    reference, resumed = final_state(whole, frames), final_state(killed, frames)
    for part in ("loss_module", "optimizer", "collector", "rng"):
        assert_state_equal(reference[part], resumed[part], part)
    rows = metric_rows(killed)
    assert max(Counter((f, n) for f, n, _ in rows).values()) == 1, "a metric was logged twice at one step"
    assert rows == metric_rows(whole), "the resumed run's metrics differ from the whole run's"
