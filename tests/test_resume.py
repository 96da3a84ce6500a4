"""Resume is exact: a run killed with SIGKILL after a checkpoint and resumed ends bit-identical to an uninterrupted one."""

from __future__ import annotations

import random

import pytest

from rlcore_testing import assert_state_equal, kill_and_resume, last_checkpoint

pytestmark = pytest.mark.slow  # subprocesses, several processes, kills and resumes: the slow tier

pytest.importorskip("rl_plugin_pg")

FRAMES = 6144
ARGS = ["train", "--algo", "ppo", "--env", "CartPole-v1", "--seed", "11", "--frames", str(FRAMES),
        "--set", "trainer.save_trainer_interval=512", "--set", "checkpoint.keep_last=20", "--set", "loggers.console=null"]


@pytest.mark.parametrize("backend", ["torch", "torchsnapshot"])
def test_sigkill_then_resume_is_bit_identical(tmp_path, backend):
    env = {"CKPT_BACKEND": backend, "RLCORE_PLUGINS": "rl-plugin-pg,rl-plugin-torchsnapshot"}
    runs = kill_and_resume(tmp_path, ARGS, kill_after=512 * random.randint(2, 6), env=env, delay=0.3)
    (path, whole), (_, resumed) = last_checkpoint(runs.whole), last_checkpoint(runs.resumed)
    assert path.name.startswith(f"ckpt-{FRAMES:012d}")
    assert_state_equal(whole["loss_module"], resumed["loss_module"], "loss_module")
    assert_state_equal(whole["optimizer"], resumed["optimizer"], "optimizer")
    # every (frames, name) once, and the same values as the uninterrupted run
    whole_metrics, resumed_metrics = runs.metrics()
    assert resumed_metrics == whole_metrics
