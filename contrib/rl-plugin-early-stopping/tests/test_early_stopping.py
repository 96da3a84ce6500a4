"""Tests of the ``early_stopping`` hook, using rl-core's public API only."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import gymnasium
import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import ProbabilisticTensorDictModule, ProbabilisticTensorDictSequential, TensorDictModule
from torch import nn

import rlcore
from rl_plugin_early_stopping import early_stopping
from rl_plugin_early_stopping._hook import METRIC, EarlyStopping

# ----------------------------------------------------------------------------- discovery


def test_discovered_through_its_entry_point() -> None:
    pm = rlcore.get_plugin_manager(only=["early_stopping"])
    info = {i.name: i for i in pm.describe()}["early_stopping"]
    assert info.status == "ok"
    assert info.distribution == "rl-plugin-early-stopping"
    assert info.provides == {"hooks": ["early_stopping"]}
    assert pm.factory("hooks", "early_stopping") is early_stopping


def test_listing_plugins_does_not_import_torch() -> None:
    code = (
        "import sys, rlcore\n"
        "infos = rlcore.get_plugin_manager(only=['early_stopping']).describe()\n"
        "assert any(i.name == 'early_stopping' and i.ok for i in infos), infos\n"
        "print('torch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_rlctl_plugins_list_json_shows_it() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "rlcore", "--plugin", "early_stopping", "plugins", "list", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    listed = {entry["name"]: entry for entry in json.loads(out.stdout)}
    assert listed["early_stopping"]["status"] == "ok"
    assert listed["early_stopping"]["provides"] == {"hooks": ["early_stopping"]}


# ------------------------------------------------------------------------ stopping logic


def test_stops_once_the_windowed_mean_reaches_the_target() -> None:
    hook = early_stopping(target_return=10.0, window=3)
    assert isinstance(hook, EarlyStopping)
    assert not hook.update([20.0, 20.0])  # the window is not full yet
    assert hook.window_return is None
    assert not hook.update([-20.0])  # mean 20/3 < 10
    assert hook.window_return == pytest.approx(20 / 3)
    assert hook.update([30.0])  # window [20, -20, 30]: mean 10
    assert hook.window_return == pytest.approx(10.0)
    assert "reached the target 10" in hook.reason


def test_min_episodes_judges_a_partial_window() -> None:
    hook = early_stopping(target_return=5.0, window=100, min_episodes=2)
    assert not hook.update([9.0])
    assert hook.update([3.0])  # mean 6 over 2 episodes


def test_the_window_keeps_the_most_recent_returns() -> None:
    hook = early_stopping(target_return=100.0, window=2)
    hook.update([1.0, 2.0, 3.0])
    assert list(hook.returns) == [2.0, 3.0]


def test_patience_counts_batches_without_improvement() -> None:
    hook = early_stopping(window=1, patience=2, min_delta=0.5)
    assert not hook.update([1.0])  # best 1.0
    assert not hook.update([1.4])  # not more than 0.5 above the best: 1 bad batch
    assert (hook.best, hook.bad_batches) == (1.0, 1)
    assert not hook.update([2.0])  # an improvement resets the count
    assert (hook.best, hook.bad_batches) == (2.0, 0)
    assert not hook.update([0.0])
    assert not hook.update([])  # a batch without finished episodes is not judged
    assert hook.bad_batches == 1
    assert hook.update([2.5])
    assert "did not improve on 2 for 2 batches" in hook.reason


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "hooks.early_stopping: set target_return, patience or both"),
        ({"target_return": 1.0, "window": 0}, "hooks.early_stopping.window: must be an integer of at least 1, got 0"),
        ({"target_return": 1.0, "window": 2.5}, "hooks.early_stopping.window"),
        ({"patience": 0}, "hooks.early_stopping.patience: must be an integer of at least 1"),
        ({"patience": True}, "hooks.early_stopping.patience"),
        ({"target_return": "high"}, "hooks.early_stopping.target_return: must be a number"),
        ({"patience": 3, "min_delta": -1.0}, "hooks.early_stopping.min_delta: must be at least 0"),
        ({"patience": 3, "window": 5, "min_episodes": 6}, "hooks.early_stopping.min_episodes: must be at most window (5)"),
    ],
)
def test_bad_options_are_one_line_config_errors(options: dict[str, Any], message: str) -> None:
    with pytest.raises(rlcore.ConfigError) as info:
        early_stopping(**options)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


# --------------------------------------------------------------------------------- state


def test_state_dict_round_trip() -> None:
    hook = early_stopping(target_return=100.0, window=4, patience=5)
    hook.update([1.0, 2.0, 3.0, 4.0])
    hook.update([0.0])
    state = hook.state_dict()
    assert state == {"returns": [2.0, 3.0, 4.0, 0.0], "best": 2.5, "bad_batches": 1}

    # checkpoints are read back with torch.load(weights_only=True): plain Python types only
    buffer = io.BytesIO()
    torch.save(state, buffer)
    buffer.seek(0)
    restored = early_stopping(target_return=100.0, window=4, patience=5)
    restored.load_state_dict(torch.load(buffer, weights_only=True))
    assert restored.state_dict() == state
    assert restored.window_return == hook.window_return

    smaller = early_stopping(target_return=100.0, window=2)
    smaller.load_state_dict(state)
    assert list(smaller.returns) == [4.0, 0.0]


# --------------------------------------------------------------------- a real short run


class RecordingLogger(rlcore.Logger):
    """Keeps every logged scalar in memory."""

    def __init__(self) -> None:
        super().__init__(exp_name="test", log_dir=".")
        self.values: dict[str, list[tuple[int, float]]] = {}

    def log_scalar(self, name: str, value: float, step: int) -> None:
        self.values.setdefault(name, []).append((step, value))


class L2Loss(nn.Module):
    """A trivial loss module: keeps the policy's logits small."""

    def __init__(self, net: nn.Module) -> None:
        super().__init__()
        self.net = net

    def forward(self, batch: TensorDict) -> TensorDict:
        return TensorDict({"loss_l2": self.net(batch["observation"]).pow(2).mean()}, batch_size=[])


@pytest.fixture
def cartpole() -> Iterator[tuple[rlcore.Collector, nn.Module]]:
    """A collector on 4 CartPole envs (200 frames a batch) with a tiny categorical policy, and its loss module."""
    env = gymnasium.make_vec(
        "CartPole-v1",
        num_envs=4,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": gymnasium.vector.AutoresetMode.SAME_STEP},
    )
    net = nn.Linear(4, 2)
    policy = ProbabilisticTensorDictSequential(
        TensorDictModule(net, in_keys=["observation"], out_keys=["logits"]),
        ProbabilisticTensorDictModule(
            in_keys=["logits"], out_keys=["action"], distribution_class=torch.distributions.Categorical, return_log_prob=True
        ),
    )
    collector = rlcore.Collector(env, policy, frames_per_batch=200)
    yield collector, L2Loss(net)
    env.close()


def make_trainer(collector: rlcore.Collector, loss: nn.Module, logger: rlcore.Logger | None = None) -> rlcore.Trainer:
    return rlcore.Trainer(
        collector=collector,
        loss_module=loss,
        optimizer=torch.optim.SGD(loss.parameters(), lr=1e-3),
        total_frames=20_000,
        log_interval=1,
        progress_bar=False,
        seed=0,
        loggers=logger,
        plugin_manager=rlcore.PluginManager(discover=False),
    )


def test_a_real_run_stops_early_and_checkpoints_the_hook(
    cartpole: tuple[rlcore.Collector, nn.Module], capsys: pytest.CaptureFixture[str]
) -> None:
    collector, loss = cartpole
    logger = RecordingLogger()
    trainer = make_trainer(collector, loss, logger)
    hook = early_stopping(target_return=5.0, window=5)
    hook.register(trainer, "early_stopping")

    trainer.train()

    # a random CartPole episode lasts about 20 steps: a few batches fill the window and pass 5.0
    assert trainer.collected_frames < trainer.total_frames
    assert trainer.batches <= 5
    assert hook.window_return is not None and hook.window_return >= 5.0
    assert "early_stopping: stopping at" in capsys.readouterr().err
    logged = logger.values[METRIC]
    assert logged[-1] == (trainer.collected_frames, pytest.approx(hook.window_return))
    assert logger.values["train/episode_return"]

    # the hook's state is in the trainer's checkpoint state and comes back on resume
    state = trainer.state_dict()
    assert state["modules"]["early_stopping"] == hook.state_dict()
    resumed_trainer = make_trainer(collector, loss)
    resumed = early_stopping(target_return=5.0, window=5)
    resumed.register(resumed_trainer, "early_stopping")
    resumed_trainer.load_state_dict(state)
    assert resumed.state_dict() == hook.state_dict()


def test_a_run_below_the_target_runs_to_the_end(cartpole: tuple[rlcore.Collector, nn.Module]) -> None:
    collector, loss = cartpole
    trainer = make_trainer(collector, loss)
    trainer.total_frames = 600
    hook = early_stopping(target_return=1e9, window=5)
    hook.register(trainer, "early_stopping")
    trainer.train()
    assert trainer.collected_frames == 600
    assert hook.reason is None
