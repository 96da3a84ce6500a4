"""``OptimizerHook``: an actor's and a critic's optimizers at their own learning rates, each stepping its
parameters only from its own loss components, clipping its own gradients, its state in checkpoints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from hooklib_helpers import ActorCriticLoss, actor_critic_trainer

import rlcore
from rl_plugin_hooks import OptimizerHook
from rlcore_testing import assert_state_equal


class ExpectedUpdates:
    """Before each optimizer step, works out by hand where plain SGD moves each group from its own component;
    after it, checks that the parameters are there."""

    def __init__(self, loss: ActorCriticLoss, lr_actor: float, lr_critic: float) -> None:
        self.loss, self.lr_actor, self.lr_critic = loss, lr_actor, lr_critic
        self.expected: list[torch.Tensor] = []
        self.actor_grad_norms: list[float] = []
        self.actor_loss_reaches_critic = False
        self.steps = 0

    @rlcore.hookimpl
    def rl_post_loss(self, losses: Any) -> None:
        actor, critic = list(self.loss.actor.parameters()), list(self.loss.critic.parameters())
        g_actor = torch.autograd.grad(losses["loss_actor"], actor, retain_graph=True)
        g_critic = torch.autograd.grad(losses["loss_critic"], critic, retain_graph=True)
        through = torch.autograd.grad(losses["loss_actor"], critic, retain_graph=True)
        self.actor_loss_reaches_critic |= any(bool(g.abs().sum() > 0) for g in through)
        self.actor_grad_norms.append(torch.linalg.vector_norm(torch.cat([g.flatten() for g in g_actor])).item())
        self.expected = [p.detach() - self.lr_actor * g for p, g in zip(actor, g_actor)]
        self.expected += [p.detach() - self.lr_critic * g for p, g in zip(critic, g_critic)]

    @rlcore.hookimpl
    def rl_post_optim(self) -> None:
        params = [*self.loss.actor.parameters(), *self.loss.critic.parameters()]
        for param, expected in zip(params, self.expected, strict=True):
            torch.testing.assert_close(param.detach(), expected, rtol=1e-5, atol=1e-7)
        self.steps += 1


def test_two_optimizers_step_each_group_only_from_its_components(tmp_path: Path) -> None:
    loss = ActorCriticLoss()
    spare = torch.optim.Adam(loss.parameters(), lr=1.0)  # the trainer's own: replaced by the hooks, never stepped
    trainer = actor_critic_trainer(tmp_path, loss, optimizer=spare)
    checker = ExpectedUpdates(loss, lr_actor=0.1, lr_critic=0.01)
    trainer.register_plugin(checker, "checker")
    OptimizerHook(torch.optim.SGD(loss.actor.parameters(), lr=0.1), ["loss_actor"]).register(trainer, "actor_optimizer")
    OptimizerHook(torch.optim.SGD(loss.critic.parameters(), lr=0.01), ["loss_critic"]).register(trainer, "critic_optimizer")
    trainer.train()
    assert checker.steps == 8 and checker.actor_loss_reaches_critic  # the critic did not move with the actor's loss
    assert spare.state == {}
    logged = trainer.loggers[0].values  # the MemoryLogger behind its guard
    assert set(logged) >= {"optim/grad_norm_0", "optim/grad_norm_1", "loss/actor", "loss/critic"}
    means = [sum(checker.actor_grad_norms[i : i + 2]) / 2 for i in range(0, 8, 2)]  # averaged over each batch's two steps
    assert [value for _, value in logged["optim/grad_norm_0"]] == pytest.approx(means, rel=1e-4)


def test_a_hook_whose_components_never_come_is_refused_after_the_first_batch(tmp_path: Path) -> None:
    loss = ActorCriticLoss()
    trainer = actor_critic_trainer(tmp_path, loss)
    hook = OptimizerHook(torch.optim.SGD(loss.critic.parameters(), lr=0.01), ["loss_critc"])
    hook.patience = 4  # (100 steps by default)
    hook.register(trainer, "critic_optimizer")
    message = r"loss_components: none of \['loss_critc'\] came in 4 optimisation steps \(the losses are loss_actor, loss_critic\)"
    with pytest.raises(rlcore.ConfigError, match=message):
        trainer.train()
    assert trainer.collected_frames == 64  # two batches of two steps


def test_td3s_delayed_actor_with_an_optimizer_of_its_own(tmp_path: Path) -> None:
    """TorchRL's TD3 recipe: an actor and a critic optimizer; the actor's skips the steps without ``loss_actor``."""
    pytest.importorskip("rl_plugin_td3")
    groups = {"actor": {"params": ["actor"], "loss_components": ["loss_actor"], "lr": 1e-4},
              "critic": {"params": ["critic"], "loss_components": ["loss_qvalue"], "lr": 1e-3}}  # fmt: skip
    config = rlcore.load_config(
        overrides=["algo.name=td3", "algo.hidden_sizes=[16]", "algo.init_random_frames=32", "algo.policy_delay=2",
                   "hooks.replay_buffer.batch_size=16", "trainer.total_frames=64", "trainer.progress_bar=false", "loggers.console=null"],
        hooks={"optimizer_hook": {"groups": groups}},
    )  # fmt: skip
    trainer = rlcore.build_trainer(config, run_dir=tmp_path / "run")
    trainer.train()
    modules = trainer.state_dict()["modules"]
    actor, critic = modules["optimizer_hook.actor"], modules["optimizer_hook.critic"]
    steps = trainer.optim_steps  # one a frame from the 32nd on
    assert steps == 33 and {s["step"].item() for s in critic["optimizer"]["state"].values()} == {steps}
    assert {s["step"].item() for s in actor["optimizer"]["state"].values()} == {steps // 2}  # the actor on every second


def test_each_optimizer_clips_its_own_gradients(tmp_path: Path) -> None:
    loss = ActorCriticLoss()
    trainer = actor_critic_trainer(tmp_path, loss, total_frames=32, clip_norm=1e-3)  # the trainer's threshold...
    actor_before = [p.detach().clone() for p in loss.actor.parameters()]
    critic_before = [p.detach().clone() for p in loss.critic.parameters()]
    OptimizerHook(torch.optim.SGD(loss.actor.parameters(), lr=1.0), ["loss_actor"]).register(trainer, "actor")
    critic = OptimizerHook(torch.optim.SGD(loss.critic.parameters(), lr=1.0), ["loss_critic"], clip_norm=1e6)  # ...or its own
    critic.register(trainer, "critic")
    trainer.train()
    moved = torch.cat([(p.detach() - b).flatten() for p, b in zip(loss.actor.parameters(), actor_before)])
    assert 0 < torch.linalg.vector_norm(moved) <= 2 * 1e-3 * (1 + 1e-4)  # two steps of at most lr * clip_norm
    moved = torch.cat([(p.detach() - b).flatten() for p, b in zip(loss.critic.parameters(), critic_before)])
    assert torch.linalg.vector_norm(moved) > 1e-2


def test_torchrls_call_and_the_optimizers_state_through_a_checkpoint(tmp_path: Path) -> None:
    loss = ActorCriticLoss()
    trainer = actor_critic_trainer(tmp_path, loss, total_frames=64)
    hooks = [
        OptimizerHook(torch.optim.Adam(loss.actor.parameters(), lr=1e-2), ["loss_actor"]),
        OptimizerHook(torch.optim.Adam(loss.critic.parameters(), lr=1e-3), ["loss_critic"]),
    ]
    trainer.register_op("optimizer", hooks[0], index=0)  # TorchRL's third way: the op, as the trainer calls it
    hooks[1].register(trainer, "critic_optimizer")
    trainer.train()
    assert hooks[1].index == 0  # the first one registered by register()
    saved = [hook.state_dict() for hook in hooks]
    assert int(saved[1]["optimizer"]["state"][0]["step"]) == 4 and saved[1]["optimizer"]["param_groups"][0]["lr"] == 1e-3

    again = ActorCriticLoss()
    resumed = actor_critic_trainer(tmp_path, again, total_frames=64)
    fresh = OptimizerHook(torch.optim.Adam(again.critic.parameters(), lr=1e-3), ["loss_critic"])
    fresh.register(resumed, "critic_optimizer")
    resumed.load_from_file()
    assert_state_equal(saved[1], fresh.state_dict(), where="critic_optimizer")
    assert all(torch.equal(a, b) for a, b in zip(loss.state_dict().values(), again.state_dict().values()))

    losses = loss(resumed.collector.collect())
    out = hooks[0](losses, True, 0.5, 3)  # TorchRL's signature: losses, clip_grad_norm, clip_norm, index
    assert list(out) == ["grad_norm_3"] and out["grad_norm_3"] > 0
    assert OptimizerHook(hooks[0].optimizer, ["loss_value"])(losses) == {}  # none of its components: no step (TD3's delayed actor)
    with pytest.raises(rlcore.ConfigError, match="loss_components: cannot be empty"):
        OptimizerHook(hooks[0].optimizer, [])
    resumed.collector.shutdown()
