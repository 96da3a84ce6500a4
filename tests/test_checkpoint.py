"""The builtin torch checkpoint backend: atomic writes, the last K kept, numpy state, corrupted and unsafe files refused."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import rlcore
import torch
from rlcore.builtins.torch_checkpoint import TorchCheckpointBackend


def state(value: float) -> dict:
    return {"weights": torch.full((3,), value), "counters": {"collected_frames": int(value)}, "rng": (1, 2, 3)}


def test_keeps_the_last_k(tmp_path):
    backend = TorchCheckpointBackend(tmp_path, keep_last=2)
    for frames in (10, 20, 30):
        backend.save(state(frames), frames)
    assert [p.name for p in backend.checkpoints()] == ["ckpt-000000000020.pt", "ckpt-000000000030.pt"]
    path, loaded = backend.load()
    assert path.name == "ckpt-000000000030.pt" and torch.equal(loaded["weights"], torch.full((3,), 30.0))


def test_failed_write_leaves_no_checkpoint_under_a_real_name(tmp_path):
    backend = TorchCheckpointBackend(tmp_path)
    backend.save(state(1), 1)
    with pytest.raises(TypeError, match="cannot pickle"):
        backend.save({"bad": threading.Lock()}, 2)  # a lock cannot be saved
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt-000000000001.pt"]
    assert backend.load()[0].name == "ckpt-000000000001.pt"


@pytest.mark.parametrize("damage", ["truncate", "garbage"])
def test_corrupted_newest_falls_back_with_a_warning(tmp_path, damage):
    backend = TorchCheckpointBackend(tmp_path)
    backend.save(state(1), 1)
    newest = backend.save(state(2), 2)
    data = newest.read_bytes()
    newest.write_bytes(data[: len(data) // 2] if damage == "truncate" else b"\x00garbage" * 100)
    with pytest.warns(UserWarning, match=f"skipping unreadable checkpoint {newest}"):
        path, loaded = backend.load()
    assert path.name == "ckpt-000000000001.pt" and loaded["counters"]["collected_frames"] == 1
    with pytest.raises(rlcore.CheckpointError, match="truncated or corrupted"):
        backend.load(newest)


class Exploit:
    def __init__(self, target: str) -> None:
        self.target = target

    def __reduce__(self):
        return (open, (self.target, "w"))


def test_malicious_pickle_is_refused_and_never_runs(tmp_path):
    backend = TorchCheckpointBackend(tmp_path)
    backend.save(state(1), 1)
    target = tmp_path / "pwned.txt"
    evil = tmp_path / "ckpt-000000000002.pt"
    torch.save({"payload": Exploit(str(target))}, evil)
    assert not target.exists()  # saving did not run it either
    with pytest.raises(rlcore.CheckpointError, match="refused by the safe loader"):
        backend.load(evil)
    with pytest.warns(UserWarning, match="skipping unreadable checkpoint"):
        path, _ = backend.load()
    assert path.name == "ckpt-000000000001.pt"
    assert not target.exists()


def test_numeric_numpy_values_round_trip(tmp_path):
    backend = TorchCheckpointBackend(tmp_path)
    np_state = np.random.default_rng(0).integers(0, 9, 4)
    saved = {
        "mean": np.arange(3, dtype=np.float32),
        "count": np.int64(7),
        "flags": np.array([True, False]),
        "legacy_rng": np.random.RandomState(1).get_state(),
        "rng": np.random.default_rng(2).bit_generator.state,
        "draws": np_state,
    }
    backend.save(saved, 1)
    _, loaded = backend.load()
    assert loaded["mean"].dtype == np.float32 and np.array_equal(loaded["mean"], saved["mean"])
    assert loaded["count"] == 7 and type(loaded["count"]) is np.int64
    assert np.array_equal(loaded["flags"], saved["flags"]) and np.array_equal(loaded["draws"], np_state)
    restored = np.random.RandomState()
    restored.set_state(loaded["legacy_rng"])
    assert restored.randint(1 << 30) == np.random.RandomState(1).randint(1 << 30)
    assert loaded["rng"] == saved["rng"]


class RunningStat:
    """A hook's own object: picklable, but not something the safe loader rebuilds."""


@pytest.mark.parametrize(
    ("value", "named"),
    [
        (np.array(["text"]), "StrDType"),
        (np.array([1, "x"], dtype=object), "ObjectDType"),
        (RunningStat(), "RunningStat"),
    ],
)
def test_a_state_the_safe_loader_would_refuse_fails_at_save(tmp_path, value, named):
    backend = TorchCheckpointBackend(tmp_path)
    backend.save(state(1), 1)
    with pytest.raises(TypeError, match=rf"cannot checkpoint a value of type \S*{named} at hooks\.mine\.value"):
        backend.save({"hooks": {"mine": {"value": value}}}, 2)
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt-000000000001.pt"]  # the last good one is kept
