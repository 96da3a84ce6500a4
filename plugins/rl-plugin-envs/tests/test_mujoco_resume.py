"""SIGKILL, then resume, on a MuJoCo env: the resumed run ends bit-identical to an uninterrupted one (as tests/test_resume.py for CartPole)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlcore_testing import assert_state_equal, kill_and_resume, last_checkpoint

pytestmark = pytest.mark.slow  # subprocesses, several processes, kills and resumes: the slow tier

pytest.importorskip("mujoco", reason="MuJoCo envs need the mujoco package")
pytest.importorskip("rl_plugin_pg")

FRAMES = 768
ARGS = ["train", "--algo", "ppo", "--env", "HalfCheetah-v5", "--seed", "5", "--frames", str(FRAMES),
        "--set", "env.num_envs=2", "--set", "collector.frames_per_batch=128", "--set", "algo.epochs=2", "--set", "algo.minibatches=2",
        "--set", "env.wrappers={normalize_observation: {}, normalize_reward: {}}",
        "--set", "trainer.save_trainer_interval=128", "--set", "checkpoint.keep_last=20", "--set", "loggers.console=null"]  # fmt: skip


def test_sigkill_then_resume_is_bit_identical_on_halfcheetah(tmp_path: Path) -> None:
    runs = kill_and_resume(tmp_path, ARGS, kill_after=128 * 3, env={"RLCORE_PLUGINS": "rl-plugin-pg,rl-plugin-envs,rl-plugin-nets"}, delay=0)
    assert "cannot be saved" not in runs.stderr  # the MuJoCo envs were saved: their episodes go on
    (path, a), (_, b) = last_checkpoint(runs.whole), last_checkpoint(runs.resumed)
    assert path.name.startswith(f"ckpt-{FRAMES:012d}")
    assert a["collector"]["envs"] is not None
    assert_state_equal(a, b)
