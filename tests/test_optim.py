"""The kernel's optimizer step (its ``rl_optimizer``): back-propagate, clip, step, as a hand-written loop does."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from torch import nn

import rlcore


class Regression(nn.Module):
    """Fits y = sum(x) with a small MLP, two loss terms, and a parameter without a gradient."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 1))
        self.frozen = nn.Parameter(torch.ones(2), requires_grad=False)  # no gradient: skipped, as torch skips it

    def forward(self, batch):
        x = batch["x"]
        fit = (self.net(x).squeeze(-1) - x.sum(-1)).pow(2).mean()
        return TensorDict({"loss_fit": fit, "loss_small": 1e-3 * self.net[0].weight.pow(2).sum()}, [])


OPTIMIZERS = {
    "adam": lambda params: torch.optim.Adam(params, lr=1e-2, fused=True),
    "adamw": lambda params: torch.optim.AdamW(params, lr=1e-2, weight_decay=0.1, fused=True),
    "sgd": lambda params: torch.optim.SGD(params, lr=1e-2),
}
BATCHES = [TensorDict({"x": torch.randn(32, 3, generator=torch.Generator().manual_seed(i))}, [32]) for i in range(6)]


def run(optim: str, clip_norm: float | None, clip_grad_norm: bool = True, profile: bool = False):
    loss = Regression()
    optimizer = OPTIMIZERS[optim](list(loss.parameters()))
    trainer = rlcore.Trainer(
        collector=BATCHES,
        loss_module=loss,
        optimizer=optimizer,
        total_frames=6 * 32,
        optim_steps_per_batch=3,
        clip_norm=clip_norm,
        clip_grad_norm=clip_grad_norm,
        progress_bar=False,
        plugin_manager=rlcore.PluginManager(discover=False),
        profile=profile,
    )
    trainer.train()
    return loss.state_dict(), optimizer.state_dict(), trainer


def by_hand(optim: str, clip_norm: float | None, clip_grad_norm: bool):
    """The textbook loop: the sum of the loss terms, backward, clipping, step."""
    loss = Regression()
    params = list(loss.parameters())
    optimizer = OPTIMIZERS[optim](params)
    for batch in BATCHES:
        for _ in range(3):
            optimizer.zero_grad()
            out = loss(batch)
            (out["loss_fit"] + out["loss_small"]).backward()
            if clip_norm is not None and clip_grad_norm:
                rlcore.clip_grad_norm(params, clip_norm)
            elif clip_norm is not None:
                nn.utils.clip_grad_value_(params, clip_norm)
            optimizer.step()
    return loss.state_dict(), optimizer.state_dict()


CASES = [("adam", None, True), ("adam", 0.5, True), ("adam", 0.01, False), ("adamw", 1.0, True), ("sgd", 1.0, True)]


@pytest.mark.parametrize(("optim", "clip_norm", "by_norm"), CASES)
def test_the_trainers_step_is_the_textbook_step_bit_for_bit(optim, clip_norm, by_norm):
    params_a, state_a = by_hand(optim, clip_norm, by_norm)
    params_b, state_b, trainer = run(optim, clip_norm, by_norm)
    for key in params_a:
        assert torch.equal(params_a[key], params_b[key]), key
    for index, state in state_a["state"].items():
        for name, value in state.items():
            assert torch.equal(value, state_b["state"][index][name]), (index, name)
    assert trainer.optim_steps == 18


def test_the_profile_shows_its_backward_and_step_apart_and_counts_no_second_twice(capsys):
    *_, trainer = run("adam", None, profile=True)
    rows = {(where, what): seconds for where, what, seconds in trainer.profiler.rows()}
    inner = rows[("rl-core", "backward")] + rows[("rl-core", "optimizer step")]
    assert inner > 0 and sum(rows.values()) <= trainer.profiler.wall  # the rl_optimizer row lost what its two rows hold
    assert "the loop itself (untracked) | -" not in capsys.readouterr().err


@pytest.mark.parametrize("name", ["adam", "adamw"])
def test_the_optim_sections_adam_steps_as_torchs_own_bit_for_bit(name):
    """make_optimizer's Adam steps through torch's functional Adam, past Optimizer.step's per-call work: the same update."""
    options = {"name": name, "lr": 1e-2, "eps": 1e-8, "weight_decay": 0.1}
    ours, theirs = Regression(), Regression()
    fast = rlcore.make_optimizer(options, ours.parameters())
    plain = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[name](theirs.parameters(), lr=1e-2, eps=1e-8, weight_decay=0.1, fused=True)
    for step, batch in enumerate(BATCHES * 2):
        for loss, optimizer in ((ours, fast), (theirs, plain)):
            optimizer.zero_grad()
            out = loss(batch)
            (out["loss_fit"] + out["loss_small"]).backward()
            for group in optimizer.param_groups:
                group["lr"] = 1e-2 / (1 + step)  # a schedule moves it
            optimizer.step()
    for key, value in theirs.state_dict().items():
        assert torch.equal(ours.state_dict()[key], value), key
    assert str(fast.state_dict()) == str(plain.state_dict())
    scheduler = torch.optim.lr_scheduler.StepLR(fast, step_size=1, gamma=0.5)  # wraps the step: still steps
    fast.step()
    scheduler.step()
    assert fast.param_groups[0]["lr"] == pytest.approx(0.5 * 1e-2 / 12)


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"name": "adam", "betas": [0.8, 0.9], "amsgrad": True}, (torch.optim.Adam, {"betas": (0.8, 0.9), "amsgrad": True, "eps": 1e-8})),
        ({"name": "sgd", "momentum": 0.9, "nesterov": True}, (torch.optim.SGD, {"momentum": 0.9, "nesterov": True})),
        ({"name": "torch.optim.NAdam", "momentum_decay": 0.002}, (torch.optim.NAdam, {"momentum_decay": 0.002})),
        ({"name": "torch.optim:RMSprop", "alpha": 0.9, "centered": True}, (torch.optim.RMSprop, {"alpha": 0.9, "centered": True})),
    ],
)
def test_the_optimizers_own_options_pass_through(tmp_path, options, expected):
    """``optim``'s other keys are the optimizer's keyword arguments, checked against its signature, and reach it."""
    config = rlcore.load_config(
        overrides=["env.id=CartPole-v1", "trainer.total_frames=64", "collector.frames_per_batch=64", "trainer.progress_bar=false", "loggers={}"],
        optim={**options, "lr": 1e-3, "eps": 1e-8},
    )
    trainer = rlcore.build_trainer(config, tmp_path / "run")
    cls, values = expected
    assert type(trainer.optimizer) is cls
    group = trainer.optimizer.param_groups[0]
    assert {key: tuple(group[key]) if key == "betas" else group[key] for key in values} == values
    trainer.train()  # and it steps: an AMSGrad or Nesterov step, through torch's own
    assert trainer.collected_frames == 64


def test_device_auto_is_cuda_where_there_is_one():
    config = rlcore.load_config(overrides=["trainer.device=auto"])
    assert config["trainer"]["device"] == ("cuda" if torch.cuda.is_available() else "cpu")
