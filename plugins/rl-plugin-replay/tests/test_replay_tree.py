"""The vectorised sum tree against brute force."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from rl_plugin_replay import SumTree


@pytest.mark.parametrize(("capacity", "fanout"), [(1, 2), (5, 4), (100, 8), (1000, 32), (4097, 16)])
def test_find_matches_a_prefix_sum_search(capacity, fanout):
    gen = torch.Generator().manual_seed(capacity)
    values = torch.rand(capacity, generator=gen, dtype=torch.float64)
    values[torch.rand(capacity, generator=gen) < 0.3] = 0.0  # zero-priority leaves are never found
    values[0] = max(float(values[0]), 0.5)
    tree = SumTree(capacity, fanout=fanout)
    tree.set(torch.arange(capacity), values)
    assert tree.total() == pytest.approx(float(values.sum()), rel=1e-12)
    assert tree.min() == float(values.min())
    prefix = torch.rand(5000, generator=gen, dtype=torch.float64) * tree.total()
    expected = torch.searchsorted(torch.cumsum(values, 0), prefix, right=True)
    found = tree.find(prefix)
    assert torch.equal(found, expected.clamp(max=capacity - 1))
    assert (values[found] > 0).all()


def test_prefixes_at_the_total_give_the_last_nonzero_leaf():
    tree = SumTree(10, fanout=4)
    tree.set(torch.tensor([2, 6]), torch.tensor([1.0, 3.0], dtype=torch.float64))
    assert tree.find(torch.tensor([0.0, 0.999, 1.0, 3.99, 4.0, 1e9], dtype=torch.float64)).tolist() == [2, 2, 6, 6, 6, 6]


def test_updates_with_duplicates_keep_every_level_exact():
    gen = torch.Generator().manual_seed(0)
    capacity = 300
    tree = SumTree(capacity, fanout=4)
    reference = torch.zeros(capacity, dtype=torch.float64)
    for _ in range(50):
        index = torch.randint(capacity, (40,), generator=gen)
        value = torch.rand(40, generator=gen, dtype=torch.float64)
        tree.set(index, value)
        for i, v in zip(index.tolist(), value.tolist(), strict=True):  # duplicates: the last one wins
            reference[i] = v
    assert torch.equal(tree.leaves, reference)
    for level in range(1, len(tree.sums)):  # each node is the sum / min of its children
        children = torch.from_numpy(tree.sums[level - 1]).reshape(-1, 4)
        assert torch.allclose(torch.from_numpy(tree.sums[level])[: len(children)], children.sum(1), rtol=0, atol=1e-12)
        mins = torch.from_numpy(tree.mins[level - 1]).reshape(-1, 4)
        assert torch.equal(torch.from_numpy(tree.mins[level])[: len(mins)], mins.amin(1))
    assert tree.min() == float(reference[reference > 0].min()) or tree.min() == 0.0


def test_state_dict_round_trip():
    tree = SumTree(70, fanout=4)
    tree.set(torch.arange(70), torch.linspace(0.1, 7, 70, dtype=torch.float64))
    other = SumTree(70, fanout=4)
    other.load_state_dict(tree.state_dict())
    prefix = torch.rand(100, dtype=torch.float64) * tree.total()
    assert torch.equal(tree.find(prefix), other.find(prefix))
    with pytest.raises(ValueError, match="does not fit"):
        SumTree(71, fanout=4).load_state_dict(tree.state_dict())


def test_a_state_dict_grows_with_the_leaves_set_and_restores_every_level_exactly():
    tree = SumTree(100_000, fanout=8)
    tree.set(torch.arange(70), torch.rand(70, dtype=torch.float64))
    tree.set(torch.tensor([3, 60]), torch.rand(2, dtype=torch.float64))  # priorities updated in place
    state = tree.state_dict()
    assert len(state["sums"]) == len(state["mins"]) == 70
    other = SumTree(100_000, fanout=8)
    other.set(torch.arange(500), 1.0)  # whatever it held before is replaced
    other.load_state_dict(state)
    for mine, theirs in zip(tree.sums + tree.mins, other.sums + other.mins, strict=True):
        assert np.array_equal(mine, theirs)
    assert SumTree(10, fanout=4).state_dict()["sums"].numel() == 0
