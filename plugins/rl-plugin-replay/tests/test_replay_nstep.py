"""n-step transitions against hand-computed cases, and batch boundaries that change nothing."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from rl_plugin_replay import STEPS_KEY, NStepReturns


def episode_batch(rewards, terminated, truncated):
    """One env's steps ``[1, T]``: observation t is ``t``; its next observation ``t + 1``, or ``t + 0.5`` when the episode ends
    (the final observation, distinct from the next episode's first)."""
    t = len(rewards)
    obs = torch.arange(t, dtype=torch.float32).reshape(1, t, 1)
    term = torch.tensor(terminated, dtype=torch.bool).reshape(1, t, 1)
    trunc = torch.tensor(truncated, dtype=torch.bool).reshape(1, t, 1)
    return TensorDict(
        {
            "observation": obs,
            "action": torch.zeros(1, t, dtype=torch.int64),
            "next": {
                "observation": torch.where(term | trunc, obs + 0.5, obs + 1),
                "reward": torch.tensor(rewards, dtype=torch.float32).reshape(1, t, 1),
                "terminated": term,
                "truncated": trunc,
                "done": term | trunc,
            },
        },
        batch_size=[1, t],
    )


def test_three_step_returns_by_hand():
    g = 0.5
    # steps 0..6; step 2 terminates, step 5 is truncated
    batch = episode_batch([1, 2, 4, 8, 16, 32, 64], [0, 0, 1, 0, 0, 0, 0], [0, 0, 0, 0, 0, 1, 0])
    out = NStepReturns(3, g)(batch)
    assert out.shape == (1, 5)  # the last n - 1 = 2 steps are held back
    reward = out["next", "reward"].flatten().tolist()
    steps = out[STEPS_KEY].flatten().tolist()
    next_obs = out["next", "observation"].flatten().tolist()
    terminated = out["next", "terminated"].flatten().tolist()
    # t=0: 1 + g*2 + g^2*4, the episode ends at step 2 (terminated): next obs 2.5, terminated
    # t=1: 2 + g*4 (ends at 2);  t=2: 4 (ends at once)
    # t=3: 8 + g*16 + g^2*32, step 5 truncated: next obs 5.5, not terminated (bootstrapped)
    # t=4: 16 + g*32 (ends at 5)
    assert reward == [1 + g * 2 + g * g * 4, 2 + g * 4, 4, 8 + g * 16 + g * g * 32, 16 + g * 32]
    assert steps == [3, 2, 1, 3, 2]
    assert next_obs == [2.5, 2.5, 2.5, 5.5, 5.5]
    assert terminated == [True, True, True, False, False]
    assert out["next", "done"].flatten().tolist() == [True, True, True, True, True]
    assert out["observation"].flatten().tolist() == [0, 1, 2, 3, 4]


def test_one_step_is_the_identity():
    batch = episode_batch([1, 2], [0, 0], [0, 0])
    assert NStepReturns(1, 0.9)(batch) is batch


def test_split_batches_give_the_transitions_of_one_long_batch():
    gen = torch.Generator().manual_seed(0)
    t = 40

    def random_env():
        terminated = (torch.rand(t, generator=gen) < 0.1).int().tolist()
        truncated = [int(not a and b) for a, b in zip(terminated, (torch.rand(t, generator=gen) < 0.1).int().tolist(), strict=True)]
        return episode_batch(torch.rand(t, generator=gen).tolist(), terminated, truncated)

    two_envs = torch.cat([random_env(), random_env()], 0)
    reference = NStepReturns(4, 0.9)(two_envs)
    nstep = NStepReturns(4, 0.9)
    pieces = [nstep(two_envs[:, a:b]) for a, b in ((0, 7), (7, 8), (8, 25), (25, 40))]
    # state survives a checkpoint mid-way
    resumed = NStepReturns(4, 0.9)
    resumed.load_state_dict(nstep.state_dict())
    joined = torch.cat(pieces, 1)
    assert joined.shape == reference.shape == (2, 37)
    assert (joined == reference).all()
    more = two_envs[:, :5]
    assert (resumed(more) == nstep(more)).all()


def test_bootstrap_target_by_hand():
    from rl_plugin_replay import bootstrap_target

    sample = TensorDict(
        {"next": {"reward": torch.tensor([[1.0], [2.0], [3.0]]), "terminated": torch.tensor([[False], [True], [False]])}},
        batch_size=[3],
    )
    next_value = torch.full((3, 1), 10.0)
    # one-step: r + 0.5 * (1 - terminated) * 10
    assert bootstrap_target(sample, 0.5, next_value).flatten().tolist() == [6.0, 2.0, 8.0]
    # n-step, m = 1, 3, 2 steps to the next observation: r + 0.5**m * (1 - terminated) * 10
    sample.set(STEPS_KEY, torch.tensor([[1], [3], [2]]))
    assert bootstrap_target(sample, 0.5, next_value).flatten().tolist() == [6.0, 2.0, 5.5]
    # a distributional loss's [B, N] values (atoms, quantiles): each transition's terms against its row
    quantiles = torch.tensor([[10.0, 20.0], [10.0, 20.0], [4.0, 8.0]])
    assert bootstrap_target(sample, 0.5, quantiles).tolist() == [[6.0, 11.0], [2.0, 2.0], [4.0, 5.0]]
    assert bootstrap_target(sample, 0.5, next_value.flatten()).tolist() == [6.0, 2.0, 5.5]  # [B] as well
    with pytest.raises(ValueError, match=r"^bootstrap_target: next_value of shape \[4, 1\] has not one row per transition of the sample \(3\)$"):
        bootstrap_target(sample, 0.5, torch.ones(4, 1))


def test_held_back_steps_end_where_the_next_batch_starts_afresh():
    g = 0.5
    nstep = NStepReturns(3, g)
    nstep(episode_batch([1, 2, 4, 8], [0, 0, 0, 0], [0, 0, 0, 0]))  # steps 2 and 3 held back; 3's next observation is 4
    state = nstep.state_dict()
    fresh = episode_batch([16, 32, 64], [0, 0, 0], [0, 0, 0])  # a resumed run's env started over: observation 0, not 4
    out = NStepReturns(3, g)
    out.load_state_dict(state)
    cut = out(fresh)
    # the held-back steps end at step 3, as at a truncation: bootstrapped from its next observation, no reward of the new episode
    assert cut["next", "reward"].flatten().tolist()[:2] == [4 + g * 8, 8]
    assert cut[STEPS_KEY].flatten().tolist()[:2] == [2, 1]
    assert cut["next", "observation"].flatten().tolist()[:2] == [4.0, 4.0]
    assert cut["next", "terminated"].flatten().tolist()[:2] == [False, False]
    going_on = episode_batch([1, 2, 4, 8, 16, 32, 64], [0] * 7, [0] * 7)  # the same steps when the episode goes on
    nstep_on = NStepReturns(3, g)
    nstep_on(going_on[:, :4])
    assert nstep_on(going_on[:, 4:])["next", "reward"].flatten().tolist()[:2] == [4 + g * 8 + g * g * 16, 8 + g * 16 + g * g * 32]
