"""The one evaluation loop, ``rlcore.evaluate``: episode and frame bounds, several envs, both autoreset modes,
the exploration type, the policy's mode, and the frames it offers."""

from __future__ import annotations

from typing import Any

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from tensordict.nn import InteractionType, TensorDictModule, interaction_type
from torch import nn

import rlcore


class Probe(nn.Module):
    """Always pushes left (CartPole episodes of about 10 steps) and notes the interaction type and training flag it ran under."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[Any, bool]] = []

    def forward(self, observation: torch.Tensor) -> torch.Tensor:
        self.seen.append((interaction_type(), self.training))
        return torch.zeros(observation.shape[0], dtype=torch.long)


def _policy() -> tuple[TensorDictModule, Probe]:
    probe = Probe()
    return TensorDictModule(probe, in_keys=["observation"], out_keys=["action"]), probe


def _env(num_envs: int, **kwargs: Any) -> Any:
    return rlcore.make_vector_env("CartPole-v1", num_envs, **kwargs)


def _first_length(seed: int) -> int:
    """The length of the first episode of one CartPole env reset with ``seed``, evaluated alone."""
    return rlcore.evaluate(_policy()[0], _env(1), 1, seed=seed)["lengths"][0]


def test_several_envs_evaluate_together_and_frames_come_from_the_first_episode() -> None:
    offered: list[Any] = []
    result = rlcore.evaluate(_policy()[0], _env(3, kwargs={"render_mode": "rgb_array"}), 5, seed=10, on_frame=offered.append)
    assert len(result["returns"]) == 5
    assert result["returns"] == [float(n) for n in result["lengths"]]  # CartPole pays 1 per step
    # env i is reset with seed 10 + i; the first three episodes to end are one of each env
    assert sorted(result["lengths"][:3]) == sorted(_first_length(10 + i) for i in range(3))
    assert len(offered) == _first_length(10)  # one frame per action of env 0's first episode
    assert offered[0]().shape == (400, 600, 3)  # a frame is drawn only when asked for


def test_a_frame_budget_cuts_the_rollout_and_the_running_episode_counts() -> None:
    policy = _policy()[0]
    assert rlcore.evaluate(policy, _env(1), None, max_frames=3, seed=0) == {"returns": [3.0], "lengths": [3]}
    assert rlcore.evaluate(policy, _env(2), None, max_frames=4, seed=0)["lengths"] == [2]  # 2 steps of 2 envs
    cut = rlcore.evaluate(policy, _env(1), None, max_frames=30, seed=0)
    assert len(cut["lengths"]) >= 2 and sum(cut["lengths"]) <= 30  # only finished episodes once one finished
    assert rlcore.evaluate(policy, _env(1), 2, max_frames=10_000, seed=0)["lengths"] == cut["lengths"][:2]


def test_next_step_autoreset_counts_no_reset_step() -> None:
    policy = _policy()[0]
    next_step = SyncVectorEnv([lambda: gymnasium.make("CartPole-v1")] * 2, autoreset_mode=AutoresetMode.NEXT_STEP)
    assert rlcore.evaluate(policy, next_step, 6, seed=4) == rlcore.evaluate(policy, _env(2), 6, seed=4)
    disabled = SyncVectorEnv([lambda: gymnasium.make("CartPole-v1")], autoreset_mode=AutoresetMode.DISABLED)
    with pytest.raises(ValueError, match="autoreset"):
        rlcore.evaluate(policy, disabled, 1)


def test_returns_are_the_envs_own_rewards() -> None:
    result = rlcore.evaluate(_policy()[0], _env(1, wrappers={"normalize_reward": {}}), 3, seed=0)
    assert result["returns"] == [float(n) for n in result["lengths"]]


@pytest.mark.parametrize(
    ("exploration_type", "expected"),
    [
        (InteractionType.DETERMINISTIC, InteractionType.DETERMINISTIC),
        ("random", InteractionType.RANDOM),
        ("MODE", InteractionType.MODE),
        (InteractionType.MEAN, InteractionType.MEAN),
    ],
)
def test_exploration_type_and_eval_mode(exploration_type: Any, expected: InteractionType) -> None:
    policy, probe = _policy()
    rlcore.evaluate(policy, _env(1), 1, exploration_type=exploration_type, seed=0)
    assert probe.seen and set(probe.seen) == {(expected, False)}  # acts in eval mode under the exploration type
    assert policy.training and probe.training  # restored


def test_deterministic_is_the_default() -> None:
    policy, probe = _policy()
    rlcore.evaluate(policy, _env(1), 1, seed=0)
    assert probe.seen[0] == (InteractionType.DETERMINISTIC, False)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"episodes": None}, "set episodes or max_frames"),
        ({"episodes": 0}, "episodes must be at least 1"),
        (
            {"exploration_type": "greedy"},
            r"exploration_type: unknown value 'greedy' \(valid choices: mode, median, mean, random, deterministic\)",
        ),
    ],
)
def test_bad_arguments_are_one_line_errors(kwargs: dict[str, Any], message: str) -> None:
    policy, probe = _policy()
    with pytest.raises(ValueError, match=message):
        rlcore.evaluate(policy, _env(1), **kwargs)
    assert probe.seen == [] and policy.training


def test_a_policy_without_parameters_or_training_flag() -> None:
    class Plain:
        def __call__(self, td: Any) -> Any:
            td["action"] = torch.as_tensor(np.zeros(td.batch_size[0], dtype=np.int64))
            return td

    assert len(rlcore.evaluate(Plain(), _env(1), 2, seed=0)["lengths"]) == 2
