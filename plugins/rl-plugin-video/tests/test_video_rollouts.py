"""The ``tensordict_recorder`` hook and ``save_rollout`` / ``load_rollouts``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from tensordict import TensorDict
from video_helpers import build_trainer

import rlcore
from rl_plugin_video import load_rollouts, save_rollout


class KeepBatches:
    """Keeps a copy of every collected batch, as the recorder sees it (before other processing)."""

    def __init__(self) -> None:
        self.batches: list[tuple[int, TensorDict]] = []

    @rlcore.hookimpl(tryfirst=True)
    def rl_batch_process(self, trainer: Any, batch: TensorDict) -> None:
        self.batches.append((trainer.collected_frames, batch.clone()))


def _rollout() -> TensorDict:
    return TensorDict(
        {
            "observation": torch.randn(3, 5, 4),
            "action": torch.randint(0, 2, (3, 5)),
            "next": {"reward": torch.randn(3, 5, 1), "done": torch.rand(3, 5, 1) > 0.5},
        },
        batch_size=[3, 5],
    )


def test_saved_rollout_loads_back_equal(tmp_path: Path) -> None:
    rollout = _rollout()
    path = save_rollout(rollout, tmp_path / "rollouts" / "one")
    (loaded,) = load_rollouts(path)
    assert loaded.batch_size == rollout.batch_size
    assert set(loaded.keys(True, True)) == set(rollout.keys(True, True))
    assert (loaded == rollout).all()
    assert loaded["next", "done"].dtype == torch.bool
    # saving again under the same name replaces the folder
    other = _rollout()
    save_rollout(other, path)
    assert (load_rollouts(path)[0] == other).all()
    assert [p.name for p in (tmp_path / "rollouts").iterdir()] == ["one"]


def test_load_rollouts_of_a_folder_in_order(tmp_path: Path) -> None:
    rollouts = [_rollout() for _ in range(3)]
    for index, rollout in enumerate(rollouts):
        save_rollout(rollout, tmp_path / f"batch_{index:09d}")
    loaded = load_rollouts(tmp_path)
    assert len(loaded) == 3 and all((a == b).all() for a, b in zip(loaded, rollouts))
    with pytest.raises(FileNotFoundError):
        load_rollouts(tmp_path / "missing")


def test_hook_saves_every_interval_frames_and_only_the_keys(run_dir: Path) -> None:
    keep = KeepBatches()
    options = {"interval": 64, "keys": ["observation", "action", "next.reward"]}
    trainer, _ = build_trainer(run_dir, {"tensordict_recorder": options}, frames_per_batch=32, total_frames=160, plugins=(keep,))
    trainer.train()
    folders = sorted(p.name for p in (run_dir / "rollouts").iterdir())
    assert folders == ["batch_000000032", "batch_000000096", "batch_000000160"]
    loaded = load_rollouts(run_dir / "rollouts")
    expected = [batch for frames, batch in keep.batches if frames in (32, 96, 160)]
    for got, batch in zip(loaded, expected):
        assert got.batch_size == torch.Size([2, 16])
        assert set(got.keys(True, True)) == {"observation", "action", ("next", "reward")}
        assert (got == batch.select("observation", "action", ("next", "reward"))).all()


def test_hook_saves_the_first_batches(run_dir: Path) -> None:
    trainer, _ = build_trainer(run_dir, {"tensordict_recorder": {"max_batches": 2}}, frames_per_batch=32, total_frames=128)
    trainer.train()
    assert sorted(p.name for p in (run_dir / "rollouts").iterdir()) == ["batch_000000032", "batch_000000064"]
    assert trainer.state_dict()["modules"]["tensordict_recorder"] == {"saved": 2, "last_saved": 64}
    first = load_rollouts(run_dir / "rollouts")[0]
    assert {"observation", "action", "action_log_prob", "logits"} <= set(first.keys())
    assert first["next", "terminated"].shape == (2, 16, 1)


def test_unknown_key_is_a_config_error(run_dir: Path) -> None:
    trainer, _ = build_trainer(run_dir, {"tensordict_recorder": {"keys": ["pixels"]}}, total_frames=32)
    with pytest.raises(rlcore.ConfigError, match="pixels"):
        trainer.train()
