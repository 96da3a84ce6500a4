"""The builtin torch checkpoint backend: the kit's conformance suite, then numpy state, unsafe files and pickles refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import rlcore
from rlcore.builtins.torch_checkpoint import TorchCheckpointBackend, numpy_globals
from rlcore_testing import CheckpointBackendConformance


class TestTorchCheckpointBackend(CheckpointBackendConformance):
    def make_backend(self, directory: Path, keep_last: int) -> TorchCheckpointBackend:
        return TorchCheckpointBackend(directory, keep_last=keep_last)

    def read_back(self, path: Path) -> dict[str, Any]:
        """A plain ``torch.load`` of the file, trusting only what the backend declares safe."""
        with torch.serialization.safe_globals(numpy_globals()):
            return torch.load(path, weights_only=True)


def state(value: float) -> dict:
    return {"weights": torch.full((3,), value), "counters": {"collected_frames": int(value)}, "rng": (1, 2, 3)}


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


def test_checkpoint_names_grow_past_twelve_digits_and_stay_in_order(tmp_path):
    backend = TorchCheckpointBackend(tmp_path, keep_last=2)
    for frames in (999_999_999_999, 10**12, 10**12 + 4096):
        backend.save({"frames": frames}, frames)
    assert [p.name for p in backend.checkpoints()] == ["ckpt-1000000000000.pt", "ckpt-1000000004096.pt"]  # the oldest pruned
    assert backend.load()[1] == {"frames": 10**12 + 4096}
