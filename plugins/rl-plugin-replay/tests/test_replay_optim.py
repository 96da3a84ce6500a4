"""FusedAdamStep: a run with it ends bit-identical to a run with the kernel's own optimizer step."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from torch import nn

import rlcore
from rl_plugin_replay import FusedAdamStep


class Regression(nn.Module):
    """Fits y = sum(x) with a small MLP; optionally steps its optimizer through FusedAdamStep."""

    def __init__(self, fused_step: bool) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(3, 16), nn.ReLU(), nn.Linear(16, 1))
        self.frozen = nn.Parameter(torch.ones(2), requires_grad=False)  # no gradient: skipped, as torch skips it
        self.step = FusedAdamStep() if fused_step else None

    def forward(self, batch):
        x = batch["x"]
        fit = (self.net(x).squeeze(-1) - x.sum(-1)).pow(2).mean()
        return TensorDict({"loss_fit": fit, "loss_small": 1e-3 * self.net[0].weight.pow(2).sum()}, [])

    @rlcore.hookimpl
    def rl_optimizer(self, trainer, losses):
        return self.step(trainer, losses) if self.step is not None else None


def run(fused_step: bool, optim: str, clip_norm: float | None, clip_grad_norm: bool = True, profile: bool = False):
    loss = Regression(fused_step)
    params = list(loss.parameters())
    optimizer = {
        "adam": lambda: torch.optim.Adam(params, lr=1e-2, fused=True),
        "adamw": lambda: torch.optim.AdamW(params, lr=1e-2, weight_decay=0.1, fused=True),
        "sgd": lambda: torch.optim.SGD(params, lr=1e-2),
    }[optim]()
    batches = [TensorDict({"x": torch.randn(32, 3, generator=torch.Generator().manual_seed(i))}, [32]) for i in range(6)]
    trainer = rlcore.Trainer(
        collector=batches,
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


CASES = [("adam", None, True), ("adam", 0.5, True), ("adam", 0.01, False), ("adamw", 1.0, True), ("sgd", 1.0, True)]


@pytest.mark.parametrize(("optim", "clip_norm", "by_norm"), CASES)
def test_runs_are_bit_identical_to_the_kernels_step(optim, clip_norm, by_norm):
    params_a, state_a, _ = run(False, optim, clip_norm, by_norm)
    params_b, state_b, trainer = run(True, optim, clip_norm, by_norm)
    for key in params_a:
        assert torch.equal(params_a[key], params_b[key]), key
    for index, state in state_a["state"].items():
        for name, value in state.items():
            assert torch.equal(value, state_b["state"][index][name]), (index, name)
    assert trainer.optim_steps == 18


def test_the_profile_shows_its_backward_and_step_apart_and_counts_no_second_twice(capsys):
    *_, trainer = run(True, "adam", None, profile=True)
    rows = {(where, what): seconds for where, what, seconds in trainer.profiler.rows()}
    inner = rows[("rl-core", "backward")] + rows[("rl-core", "optimizer step")]
    assert inner > 0 and sum(rows.values()) <= trainer.profiler.wall  # the rl_optimizer row lost what its two rows hold
    assert "the loop itself (untracked) | -" not in capsys.readouterr().err

