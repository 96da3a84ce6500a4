"""The torchsnapshot backend against real torchsnapshot.

The CheckpointBackend contract comes from rl-core's kit (``rlcore_testing.CheckpointBackendConformance``:
round trip of a realistic state, pruning, atomic writes, damaged checkpoints skipped and refused);
the tests below it check what only torchsnapshot has: its layouts, its manifest, its failure modes,
and that nothing in a snapshot is ever unpickled.
"""

from __future__ import annotations

import json
import random
from collections import OrderedDict
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from rl_plugin_torchsnapshot import make_backend
from rl_plugin_torchsnapshot._backend import MANIFEST, Snapshot, StateDict, TorchSnapshotBackend
from rlcore import CheckpointError
from rlcore_testing import CheckpointBackendConformance, assert_state_equal


class TestTorchSnapshotBackend(CheckpointBackendConformance):
    def make_backend(self, directory: Path, keep_last: int) -> TorchSnapshotBackend:
        return make_backend(directory=directory, keep_last=keep_last)


def _mlp() -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(6, 32), torch.nn.Tanh(), torch.nn.Linear(32, 32), torch.nn.Tanh(), torch.nn.Linear(32, 3))


def _train_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer) -> None:
    """One step whose data comes from all three RNGs, so restored RNG states matter."""
    noise = torch.randn(16, 6) + float(np.random.rand()) + random.random()
    optimizer.zero_grad()
    model(noise).pow(2).mean().backward()
    optimizer.step()


def _realistic_state(seed: int = 0) -> tuple[dict[str, Any], torch.nn.Module, torch.optim.Optimizer]:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    model = _mlp()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    for _ in range(3):
        _train_step(model, optimizer)
    state = {
        "collected_frames": 4096,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "rng": {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()},
        "hooks": {"counter": {"calls": 7, "frames": [128, 256]}, "schedule": {"lr": 3e-4, "done": False, "name": None}},
    }
    return state, model, optimizer


def _newest_data_file(checkpoint: Path) -> Path:
    """The largest data file of a snapshot (torchsnapshot batches small tensors into one file)."""
    files = [p for p in checkpoint.rglob("*") if p.is_file() and p.name != MANIFEST]
    return max(files, key=lambda p: p.stat().st_size)


@pytest.fixture
def backend(tmp_path: Path) -> TorchSnapshotBackend:
    return make_backend(directory=tmp_path / "checkpoints", keep_last=3)


# --------------------------------------------------------------------------- round trip


def test_restored_state_continues_training_identically(backend: TorchSnapshotBackend) -> None:
    state, model, optimizer = _realistic_state(seed=1)
    backend.save(state, frames=1)
    _train_step(model, optimizer)  # the original run goes on

    _, loaded = backend.load()
    torch.manual_seed(123)  # a fresh process: other weights, other RNG states
    resumed_model = _mlp()
    resumed_optimizer = torch.optim.Adam(resumed_model.parameters(), lr=1e-3)
    resumed_model.load_state_dict(loaded["model"])
    resumed_optimizer.load_state_dict(loaded["optimizer"])
    random.setstate(loaded["rng"]["python"])
    np.random.set_state(loaded["rng"]["numpy"])
    torch.set_rng_state(loaded["rng"]["torch"])
    _train_step(resumed_model, resumed_optimizer)

    assert_state_equal(model.state_dict(), resumed_model.state_dict())
    assert_state_equal(optimizer.state_dict(), resumed_optimizer.state_dict())


def test_round_trip_of_unusual_values(backend: TorchSnapshotBackend) -> None:
    shared = torch.arange(6.0).reshape(2, 3)
    state = {
        "dtypes": {
            "bfloat16": torch.randn(4).bfloat16(),
            "complex64": torch.randn(3, dtype=torch.complex64),
            "uint32": torch.tensor([1, 2**32 - 1], dtype=torch.uint32),
            "bool": torch.tensor([True, False]),
            "scalar": torch.tensor(2.5, dtype=torch.float64),
            "empty": torch.empty(0, 3),
            "non_contiguous": torch.arange(12).reshape(3, 4).t(),
        },
        "parameter": torch.nn.Parameter(torch.ones(2)),
        "requires_grad": torch.zeros(2, requires_grad=True),
        "shared": [shared, shared],
        "numpy_scalars": {"f32": np.float32(1.5), "i64": np.int64(-3), "bool": np.bool_(True), "str": np.str_("abc")},
        "numpy_arrays": {
            "uint16": np.arange(5, dtype=np.uint16),
            "empty": np.zeros((0, 2)),
            "zero_d": np.array(3.0),
            "fortran": np.asfortranarray(np.arange(6.0).reshape(2, 3)),
            "read_only": np.frombuffer(b"\x01\x02", dtype=np.uint8),
        },
        "python": {1: (None, True, 2**70), (2, "b"): [float("nan"), float("-inf"), -0.0], "bytes": b"\x00\xff"},
        "torch_meta": {"size": torch.Size([2, 3]), "dtype": torch.float16, "device": torch.device("cpu")},
        "ordered": OrderedDict([("b", 1), ("a", 2)]),
    }
    backend.save(state, frames=1)

    _, loaded = backend.load()

    assert_state_equal(state, loaded)
    assert isinstance(loaded["parameter"], torch.nn.Parameter) and loaded["parameter"].requires_grad
    assert loaded["shared"][0] is loaded["shared"][1]
    assert list(loaded["ordered"]) == ["b", "a"]


@pytest.mark.parametrize("layout", ["chunked", "unbatched"])
def test_round_trip_with_other_torchsnapshot_layouts(backend: TorchSnapshotBackend, layout: str) -> None:
    from torchsnapshot import knobs

    state, _, _ = _realistic_state()
    knob = knobs.override_max_chunk_size_bytes(1024) if layout == "chunked" else knobs.override_is_batching_disabled(True)
    with knob:
        path = backend.save(state, frames=1)
    manifest = json.loads((path / MANIFEST).read_text())["manifest"]
    if layout == "chunked":
        assert any(entry["type"] == "ChunkedTensor" for entry in manifest.values())
    else:
        assert not (path / "batched").exists()

    assert_state_equal(state, backend.load()[1])
    _truncate_data(path)
    with pytest.raises(CheckpointError, match="truncated"):
        backend.read(path)


def test_module_state_dict_keeps_its_version_metadata(backend: TorchSnapshotBackend) -> None:
    model = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2))
    backend.save({"model": model.state_dict()}, frames=1)

    _, loaded = backend.load()

    assert loaded["model"]._metadata == model.state_dict()._metadata
    torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2)).load_state_dict(loaded["model"])


# ------------------------------------------------------------------ pruning and atomicity


def test_write_failing_inside_torchsnapshot_leaves_no_checkpoint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from torchsnapshot.storage_plugins.fs import FSStoragePlugin

    backend = TorchSnapshotBackend(tmp_path)
    backend.save({"frames": 1, "w": torch.ones(3)}, frames=1)
    real_write = FSStoragePlugin.write

    async def disk_full(self: FSStoragePlugin, write_io: Any) -> None:
        write_io.buf = bytes(memoryview(write_io.buf)[:10])  # a torn file, then the error
        await real_write(self, write_io)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(FSStoragePlugin, "write", disk_full)
    with pytest.raises(CheckpointError, match=r"ckpt-000000000002: no space left .*ENOSPC.*last good one is ckpt-000000000001"):
        backend.save({"frames": 2, "w": torch.zeros(1000)}, frames=2)
    monkeypatch.undo()

    assert [p.name for p in tmp_path.iterdir()] == ["ckpt-000000000001"]
    assert backend.load()[1]["frames"] == 1


def test_leftover_temporary_snapshot_is_ignored(backend: TorchSnapshotBackend) -> None:
    backend.save({"frames": 1}, frames=1)
    backend.write({"frames": 2}, backend.directory / ".tmp-ckpt-000000000002-999")  # a killed process

    path, state = backend.load()

    assert path.name == "ckpt-000000000001" and state == {"frames": 1}


# ----------------------------------------------------------------------------- corruption


def _delete_manifest(checkpoint: Path) -> None:
    (checkpoint / MANIFEST).unlink()


def _garble_manifest(checkpoint: Path) -> None:
    (checkpoint / MANIFEST).write_text("{ not: [valid")


def _truncate_data(checkpoint: Path) -> None:
    data = _newest_data_file(checkpoint)
    data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])


def _garble_data(checkpoint: Path) -> None:
    data = _newest_data_file(checkpoint)
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2 : len(raw) // 2 + 64] = bytes(range(64))  # same size, different bytes
    data.write_bytes(bytes(raw))


def _delete_data(checkpoint: Path) -> None:
    _newest_data_file(checkpoint).unlink()


def _garble_skeleton(checkpoint: Path) -> None:
    # the skeleton is a uint8 tensor; its manifest entry says where its bytes are
    manifest = json.loads((checkpoint / MANIFEST).read_text())
    entry = manifest["manifest"]["0/rlcore/skeleton"]
    data = checkpoint / entry["location"]
    raw = bytearray(data.read_bytes())
    start = entry["byte_range"][0] if entry.get("byte_range") else 0
    raw[start + 5] ^= 0xFF
    data.write_bytes(bytes(raw))


CORRUPTIONS = [_delete_manifest, _garble_manifest, _truncate_data, _garble_data, _delete_data, _garble_skeleton]


@pytest.mark.parametrize("corrupt", CORRUPTIONS, ids=lambda f: f.__name__.strip("_"))
def test_corrupted_newest_falls_back_to_previous(backend: TorchSnapshotBackend, corrupt: Any) -> None:
    good, _, _ = _realistic_state(seed=2)
    bad, _, _ = _realistic_state(seed=3)
    backend.save(good, frames=100)
    newest = backend.save(bad, frames=200)
    corrupt(newest)

    with pytest.warns(UserWarning, match=newest.name):
        path, loaded = backend.load()

    assert path.name == "ckpt-000000000100"
    assert_state_equal(good, loaded)


@pytest.mark.parametrize("corrupt", CORRUPTIONS, ids=lambda f: f.__name__.strip("_"))
def test_reading_a_corrupted_checkpoint_raises_a_one_line_error(backend: TorchSnapshotBackend, corrupt: Any) -> None:
    state, _, _ = _realistic_state()
    path = backend.save(state, frames=1)
    corrupt(path)

    with pytest.raises(CheckpointError) as info:
        backend.load(path)

    message = str(info.value)
    assert "\n" not in message and str(path) in message


def test_no_readable_checkpoint_raises(backend: TorchSnapshotBackend) -> None:
    first = backend.save({"frames": 1}, frames=1)
    _delete_manifest(first)

    with pytest.warns(UserWarning), pytest.raises(CheckpointError, match="no readable checkpoint"):
        backend.load()


# --------------------------------------------------------------------------------- safety

_UNPICKLED: list[str] = []


def _record_unpickling(tag: str) -> str:
    _UNPICKLED.append(tag)
    return tag


class _Payload:
    """An object whose unpickling would run code (it calls ``_record_unpickling``)."""

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return (_record_unpickling, ("ran",))


@pytest.mark.parametrize(
    "value",
    [_Payload(), torch.randn(3, dtype=torch.complex64)],  # an object entry; a torch_save tensor entry
    ids=["object", "torch_save_tensor"],
)
def test_pickled_entries_are_refused_without_being_unpickled(tmp_path: Path, value: Any) -> None:
    backend = TorchSnapshotBackend(tmp_path)
    good = backend.save({"frames": 1}, frames=1)
    forged = tmp_path / "ckpt-000000000002"
    Snapshot.take(str(forged), {"rlcore": StateDict({"skeleton": torch.zeros(1, dtype=torch.uint8), "t0": value})})
    _UNPICKLED.clear()

    with pytest.raises(CheckpointError, match="refusing"):
        backend.read(forged)
    with pytest.warns(UserWarning, match=forged.name):
        assert backend.load()[0] == good
    assert _UNPICKLED == []


def test_foreign_snapshot_is_refused(tmp_path: Path) -> None:
    foreign = tmp_path / "ckpt-000000000001"
    Snapshot.take(str(foreign), {"app": StateDict({"w": torch.ones(2)})})

    with pytest.raises(CheckpointError, match="not written by rl-plugin-torchsnapshot"):
        TorchSnapshotBackend(tmp_path).read(foreign)
