"""Sampling distributions against the exact probabilities; priorities and importance weights by hand."""

from __future__ import annotations

import pytest
import torch

from rl_plugin_replay import INDEX_KEY, PRIORITY_KEY, WEIGHT_KEY, PrioritizedSampler, make_replay_buffer

DRAWS = 200_000


def frequencies(buffer, size: int) -> torch.Tensor:
    index = torch.cat([buffer.sample(10_000)[INDEX_KEY] for _ in range(DRAWS // 10_000)])
    return torch.bincount(index, minlength=size).double() / len(index)


def test_uniform_sampling_is_uniform_over_the_stored_items(make_transitions):
    torch.manual_seed(0)
    buffer = make_replay_buffer(64)
    buffer.extend(make_transitions(40))
    freq = frequencies(buffer, 64)
    assert freq[40:].sum() == 0  # never an empty row
    # the total variation distance to 1/40 is ~0.006 for 200k draws; 0.015 would be a real bias
    assert 0.5 * (freq[:40] - 1 / 40).abs().sum() < 0.015
    assert WEIGHT_KEY not in buffer.sample(4).keys()


def test_prioritized_sampling_follows_the_exact_probabilities(make_transitions):
    torch.manual_seed(1)
    alpha, beta, eps = 0.7, 0.5, 1e-6
    buffer = make_replay_buffer(16, sampler="prioritized", alpha=alpha, beta=beta, priority_eps=eps)
    buffer.extend(make_transitions(10))
    td_error = torch.tensor([0.0, 1.0, 2.0, 3.0, 4.0, 0.5, 0.25, 8.0, 1.5, 0.1])
    buffer.update_priority(torch.arange(10), td_error)
    p = (td_error.double().abs() + eps) ** alpha
    exact = p / p.sum()
    assert torch.allclose(buffer.sampler.probabilities(10), exact, rtol=1e-12, atol=0)
    freq = frequencies(buffer, 16)
    assert freq[10:].sum() == 0
    assert 0.5 * (freq[:10] - exact).abs().sum() < 0.01
    # chi-square against the exact probabilities: 9 degrees of freedom, the 0.999 quantile is 27.9
    expected = exact * DRAWS
    chi2 = ((freq[:10] * DRAWS - expected) ** 2 / expected).sum()
    assert chi2 < 27.9, chi2
    sample = buffer.sample(256)
    i = sample[INDEX_KEY]
    weights = (p[i] / p.min()).pow(-beta).float()  # (N P(i))^-beta / max_j (N P(j))^-beta
    assert torch.allclose(sample[WEIGHT_KEY], weights)
    assert sample[WEIGHT_KEY].max() <= 1.0


def test_new_items_get_the_largest_priority_seen(make_transitions):
    buffer = make_replay_buffer(8, sampler="prioritized", alpha=1.0, priority_eps=1e-6)
    buffer.extend(make_transitions(2))
    assert buffer.sampler.tree.leaves[:2].tolist() == [1.0, 1.0]  # max_priority starts at 1
    buffer.update_priority(torch.tensor([0, 1]), torch.tensor([3.0, 0.5]))
    buffer.extend(make_transitions(1))
    assert buffer.sampler.tree.leaves[2].item() == pytest.approx(3.0 + 1e-6)


def test_priorities_come_from_what_the_loss_wrote(make_transitions):
    buffer = make_replay_buffer(8, sampler="prioritized", alpha=1.0, priority_eps=0.0 + 1e-9)
    buffer.extend(make_transitions(8))
    sample = buffer.sample(4)
    sample.set(PRIORITY_KEY, torch.full((4,), 5.0))
    buffer.update_tensordict_priority(sample)
    assert torch.allclose(buffer.sampler.tree.leaves[sample[INDEX_KEY]], torch.full((4,), 5.0, dtype=torch.float64))
    uniform = make_replay_buffer(8)
    uniform.extend(make_transitions(8))
    uniform.update_tensordict_priority(sample)  # a no-op, not an error


def test_sampling_is_reproducible_from_torch_seed(make_transitions):
    buffer = make_replay_buffer(32, sampler="prioritized")
    buffer.extend(make_transitions(32))
    torch.manual_seed(5)
    a = buffer.sample(16)[INDEX_KEY]
    torch.manual_seed(5)
    assert torch.equal(a, buffer.sample(16)[INDEX_KEY])


def test_bad_sampler_and_empty_buffer():
    with pytest.raises(ValueError, match="valid choices: uniform, prioritized"):
        make_replay_buffer(8, sampler="rank")
    with pytest.raises(RuntimeError, match="empty"):
        make_replay_buffer(8, batch_size=2).sample()
    with pytest.raises(ValueError, match="alpha and beta"):
        PrioritizedSampler(8, alpha=-1)
