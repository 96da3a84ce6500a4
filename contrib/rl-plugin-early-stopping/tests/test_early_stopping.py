"""Tests of the ``early_stopping`` hook, with rl-core's public API and its kit for plugin authors (``rlcore_testing``)."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest
import torch

import rlcore
from rl_plugin_early_stopping import early_stopping
from rl_plugin_early_stopping._hook import METRIC, EarlyStopping
from rlcore_testing import HookRecorder, MemoryLogger, PluginConformance

# ----------------------------------------------------------------------------- discovery


class TestPlugin(PluginConformance):
    """Found through its entry point, listed by ``rlctl plugins list`` without importing torch, blockable."""

    plugin = "early_stopping"
    distribution = "rl-plugin-early-stopping"
    provides = {"hooks": ["early_stopping"]}


def test_the_factory_is_the_registered_one() -> None:
    assert rlcore.get_plugin_manager(only=["early_stopping"]).factory("hooks", "early_stopping") is early_stopping


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
        ({"target_return": 1.0, "window": 0}, "hooks.early_stopping.window: expected an integer >= 1, got 0"),
        ({"target_return": 1.0, "window": 2.5}, "hooks.early_stopping.window"),
        ({"patience": 0}, "hooks.early_stopping.patience: expected an integer >= 1"),
        ({"patience": True}, "hooks.early_stopping.patience"),
        ({"target_return": "high"}, "hooks.early_stopping.target_return: expected a number"),
        ({"patience": 3, "min_delta": -1.0}, "hooks.early_stopping.min_delta: expected a number >= 0"),
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


def test_a_real_run_stops_early_and_checkpoints_the_hook(
    rl_make_trainer: Callable[..., rlcore.Trainer], capsys: pytest.CaptureFixture[str]
) -> None:
    hook = early_stopping(target_return=5.0, window=5)
    recorder, logger = HookRecorder(), MemoryLogger()
    trainer = rl_make_trainer(
        num_envs=4, frames_per_batch=200, total_frames=20_000, plugins=[recorder], hooks={"early_stopping": hook}, loggers=[logger]
    )

    trainer.train()

    # a random CartPole episode lasts about 20 steps: a few batches fill the window and pass 5.0
    assert trainer.collected_frames < trainer.total_frames
    assert trainer.batches <= 5
    assert hook.window_return is not None and hook.window_return >= 5.0
    assert trainer.stop_reason is not None and trainer.stop_reason.startswith("early_stopping: mean return of the last")
    # it judged the window once per batch, at post_steps, after the batch's last optimizer step
    names = recorder.names(plugin="hooks.early_stopping")  # its ops, named after the hook that registered them
    assert names.count("rl_post_steps") == trainer.batches
    ends = [i for i, name in enumerate(recorder.names()) if name == "rl_post_steps"]
    assert all(recorder.calls[i - 1].name == "rl_post_optim_log" for i in ends)
    assert logger.values[METRIC][-1] == (trainer.collected_frames, pytest.approx(hook.window_return))
    assert logger.values["train/episode_return"]

    # the hook's state is in the run's last checkpoint, and comes back in a resumed run
    _, state = trainer.checkpoint.load()
    assert state["modules"]["early_stopping"] == hook.state_dict()
    resumed = early_stopping(target_return=5.0, window=5)
    resumed_trainer = rl_make_trainer(run_dir=trainer.run_dir, num_envs=4, frames_per_batch=200, hooks={"early_stopping": resumed})
    resumed_trainer.load_from_file()
    assert resumed.state_dict() == hook.state_dict()


def test_a_run_below_the_target_runs_to_the_end(rl_make_trainer: Callable[..., rlcore.Trainer]) -> None:
    hook = early_stopping(target_return=1e9, window=5)
    trainer = rl_make_trainer(num_envs=4, frames_per_batch=200, total_frames=600, hooks={"early_stopping": hook})
    trainer.train()
    assert trainer.collected_frames == 600
    assert hook.reason is None
