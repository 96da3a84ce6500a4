"""Every algorithm learns: a short run from its embedded defaults (``rlctl config show ALGO``), then its policy, evaluated
deterministically on a fresh env, returns what no untrained policy does. The slow tier's learning tests, one per algorithm.

The budgets are small, so a threshold sits well below what the algorithm reaches given more frames
(``benchmarks/pg_learning.py`` and ``benchmarks/offpolicy_learning.py`` measure that), and well above the untrained
policy's return, which each test measures too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

import rlcore

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Case:
    algo: str
    env: str
    frames: int
    threshold: float  # the mean evaluation return to reach
    untrained_below: float  # what the untrained policy's evaluation stays under
    overrides: tuple[str, ...] = ()


CASES = [
    Case("ppo", "CartPole-v1", 20_480, 300.0, 100.0),
    Case("ppo-kl", "CartPole-v1", 20_480, 300.0, 100.0),
    Case("a2c", "CartPole-v1", 40_960, 300.0, 100.0),
    Case("pg", "CartPole-v1", 40_960, 110.0, 100.0),
    Case("spg", "CartPole-v1", 40_960, 250.0, 100.0),
    Case("dqn", "CartPole-v1", 20_000, 150.0, 100.0),
    Case("sac", "Pendulum-v1", 4_000, -400.0, -1000.0),
    Case("td3", "Pendulum-v1", 6_000, -400.0, -1000.0),
    Case("ddpg", "Pendulum-v1", 4_000, -400.0, -1000.0),
]


def evaluation(trainer: rlcore.Trainer) -> float:
    env = trainer.make_env(num_envs=1)
    try:
        return sum(rlcore.evaluate(trainer.loss_module.policy, env, episodes=5, seed=100)["returns"]) / 5
    finally:
        env.close()


@pytest.mark.parametrize("case", CASES, ids=[case.algo for case in CASES])
def test_each_algorithm_learns_from_its_defaults(tmp_path: Path, case: Case) -> None:
    pytest.importorskip({"dqn": "rl_plugin_dqn", "sac": "rl_plugin_sac", "td3": "rl_plugin_td3", "ddpg": "rl_plugin_td3"}.get(case.algo, "rl_plugin_pg"))
    torch.set_num_threads(1)
    config = rlcore.load_config(
        algo={"name": case.algo},
        env={"id": case.env},
        overrides=[f"trainer.total_frames={case.frames}", "trainer.seed=1", "trainer.progress_bar=false", "loggers.console=null", *case.overrides],
    )
    trainer = rlcore.build_trainer(config, run_dir=tmp_path / "run")
    untrained = evaluation(trainer)
    trainer.train()
    trained = evaluation(trainer)
    assert untrained < case.untrained_below, f"{case.algo}: the untrained policy already returns {untrained:.1f}"
    assert trained >= case.threshold, f"{case.algo} on {case.env} after {case.frames} frames: {trained:.1f} < {case.threshold} (untrained {untrained:.1f})"
