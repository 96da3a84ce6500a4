"""Short TD3 runs on Pendulum: the delayed actor, deterministic evaluation, the CLI's metrics, and a bit-exact resume."""

from __future__ import annotations

import random

import pytest
import torch

import rlcore
from rlcore_testing import assert_state_equal, kill_and_resume, last_checkpoint


def run_config(*overrides: str) -> dict:
    return rlcore.load_config(
        overrides=[
            "algo.name=td3",
            "trainer.seed=2",
            "trainer.progress_bar=false",
            "loggers.console=null",
            "algo.hidden_sizes=[32, 32]",
            "hooks.replay_buffer.batch_size=32",
            *overrides,
        ]
    )


@pytest.mark.parametrize(("delay", "algo"), [(3, "td3"), (1, "ddpg")])
def test_the_actor_and_targets_step_every_policy_delay_steps_the_critics_every_step(tmp_path, delay, algo):
    torch.set_num_threads(1)
    config = run_config(
        f"algo.name={algo}",
        "trainer.total_frames=80",
        "algo.init_random_frames=50",
        f"algo.policy_delay={delay}",
        f"hooks.target_updater.interval={delay}",
    )
    trainer = rlcore.build_trainer(config, run_dir=tmp_path)
    loss = trainer.loss_module
    tracked = {"actor": loss.actor, "critic": loss.critic, "target_actor": loss.target_actor, "target_critic": loss.target_critic}

    def snapshot() -> dict[str, list[torch.Tensor]]:
        return {name: [t.detach().clone() for t in module.state_dict().values()] for name, module in tracked.items()}

    seen: list[tuple[int, dict[str, bool]]] = []
    before = [snapshot()]

    def record() -> None:  # at post_optim: after the optimizer step and the target update
        now = snapshot()
        changed = {name: any(not torch.equal(a, b) for a, b in zip(now[name], before[0][name], strict=True)) for name in now}
        seen.append((trainer.optim_steps, changed))
        before[0] = now

    trainer.register_op("post_optim", record)
    trainer.train()
    assert [step for step, _ in seen] == list(range(1, 80 - 50 + 2))  # one step per frame from frame 50 on
    for step, changed in seen:
        updated = step % delay == 0
        assert changed == {"actor": updated, "critic": True, "target_actor": updated, "target_critic": updated}, step
    adam = trainer.optimizer.state
    assert {int(adam[p]["step"]) for p in loss.actor.parameters()} == {len(seen) // delay}  # Adam never stepped the actor otherwise
    assert {int(adam[p]["step"]) for p in loss.critic.parameters()} == {len(seen)}
    assert loss.updates == len(seen)
    env = trainer.make_env(num_envs=1)
    runs = [rlcore.evaluate(loss.policy, env, episodes=1, seed=3)["returns"] for _ in range(2)]
    assert runs[0] == runs[1]  # evaluation is the actor's action, without noise


FRAMES = 600
ARGS = [
    "train",
    "--algo",
    "td3",
    "--env",
    "Pendulum-v1",
    "--seed",
    "5",
    "--frames",
    str(FRAMES),
    "--set",
    "algo.hidden_sizes=[32, 32]",
    "--set",
    "algo.init_random_frames=100",
    "--set",
    "algo.exploration=ou",
    "--set",
    "algo.exploration_sigma_end=0.05",
    "--set",
    "algo.exploration_annealing_frames=500",
    "--set",
    "hooks.replay_buffer.batch_size=32",
    "--set",
    "hooks.replay_buffer.capacity=500",
    "--set",
    "trainer.log_interval=50",
    "--set",
    "trainer.save_trainer_interval=50",
    "--set",
    "checkpoint.keep_last=20",
    "--set",
    "loggers.console=null",
    "--set",
    "trainer.progress_bar=false",
]
METRICS = (
    "loss/qvalue",
    "loss/actor",
    "train/q_value",
    "train/td_error",
    "train/sigma",
    "train/buffer_size",
    "train/update_to_data",
    "train/episode_return",
)


@pytest.mark.slow
def test_cli_run_logs_the_metrics_and_a_killed_run_resumes_bit_identically(tmp_path):
    # killed after the learning started (100 frames), OU noise and the delay under way
    env = {"RLCORE_PLUGINS": "rl-plugin-td3,rl-plugin-replay,rl-plugin-nets"}
    runs = kill_and_resume(tmp_path, ARGS, kill_after=50 * random.randint(3, 9), env=env, timeout=240, delay=0.1)
    whole_metrics, resumed_metrics = runs.metrics()
    assert set(METRICS) <= set(whole_metrics), set(METRICS) - set(whole_metrics)
    assert resumed_metrics == whole_metrics

    (path, a), (_, b) = last_checkpoint(runs.whole), last_checkpoint(runs.resumed)
    assert path.name.startswith(f"ckpt-{FRAMES:012d}")
    assert a["loss_module"]["_extra_state"] == {"updates": FRAMES - 100 + 1}  # the delay's clock is checkpointed
    for state in (a, b):  # the logged means not yet written hold the wall-clock frames per second
        state["counters"].get("pending_means", {}).pop("perf/fps", None)
    for part in ("loss_module", "optimizer", "modules", "collector", "counters"):
        assert_state_equal(a[part], b[part], part)


def test_targets_moving_on_other_steps_than_the_actor_is_said(tmp_path):
    torch.set_num_threads(1)
    config = run_config("trainer.total_frames=40", "algo.init_random_frames=30", "hooks.target_updater.interval=1")
    trainer = rlcore.build_trainer(config, run_dir=tmp_path)
    with pytest.warns(UserWarning, match=r"hooks.target_updater.interval \(1\) differs from algo.policy_delay \(2\)"):
        trainer.train()
