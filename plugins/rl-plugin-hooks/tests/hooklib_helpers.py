"""Helpers of the tests: an actor-critic loss with two parameter groups, a tiny algorithm, and a checkpoint round trip."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from tensordict import TensorDict, TensorDictBase
from tensordict.nn import ProbabilisticTensorDictModule, ProbabilisticTensorDictSequential, TensorDictModule
from torch import nn

import rlcore
from rlcore_testing import MemoryLogger, assert_state_equal

ENV_ID = "CartPole-v1"


class ActorCriticLoss(nn.Module):
    """A categorical actor and a linear critic on CartPole, each with its own parameters.

    ``loss_actor`` weighs the actor's log-probabilities by the critic's values, so it reaches the critic's
    parameters too (as an actor's loss through its critic does); ``loss_critic`` reaches only the critic.
    """

    def __init__(self, observations: int = 4, actions: int = 2) -> None:
        super().__init__()
        self.actor = nn.Linear(observations, actions)
        self.critic = nn.Linear(observations, 1)
        self.policy = ProbabilisticTensorDictSequential(
            TensorDictModule(self.actor, in_keys=["observation"], out_keys=["logits"]),
            ProbabilisticTensorDictModule(in_keys=["logits"], out_keys=["action"], distribution_class=torch.distributions.Categorical, return_log_prob=True),
        )

    def forward(self, batch: TensorDictBase) -> TensorDict:
        observation = batch["observation"]
        value = self.critic(observation).squeeze(-1)
        log_prob = torch.log_softmax(self.actor(observation), -1).gather(-1, batch["action"].unsqueeze(-1)).squeeze(-1)
        loss_actor = -(log_prob * value).mean()
        loss_critic = (value - batch["next", "reward"].squeeze(-1)).pow(2).mean()
        return TensorDict({"loss_actor": loss_actor, "loss_critic": loss_critic}, batch_size=[])


def actor_critic_trainer(run_dir: Any, loss: ActorCriticLoss | None = None, **options: Any) -> rlcore.Trainer:
    """A real trainer of :class:`ActorCriticLoss` on CartPole (2 envs, 4 batches of 32 frames), by default with no
    optimizer of its own, rl-core's builtins only, and the torch checkpoint backend in ``run_dir/checkpoints``."""
    loss = loss or ActorCriticLoss()
    pm = rlcore.get_plugin_manager(only=[])
    env = rlcore.make_vector_env(ENV_ID, 2, plugin_manager=pm)
    settings: dict[str, Any] = {
        "optimizer": None,
        "total_frames": 128,
        "optim_steps_per_batch": 2,
        "seed": 0,
        "log_interval": 1,
        "progress_bar": False,
        "loggers": [MemoryLogger()],
        "plugin_manager": pm,
        "run_dir": run_dir,
        "checkpoint": pm.factory("checkpoint_backends", "torch")(directory=run_dir / "checkpoints", keep_last=2),
        **options,
    }
    return rlcore.Trainer(collector=rlcore.Collector(env, loss.policy, 32), loss_module=loss, **settings)


class TinyAlgorithm:
    """Contributes the ``tiny`` algorithm: :class:`ActorCriticLoss` on the env's spaces, for config runs."""

    @rlcore.hookimpl
    def rl_register_algorithms(self) -> list[rlcore.Algorithm]:
        def build(config: Any, observation_space: Any, action_space: Any, device: Any) -> ActorCriticLoss:
            return ActorCriticLoss(observation_space.shape[0], int(action_space.n))

        return [rlcore.Algorithm("tiny", build=build)]


def round_trip(make_trainer: Callable[..., rlcore.Trainer], make_hook: Callable[[], Any], name: str, **options: Any) -> tuple[Any, Any, Any]:
    """Train 2 batches with a hook, then build a second trainer in the same run directory with a fresh hook
    and resume it from the checkpoint.

    :param make_trainer: ``rl_make_trainer``.
    :param make_hook: makes the hook.
    :param name: the hook's name in the ``hooks`` of both trainers.
    :return: the first hook, the resumed hook and the resumed trainer (ready to train on to 128 frames).
    """
    first_hook = make_hook()
    first = make_trainer(hooks={name: first_hook}, total_frames=64, **options)
    first.train()
    saved = first.state_dict()["modules"][name]
    second_hook = make_hook()
    second = make_trainer(run_dir=first.run_dir, hooks={name: second_hook}, total_frames=128, **options)
    second.load_from_file()
    assert_state_equal(saved, second_hook.state_dict(), where=name)
    return first_hook, second_hook, second
