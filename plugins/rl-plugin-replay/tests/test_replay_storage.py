"""The storage is preallocated once, written in a circle, memory-mappable, and checkpointable."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

from rl_plugin_replay import INDEX_KEY, ReplayBuffer, TensorStorage, make_replay_buffer


def test_storage_is_allocated_once_and_bounded_by_its_capacity(make_transitions):
    storage = TensorStorage(10)
    assert not storage.allocated and storage.nbytes == 0
    storage.write(make_transitions(4))
    obs = storage.column("observation")
    assert obs.shape == (10, 3)
    pointers = {key: storage.column(key).data_ptr() for key in storage.keys}
    # one item: observation and next observation 3 floats each, reward 1 float, action int64, three bools
    assert storage.nbytes == 10 * (3 * 4 + 3 * 4 + 4 + 8 + 3)
    for start in range(4, 40, 4):
        storage.write(make_transitions(4, start=start))
    assert len(storage) == 10
    assert {key: storage.column(key).data_ptr() for key in storage.keys} == pointers  # never reallocated
    # 40 items written: the last 10 (30..39) are kept, the oldest overwritten first
    assert sorted(storage.column("observation")[:, 0].tolist()) == list(range(30, 40))
    assert storage.cursor == 0


def test_a_batch_larger_than_the_capacity_keeps_its_last_items(make_transitions):
    storage = TensorStorage(5)
    index = storage.write(make_transitions(12))
    assert index.tolist() == [0, 1, 2, 3, 4]
    assert storage.column("observation")[:, 0].tolist() == [7, 8, 9, 10, 11]


@pytest.mark.parametrize("sampler", ["uniform", "prioritized"])
def test_an_empty_buffer_resized_keeps_and_samples_that_many(sampler, make_transitions):
    buffer = make_replay_buffer(10, sampler=sampler)
    buffer.resize(4)
    buffer.extend(make_transitions(6))
    assert buffer.capacity == len(buffer) == 4 and buffer.storage.column("observation").shape[0] == 4
    assert set(buffer.sample(64)[INDEX_KEY].tolist()) == {0, 1, 2, 3}  # every row, none beyond the new capacity
    with pytest.raises(ValueError, match="only an empty buffer can be resized"):
        buffer.resize(8)


def test_samples_are_the_stored_items(make_transitions):
    buffer = make_replay_buffer(100, batch_size=32)
    buffer.extend(make_transitions(50))
    sample = buffer.sample()
    assert sample.batch_size == (32,)
    index = sample[INDEX_KEY]
    assert torch.equal(sample["observation"][:, 0], index.float())
    assert torch.equal(sample["next", "observation"][:, 0], index.float() + 1)
    assert sample["action"].dtype == torch.int64 and sample["next", "done"].dtype == torch.bool


def test_trajectories_are_items_too(make_transitions):
    buffer = make_replay_buffer(4)
    buffer.extend(make_transitions(5, envs=3))  # three trajectories of 5 steps
    assert len(buffer) == 3
    assert buffer.sample(2).batch_size == (2, 5)


def test_keys_and_shapes_are_fixed_by_the_first_write(make_transitions):
    storage = TensorStorage(10)
    storage.write(make_transitions(2))
    with pytest.raises(KeyError, match="missing: action"):
        storage.write(make_transitions(2).exclude("action"))
    with pytest.raises(KeyError, match="shape"):
        storage.write(make_transitions(2, envs=2))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_memmap_storage_lives_in_mapped_files_whose_names_a_killed_run_leaves_not(tmp_path, make_transitions):
    buffer = make_replay_buffer(8, memmap=True, scratch_dir=tmp_path)
    buffer.extend(make_transitions(6))
    mapped = [line for line in Path("/proc/self/maps").read_text().splitlines() if f"{tmp_path}/rl-replay-" in line]
    assert any("/observation.npy (deleted)" in line for line in mapped) and any("/next.reward.npy (deleted)" in line for line in mapped)
    assert not list(tmp_path.iterdir())  # (nothing for a SIGKILL to leave behind)
    assert buffer.sample(3)["observation"].shape == (3, 3)
    buffer.extend(make_transitions(6))
    assert len(buffer) == 8
    buffer.storage.close()


def test_state_dict_round_trip_holds_the_items_and_the_priorities(make_transitions):
    buffer = make_replay_buffer(10, sampler="prioritized")
    buffer.extend(make_transitions(13))
    buffer.update_priority(torch.arange(10), torch.arange(10.0))
    state = buffer.state_dict()
    other = make_replay_buffer(10, sampler="prioritized")
    other.load_state_dict(state)
    assert len(other) == 10 and other.storage.cursor == buffer.storage.cursor
    for key in buffer.storage.keys:
        assert torch.equal(other.storage.column(key), buffer.storage.column(key))
    torch.manual_seed(0)
    a = buffer.sample(20)
    torch.manual_seed(0)
    b = other.sample(20)
    assert (a == b).all()
    empty = ReplayBuffer(TensorStorage(10))
    empty.load_state_dict(ReplayBuffer(TensorStorage(10)).state_dict())
    assert len(empty) == 0


def test_a_full_buffer_restored_into_a_larger_capacity_keeps_its_items_oldest_first(make_transitions):
    small = TensorStorage(10)
    small.write(make_transitions(7))
    small.write(make_transitions(6, start=7))  # items 3..12, the cursor at 3: 10 11 12 3 4 5 6 7 8 9
    same = TensorStorage(10)
    same.load_state_dict(small.state_dict())  # the same capacity: row for row, as it was (bit-exact resume)
    assert same.cursor == 3 and torch.equal(same.column("observation"), small.column("observation"))
    large = TensorStorage(16)
    large.load_state_dict(small.state_dict())
    assert len(large) == 10 and large.cursor == 10
    assert large.column("observation")[:10, 0].tolist() == list(range(3, 13))
    large.write(make_transitions(4, start=13))  # into the free rows, overwriting nothing
    assert large.column("observation")[:14, 0].tolist() == list(range(3, 17)) and len(large) == 14


def test_a_storage_larger_than_the_machine_is_refused_before_allocating(tmp_path, make_transitions):
    storage = TensorStorage(10**13)  # ten trillion transitions of a few dozen bytes: hundreds of terabytes
    with pytest.raises(MemoryError, match=r"^10,000,000,000,000 items of \d+ bytes would take [\d.]+ TB, more than the .* memory of this machine$"):
        storage.write(make_transitions(4))
    assert not storage.allocated
    on_disk = TensorStorage(10**13, memmap=True, scratch_dir=tmp_path)
    with pytest.raises(MemoryError, match=r"would take [\d.]+ TB, more than the .* free space in "):
        on_disk.write(make_transitions(4))
    assert list(tmp_path.iterdir()) == []  # no file made


@pytest.mark.slow
def test_a_run_with_too_large_a_buffer_stops_with_one_line(tmp_path):
    from rlcore_testing import run_rlctl

    for extra in ([], ["--set", "hooks.replay_buffer.sampler=prioritized"]):
        out = tmp_path / f"run{len(extra)}"
        done = run_rlctl(
            "train", "--algo", "dqn", "--env", "CartPole-v1", "--frames", "2000", "--out", str(out),
            "--set", "hooks.replay_buffer.capacity=1e13", *extra,
        )  # fmt: skip
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2, done.stderr
        assert lines[-1].startswith("rlctl: error: hooks.replay_buffer.capacity: ") and "more than the" in lines[-1]
        assert "Traceback" not in done.stderr
