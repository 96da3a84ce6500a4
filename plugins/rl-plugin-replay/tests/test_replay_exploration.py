"""Exploration wrappers: random warm-up, epsilon-greedy, Gaussian and OU noise; only under RANDOM."""

from __future__ import annotations

import gymnasium
import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import InteractionType, TensorDictModule, TensorDictModuleBase, set_interaction_type

import rlcore
from rl_plugin_replay import EGreedy, GaussianNoise, LinearSchedule, OrnsteinUhlenbeck, RandomWarmup


class Constant(TensorDictModuleBase):
    """Always the same action: 2 (discrete) or 0.5 (continuous)."""

    in_keys = ["observation"]
    out_keys = ["action"]

    def __init__(self, discrete: bool) -> None:
        super().__init__()
        self.discrete = discrete

    def forward(self, td):
        n = td.batch_size[0]
        td.set("action", torch.full((n,), 2, dtype=torch.int64) if self.discrete else torch.full((n, 2), 0.5))
        return td


def act(policy, n: int = 1000, mode=InteractionType.RANDOM) -> torch.Tensor:
    with set_interaction_type(mode):
        return policy(TensorDict({"observation": torch.zeros(n, 3)}, batch_size=[n]))["action"]


DISCRETE = gymnasium.spaces.Discrete(4)
BOX = gymnasium.spaces.Box(-2.0, 2.0, (2,))


def test_linear_schedule():
    schedule = LinearSchedule(1.0, 0.1, 100)
    assert [schedule(f) for f in (0, 50, 100, 1000)] == pytest.approx([1.0, 0.55, 0.1, 0.1])
    assert LinearSchedule(1.0, 0.1, None)(0) == 0.1
    assert LinearSchedule(1.0, 0.04, 16_000)(16_000) == 0.04  # exactly the end value once annealed (1 - 0.96 is not 0.04)
    with pytest.raises(ValueError, match="frames must be >= 0"):
        LinearSchedule(1.0, 0.1, -1)


def test_warm_up_then_epsilon_greedy():
    torch.manual_seed(0)
    policy = EGreedy(Constant(True), DISCRETE, eps_init=0.5, eps_end=0.2, annealing_frames=3000, init_random_frames=1000)
    warm = act(policy)  # frames 0..999: uniformly random
    counts = torch.bincount(warm, minlength=4).float() / 1000
    assert (counts - 0.25).abs().max() < 0.05
    assert policy.frames == 1000 and policy.epsilon == pytest.approx(0.5 - 0.3 / 3)
    act(policy, 2000)  # anneal to the end
    assert policy.epsilon == pytest.approx(0.2)
    explored = act(policy, 20_000)
    # a random action is the greedy one a quarter of the time: P(action != 2) = 0.2 * 3/4
    assert (explored != 2).float().mean().item() == pytest.approx(0.15, abs=0.01)
    frames = policy.frames
    assert (act(policy, 100, InteractionType.DETERMINISTIC) == 2).all()  # evaluation is greedy ...
    assert policy.frames == frames  # ... and counts no frames
    state = policy.state_dict()
    other = EGreedy(Constant(True), DISCRETE, eps_init=0.5, eps_end=0.2, annealing_frames=3000)
    other.load_state_dict(state)
    assert other.frames == frames


def test_random_warm_up_of_a_continuous_policy():
    torch.manual_seed(0)
    policy = RandomWarmup(Constant(False), BOX, init_random_frames=500)
    warm = act(policy, 500)
    assert warm.shape == (500, 2) and warm.min() >= -2 and warm.max() <= 2 and warm.std() > 1
    assert (act(policy, 10) == 0.5).all()


def test_gaussian_noise_is_scaled_and_clipped():
    torch.manual_seed(0)
    policy = GaussianNoise(Constant(False), BOX, sigma_init=0.1, sigma_end=0.1)
    noisy = act(policy, 20_000)
    assert noisy.min() >= -2 and noisy.max() <= 2
    assert noisy.mean().item() == pytest.approx(0.5, abs=0.01)
    assert noisy.std().item() == pytest.approx(0.1 * 2.0, rel=0.05)  # sigma times half the bounds' width
    with pytest.raises(ValueError, match="Box"):
        GaussianNoise(Constant(True), DISCRETE)


def test_ou_noise_is_correlated_and_checkpointed():
    torch.manual_seed(0)
    policy = OrnsteinUhlenbeck(Constant(False), BOX, theta=0.15, sigma=0.3, dt=0.01)
    path = torch.stack([act(policy, 1)[0] for _ in range(300)])
    increments = path[1:] - path[:-1]
    assert increments.abs().mean() < (path - 0.5).abs().mean()  # steps are small next to the excursion
    state = policy.state_dict()
    other = OrnsteinUhlenbeck(Constant(False), BOX, theta=0.15, sigma=0.3, dt=0.01)
    other.load_state_dict(state)
    torch.manual_seed(1)
    a = act(policy, 1)
    torch.manual_seed(1)
    assert torch.equal(a, act(other, 1))
    with pytest.raises(ValueError, match="Discrete"):
        EGreedy(Constant(False), BOX)


def test_ou_noise_starts_again_with_each_episode():
    """``is_init`` (the collector's, for a policy that reads it) sets an env's process back to ``mu``; the others run on."""
    policy = OrnsteinUhlenbeck(Constant(False), BOX, theta=0.15, sigma=0.3, dt=0.01)
    assert "is_init" in policy.in_keys

    def step(is_init: list[bool]) -> torch.Tensor:
        td = TensorDict({"observation": torch.zeros(2, 3), "is_init": torch.tensor(is_init).unsqueeze(-1)}, batch_size=[2])
        with set_interaction_type(InteractionType.RANDOM):
            return policy(td)["action"]

    torch.manual_seed(0)
    for _ in range(50):
        step([False, False])
    before = policy.noise.clone()
    torch.manual_seed(1)
    step([True, False])
    torch.manual_seed(1)
    fresh = 0.3 * 0.1 * torch.randn(2, 2)  # one step from mu = 0: theta * (mu - 0) * dt vanishes
    assert torch.allclose(policy.noise[0], fresh[0])
    assert torch.allclose(policy.noise[1], before[1] - 0.15 * before[1] * 0.01 + fresh[1])


def test_ou_noise_restarts_at_episode_starts_in_a_real_collector():
    """``rlcore.Collector`` gives ``is_init`` true at the first step of every episode, the batch keeps it."""
    env = rlcore.make_vector_env("Pendulum-v1", 2, kwargs={"max_episode_steps": 5})
    still = TensorDictModule(lambda obs: torch.zeros(obs.shape[0], 1), ["observation"], ["action"])
    collector = rlcore.Collector(env, OrnsteinUhlenbeck(still, env.single_action_space, sigma=0.3), 2 * 12)
    batch = collector.collect()
    assert batch["is_init"][:, :, 0].tolist() == [[True, False, False, False, False] * 2 + [True, False]] * 2
    assert torch.equal(batch["is_init"][:, 1:], batch["next", "done"][:, :-1])
    assert collector.collect()["is_init"][:, :, 0].tolist() == [[False, False, False, True, False, False, False, False, True, False, False, False]] * 2
