"""``LogValidationReward``: TorchRL's evaluation hook with every argument of TorchRL's, on rl-plugin-video's evaluation hook."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from tensordict.nn import interaction_type

import rlcore
from rl_plugin_hooks import ExplorationType, LogValidationReward
from rlcore_testing import HookRecorder, MemoryLogger

MakeTrainer = Callable[..., rlcore.Trainer]


class Spy(torch.nn.Module):
    """Another policy to evaluate: the trainer's, noting the interaction type of each call."""

    def __init__(self, policy: Any) -> None:
        super().__init__()
        self.policy = policy
        self.modes: list[Any] = []

    def forward(self, td: Any) -> Any:
        self.modes.append(interaction_type())
        return self.policy(td)


def test_evaluates_on_the_first_and_every_record_interval_th_batch(rl_make_trainer: MakeTrainer, rl_hook_recorder: HookRecorder) -> None:
    logger = MemoryLogger()
    hook = LogValidationReward(record_interval=2, record_frames=60, frame_skip=2, environment="CartPole-v1", log_pbar=True)
    trainer = rl_make_trainer(hooks={"recorder": hook}, loggers=[logger])
    rl_hook_recorder.register(trainer)
    trainer.train()
    assert all("hooks.recorder" in call.plugins for call in rl_hook_recorder.of("post_steps_log"))
    assert logger.steps("r_evaluation") == [32, 96]  # calls 0 and 2 of 4, as TorchRL counts
    assert [value for _, value in logger.values["r_evaluation"]] == [0.5, 0.5]  # CartPole pays 1 a step, over frame_skip 2
    returns = [value for _, value in logger.values["total_r_evaluation"]]
    assert returns == [value for _, value in logger.values["eval/episode_length"]] == [value for _, value in logger.values["eval/episode_return"]]
    assert hook.last.lengths and sum(hook.last.lengths) <= 60  # record_frames bounds the rollout
    assert trainer._pbar_values["r_evaluation"] == 0.5
    assert trainer.state_dict()["modules"]["recorder"] == {"_count": 4}

    resumed_hook = LogValidationReward(record_interval=2, record_frames=60, environment="CartPole-v1")
    resumed = rl_make_trainer(run_dir=trainer.run_dir, hooks={"recorder": resumed_hook}, total_frames=192, loggers=[logger])
    resumed.load_from_file()
    assert resumed_hook.state_dict() == {"_count": 4}
    resumed.train()
    assert logger.steps("r_evaluation") == [32, 96, 160]


@pytest.mark.parametrize(
    ("exploration_type", "mode"),
    [(None, ExplorationType.RANDOM), (ExplorationType.DETERMINISTIC, ExplorationType.DETERMINISTIC), ("mean", ExplorationType.MEAN)],
)
def test_the_policy_acts_under_exploration_type(rl_make_trainer: MakeTrainer, exploration_type: Any, mode: Any) -> None:
    trainer = rl_make_trainer(total_frames=32)
    spy = Spy(trainer.policy)
    options = {} if exploration_type is None else {"exploration_type": exploration_type}
    hook = LogValidationReward(record_interval=1, record_frames=20, policy_exploration=spy, environment="CartPole-v1", **options)
    hook.register(trainer)
    trainer.train()
    assert spy.modes and set(spy.modes) == {mode}  # TorchRL's default is RANDOM
    assert spy.training  # back in training mode after the evaluation


def test_an_env_instance_other_log_keys_and_an_op_without_a_trainer(rl_make_trainer: MakeTrainer) -> None:
    logger = MemoryLogger()
    trainer = rl_make_trainer(total_frames=64, loggers=[logger])
    env = rlcore.make_vector_env("CartPole-v1", 1)
    hook = LogValidationReward(
        record_interval=1,
        record_frames=30,
        policy_exploration=trainer.policy,
        environment=env,
        exploration_type="deterministic",
        log_keys=[("next", "reward"), "action", "observation"],
        out_keys={("next", "reward"): "reward_eval", "action": "eval_actions"},
    )
    trainer.register_op("post_steps_log", hook)  # TorchRL's third way: no register(), policy and env given
    trainer.train()
    assert logger.steps("reward_eval") == logger.steps("total_reward_eval") == [32, 64]
    actions = logger.histograms["eval_actions"]
    assert [step for step, _ in actions] == [32, 64] and all(set(values.tolist()) <= {0.0, 1.0} for _, values in actions)
    observations = logger.histograms["observation"][0][1]
    assert observations.shape == (30, 4)  # one row per step of the rollout: record_frames steps, across episode ends
    env.step(env.action_space.sample())  # the env is the caller's: still open
    env.close()
    with pytest.raises(rlcore.ConfigError, match=r"^hooks\.log_validation_reward\.log_keys: 'next\.done' is not a key of the evaluation's steps"):
        LogValidationReward(record_interval=1, record_frames=5, policy_exploration=trainer.policy, environment="CartPole-v1", log_keys=["next.done"])()
    with pytest.raises(rlcore.ConfigError, match=r"^hooks\.log_validation_reward: as an op, it needs policy_exploration and environment"):
        LogValidationReward(record_interval=1, record_frames=5)()
    without_make_env = rl_make_trainer(total_frames=32)  # a hand-built trainer: no copy of its env to make
    with pytest.raises(rlcore.ConfigError, match=r"^hooks\.log_validation_reward\.environment: the trainer has no make_env; name an env to evaluate on$"):
        LogValidationReward(record_interval=1, record_frames=5).register(without_make_env)  # (at once, not at the first batch)


def test_torchrls_recorder_argument_and_a_video_with_its_suffix(rl_make_trainer: MakeTrainer) -> None:
    trainer = rl_make_trainer(total_frames=32)
    env = rlcore.make_vector_env("CartPole-v1", 1, kwargs={"render_mode": "rgb_array"})
    with pytest.warns(DeprecationWarning, match="'environment' key"):
        hook = LogValidationReward(record_interval=1, record_frames=20, recorder=env, video=True, fps=10, suffix="greedy")
    hook.register(trainer)
    trainer.train()
    env.close()
    assert hook.last.video == trainer.run_dir / "videos" / "eval_greedy_000000032.mp4" and hook.last.video.stat().st_size > 0
    with pytest.raises(ValueError, match="environment and recorder conflict"):
        LogValidationReward(record_interval=1, record_frames=20, recorder=env, environment="CartPole-v1")
