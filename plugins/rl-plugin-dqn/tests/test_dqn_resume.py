"""A DQN run killed with SIGKILL after a checkpoint and resumed ends bit-identical to an uninterrupted one, replay buffer included,
on the eager update and on the compiled one."""

from __future__ import annotations

import random

import pytest

from rlcore_testing import assert_state_equal, kill_and_resume, last_checkpoint

pytestmark = pytest.mark.slow  # subprocesses, several processes, kills and resumes: the slow tier

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


@pytest.mark.parametrize("compiled", [False, True])
def test_sigkill_then_resume_is_bit_identical_with_the_buffer(tmp_path, compiled):
    # killed after the learning started (256 frames), the buffer not yet full
    args = [*ARGS, "--set", f"algo.compile={str(compiled).lower()}"]
    runs = kill_and_resume(tmp_path, args, kill_after=128 * random.randint(3, 10), env={"RLCORE_PLUGINS": "rl-plugin-dqn,rl-plugin-replay"}, timeout=240)
    (path, a), (_, b) = last_checkpoint(runs.whole), last_checkpoint(runs.resumed)
    assert path.name.startswith(f"ckpt-{FRAMES:012d}")
    assert a["modules"]["replay_buffer"]["replay_buffer"]["storage"]["size"] == 1500  # the buffer wrapped around
    for part in ("loss_module", "optimizer", "modules", "collector", "counters"):
        assert_state_equal(a[part], b[part], part)
    whole_metrics, resumed_metrics = runs.metrics()
    assert resumed_metrics == whole_metrics
