"""DQN's compiled update (rl-plugin-replay's ``CompiledUpdate``) against the eager one: the same losses, priorities and gradients."""

from __future__ import annotations

import gymnasium
import pytest
import torch
from tensordict import TensorDict

import rl_plugin_dqn
from rl_plugin_replay import PRIORITY_KEY, CompiledUpdate

pytestmark = pytest.mark.slow  # each compiles a program: 5 to 30 s

SPACE = gymnasium.spaces.Box(-10, 10, (4,))
ACTIONS = gymnasium.spaces.Discrete(3)


def replay_sample(n: int = 64, seed: int = 0, prioritized: bool = False) -> TensorDict:
    g = torch.Generator().manual_seed(seed)
    data = {
        "observation": torch.randn(n, 4, generator=g),
        "action": torch.randint(0, 3, (n,), generator=g),
        "next": {
            "observation": torch.randn(n, 4, generator=g),
            "reward": torch.randn(n, 1, generator=g),
            "terminated": torch.rand(n, 1, generator=g) < 0.1,
        },
    }
    if prioritized:
        data["_weight"] = torch.rand(n, generator=g) + 0.5
    return TensorDict(data, batch_size=[n])


def eager(loss, batch):
    out = loss(batch)
    grads = torch.autograd.grad(out["loss_q"], [p for p in loss.parameters() if p.requires_grad])
    return out, grads


@pytest.mark.parametrize(
    ("options", "prioritized"),
    [({"double_dqn": True, "loss": "huber"}, False), ({"double_dqn": False, "loss": "mse", "dueling": True}, True)],
)  # (each case compiles a program of its own)
def test_compiled_losses_priorities_and_gradients_match_eager(options, prioritized):
    torch.manual_seed(0)
    loss = rl_plugin_dqn.build_dqn({"hidden_sizes": [64, 64], **options}, SPACE, ACTIONS)
    compiled = CompiledUpdate(loss)
    for seed in range(3):  # the program compiled once, run on several samples
        a, b = replay_sample(seed=seed, prioritized=prioritized), replay_sample(seed=seed, prioritized=prioritized)
        out, grads = eager(loss, a)
        got = compiled.losses(b)
        assert got is not None and compiled.compiled
        assert set(got.keys()) == set(out.keys())
        for key in out.keys():
            torch.testing.assert_close(got[key], out[key].detach(), rtol=1e-6, atol=1e-6)
        for g_compiled, g_eager in zip(compiled.grads, grads, strict=True):
            torch.testing.assert_close(g_compiled, g_eager, rtol=1e-6, atol=1e-6)
        assert (PRIORITY_KEY in b.keys()) == prioritized
        if prioritized:
            torch.testing.assert_close(b[PRIORITY_KEY], a[PRIORITY_KEY], rtol=1e-6, atol=1e-6)


def untraceable(base):
    class Untraceable(base):
        """A loss whose forward branches in Python on a tensor's value: dynamo cannot trace it as one program."""

        def forward(self, batch):
            out = super().forward(batch)
            if out["loss_q"].item() > 1e9:
                out["loss_q"] = out["loss_q"] * 0
            return out

    return Untraceable


def test_a_loss_that_does_not_compile_warns_once_and_runs_eagerly(tmp_path):
    import rlcore

    config = rlcore.load_config(
        overrides=[
            "algo.name=dqn", "env.id=CartPole-v1", "algo.hidden_sizes=[16]", "algo.init_random_frames=64", "algo.compile=true",
            "collector.frames_per_batch=64", "trainer.optim_steps_per_batch=4", "trainer.total_frames=512",
            "loggers.console=null", "trainer.progress_bar=false",
        ]
    )  # fmt: skip
    trainer = rlcore.build_trainer(config, run_dir=tmp_path / "run")
    trainer.loss_module.__class__ = untraceable(type(trainer.loss_module))  # the same module, with the forward above
    with pytest.warns(UserWarning, match=r"Untraceable's update does not compile .*; it runs eagerly") as caught:
        trainer.train()
    assert len([w for w in caught if "does not compile" in str(w.message)]) == 1
    assert trainer.optim_steps == 4 * 512 // 64  # every batch's steps ran, eagerly
    assert trainer.loss_module._compiled is None
