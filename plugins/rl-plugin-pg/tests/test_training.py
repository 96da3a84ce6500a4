"""A short PPO run on CartPole: the return rises; the run checkpoints the loss module's state."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import rlcore


class Returns:
    """Records the returns of the training episodes."""

    def __init__(self) -> None:
        self.returns: list[float] = []

    @rlcore.hookimpl
    def rl_pre_steps_log(self, trainer) -> None:
        self.returns.extend(trainer.collector.finished_episodes[0].tolist())


def _train(tmp_path, algo: str, frames: int, *overrides: str):
    torch.set_num_threads(1)
    config = rlcore.load_config(
        overrides=[f"algo.name={algo}", f"trainer.total_frames={frames}", "trainer.seed=3", "trainer.progress_bar=false", *overrides]
    )
    config["loggers"] = {"console": None}
    trainer = rlcore.build_trainer(config, run_dir=tmp_path)
    returns = Returns()
    trainer.register_plugin(returns, "test.returns")
    trainer.train()
    return trainer, returns.returns


@pytest.mark.slow
def test_ppo_return_rises_on_cartpole(tmp_path):
    _, returns = _train(tmp_path, "ppo", 12_288)
    first, last = np.mean(returns[:20]), np.mean(returns[-10:])
    assert first < 40
    assert last > 3 * first, (first, last)
    metrics = (tmp_path / "metrics.csv").read_text()
    for name in ("loss/policy", "loss/value", "loss/entropy", "train/entropy", "train/kl_approx",
                 "train/clip_fraction", "train/explained_variance", "optim/lr", "perf/fps", "optim/grad_norm"):
        assert f",{name}," in metrics, name


def test_ppo_kl_checkpoints_its_penalty(tmp_path):
    trainer, _ = _train(tmp_path, "ppo-kl", 2048, "collector.frames_per_batch=512")
    coef = trainer.loss_module.kl_coef.item()
    assert coef != 1.0  # adapted at least once
    state = trainer.state_dict()
    assert state["loss_module"]["kl_coef"].item() == pytest.approx(coef)
    assert "train/kl_coef" in (tmp_path / "metrics.csv").read_text()


@pytest.mark.parametrize("algo", ["a2c", "pg", "spg"])
def test_each_algorithm_runs_on_a_continuous_env(tmp_path, algo):
    trainer, _ = _train(tmp_path, algo, 1024, "env.id=Pendulum-v1", "collector.frames_per_batch=256",
                        "algo.schedule={entropy_coef: 0.0}", "algo.entropy_coef=0.01")
    assert trainer.collected_frames >= 1024
    assert trainer.loss_module.entropy_coef < 0.01


@pytest.mark.slow
def test_rlctl_eval_acts_deterministically(tmp_path):
    import json

    from rlcore_testing import run_rlctl

    _train(tmp_path, "ppo", 1024, "env.num_envs=2")
    runs = [run_rlctl("eval", str(tmp_path), "--episodes", "2") for _ in range(2)]
    assert [run.returncode for run in runs] == [0, 0], runs[0].stderr
    results = [json.loads(run.stdout) for run in runs]
    assert results[0]["episodes"] == 2
    assert results[0]["returns"] == results[1]["returns"]  # the mode, not samples: runs agree
