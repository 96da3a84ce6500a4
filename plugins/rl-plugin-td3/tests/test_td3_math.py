"""TD3's and DDPG's targets and losses against hand-computed cases; which parameters each loss reaches; the exploration."""

from __future__ import annotations

import math

import gymnasium
import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import InteractionType, set_interaction_type

import rl_plugin_td3
from rl_plugin_replay import GaussianNoise, OrnsteinUhlenbeck

OBS = gymnasium.spaces.Box(-10, 10, (3,))
ACTIONS = gymnasium.spaces.Box(-2.0, 2.0, (2,))


def td3(**options):
    torch.manual_seed(0)
    return rl_plugin_td3.build_td3({"hidden_sizes": [16, 16], **options}, OBS, ACTIONS)


def batch(n: int = 8, terminated: bool = False) -> TensorDict:
    torch.manual_seed(1)
    return TensorDict(
        {
            "observation": torch.randn(n, 3),
            "action": torch.rand(n, 2) * 4 - 2,
            "next": {"observation": torch.randn(n, 3), "reward": torch.randn(n, 1), "terminated": torch.full((n, 1), terminated)},
        },
        batch_size=[n],
    )


def linear_networks(loss, unit_action: float, q: list[float], target_q: list[float], slope: list[float], target_slope: list[float]):
    """Networks without hidden layers (``hidden_sizes: []``): the actors act ``unit_action`` in each dimension whatever
    the observation, and critic ``i`` is ``q[i] + slope[i] * sum(a)`` (the targets: ``target_q``, ``target_slope``)."""
    with torch.no_grad():
        for actor in (loss.actor, loss.target_actor):
            weights = dict(actor.named_parameters()) or dict(actor.named_buffers())
            weights["weight0"].zero_()
            weights["bias0"].fill_(math.atanh(unit_action))
        for critic, constants, slopes in ((loss.critic, q, slope), (loss.target_critic, target_q, target_slope)):
            weights = dict(critic.named_parameters()) or dict(critic.named_buffers())
            weight, bias = weights["weight0"], weights["bias0"]  # [K, 3 + 2, 1], [K, 1, 1]
            weight.zero_()
            for i, (c, s) in enumerate(zip(constants, slopes, strict=True)):
                weight[i, 3:] = s
                bias[i] = c


def test_td3_target_is_the_clipped_double_q_of_the_smoothed_target_action():
    loss = td3(hidden_sizes=[], gamma=0.9, target_noise=1.0, noise_clip=0.5)
    linear_networks(loss, unit_action=0.7, q=[1.0, 3.0], target_q=[2.0, 5.6], slope=[1.0, 1.0], target_slope=[1.0, -2.0])
    data = batch()
    torch.manual_seed(7)
    out = loss(data)
    torch.manual_seed(7)  # the loss draws the smoothing noise once, [B, action_dim]
    noise = torch.randn(8, 2).clamp(-0.5, 0.5)
    next_action = (0.7 + noise).clamp(-1, 1)  # the target actor's tanh(atanh(0.7)), smoothed, in [-1, 1]
    assert bool((next_action == 1).any()) and bool((noise.abs() == 0.5).any())  # both clips are exercised
    q1_next = 2.0 + next_action.sum(-1, keepdim=True)
    q2_next = 5.6 - 2.0 * next_action.sum(-1, keepdim=True)
    target = data["next", "reward"] + 0.9 * torch.minimum(q1_next, q2_next)
    assert bool((q1_next < q2_next).any()) and bool((q2_next < q1_next).any())  # the min picks each critic somewhere
    unit = data["action"] / 2  # the sampled actions, rescaled from [-2, 2]
    q1, q2 = 1.0 + unit.sum(-1, keepdim=True), 3.0 + unit.sum(-1, keepdim=True)
    expected = ((q1 - target) ** 2).mean() + ((q2 - target) ** 2).mean()
    assert out["loss_qvalue"].item() == pytest.approx(expected.item(), rel=1e-5)
    assert out["q_value"].item() == pytest.approx(torch.cat([q1, q2]).mean().item(), rel=1e-5)
    assert out["td_error"].item() == pytest.approx(torch.maximum((q1 - target).abs(), (q2 - target).abs()).mean().item(), rel=1e-5)
    assert "loss_actor" not in out.keys()  # the first of policy_delay = 2 calls: no actor update
    second = loss(batch())
    assert second["loss_actor"].item() == pytest.approx(-(1.0 + 2 * 0.7), rel=1e-5)  # -Q_1(s, mu(s)), mu(s) = (0.7, 0.7)


def test_no_smoothing_noise_and_a_terminal_transition():
    loss = td3(hidden_sizes=[], gamma=0.9, target_noise=0.0)
    linear_networks(loss, unit_action=0.5, q=[0.0, 0.0], target_q=[2.0, 1.0], slope=[0.0, 0.0], target_slope=[1.0, 1.0])
    data = batch()
    out = loss(data)
    target = data["next", "reward"] + 0.9 * (1.0 + 2 * 0.5)  # min(2 + 1, 1 + 1)
    assert out["loss_qvalue"].item() == pytest.approx(2 * (target**2).mean().item(), rel=1e-5)
    done = batch(terminated=True)  # no bootstrap: y = r
    assert loss(done)["loss_qvalue"].item() == pytest.approx(2 * (done["next", "reward"] ** 2).mean().item(), rel=1e-5)


def test_ddpg_has_one_critic_and_its_target_is_q1_of_the_target_action():
    loss = td3(hidden_sizes=[], gamma=0.9, twin=False, policy_delay=1, target_noise=0.0)
    assert loss.critic.critics == 1 and loss.critic(torch.randn(5, 3), torch.rand(5, 2)).shape == (1, 5, 1)
    linear_networks(loss, unit_action=-0.5, q=[1.0], target_q=[2.0], slope=[3.0], target_slope=[4.0])
    data = batch()
    out = loss(data)
    target = data["next", "reward"] + 0.9 * (2.0 + 4.0 * -1.0)  # Q'_1(s', mu'(s')), mu'(s') = (-0.5, -0.5): no noise, no min
    q = 1.0 + 3.0 * (data["action"] / 2).sum(-1, keepdim=True)
    assert out["loss_qvalue"].item() == pytest.approx(((q - target) ** 2).mean().item(), rel=1e-5)
    assert out["loss_actor"].item() == pytest.approx(-(1.0 + 3.0 * -1.0), rel=1e-5)  # every call: policy_delay 1
    assert loss(batch())["loss_actor"].item() == pytest.approx(2.0, rel=1e-5)


@pytest.mark.parametrize("twin", [True, False])
def test_each_loss_reaches_only_its_own_parameters(twin):
    loss = td3(twin=twin, policy_delay=1)
    groups = {"loss_qvalue": set(loss.critic.parameters()), "loss_actor": set(loss.actor.parameters())}
    for key, own in groups.items():
        loss.zero_grad(set_to_none=True)
        loss(batch())[key].backward()
        reached = {p for p in loss.parameters() if p.grad is not None and p.grad.abs().sum() > 0}
        assert reached == own, key
    assert not list(loss.target_critic.parameters()) and not list(loss.target_actor.parameters())
    assert set(loss.parameters()) == set(loss.critic.parameters()) | set(loss.actor.parameters())


def test_importance_weights_scale_the_critic_loss_and_priorities_go_back():
    loss = td3()
    data = batch()
    torch.manual_seed(0)
    plain = loss(data.clone())["loss_qvalue"]
    weighted = data.clone()
    weighted.set("_weight", torch.full((8,), 0.5))
    torch.manual_seed(0)
    assert loss(weighted)["loss_qvalue"].item() == pytest.approx(0.5 * plain.item(), rel=1e-5)
    assert weighted["td_error"].shape == (8,)


def test_exploration_noise_in_collection_not_in_evaluation_after_random_warmup():
    loss = td3(init_random_frames=1000, exploration_sigma=0.1)
    policy = loss.policy
    assert isinstance(policy, GaussianNoise) and policy.init_random_frames == 1000
    obs = TensorDict({"observation": torch.randn(1000, 3)}, batch_size=[1000])
    with torch.no_grad():
        greedy = 2 * loss.actor(obs["observation"])  # the actor's action in the bounds [-2, 2]
        with set_interaction_type(InteractionType.DETERMINISTIC):
            evaluated = [policy(obs.clone())["action"] for _ in range(2)]
        assert policy.frames == 0  # evaluation moves no clock
        torch.manual_seed(0)
        with set_interaction_type(InteractionType.RANDOM):
            warmup = policy(obs.clone())["action"]  # frames 0..999: uniformly random
            noisy = policy(obs.clone())["action"]  # from frame 1000 on: the actor's action plus Gaussian noise
    assert torch.equal(evaluated[0], evaluated[1]) and torch.allclose(evaluated[0], greedy)
    assert warmup.min() >= -2 and warmup.max() <= 2 and abs(warmup.mean().item()) < 0.1
    assert warmup.std().item() == pytest.approx(4 / math.sqrt(12), rel=0.05)  # uniform over [-2, 2]
    assert (warmup - greedy).abs().mean() > 0.5  # not the actor's
    noise = noisy - greedy
    assert noise.abs().max() > 0 and noise.std().item() == pytest.approx(0.1 * 2, rel=0.1)  # sigma in half-widths: 0.1 * 2


def test_ou_exploration_is_correlated_and_annealed():
    loss = td3(init_random_frames=0, exploration="ou", exploration_sigma=0.3, exploration_sigma_end=0.0, exploration_annealing_frames=100, ou_dt=1.0)
    policy = loss.policy
    assert isinstance(policy, OrnsteinUhlenbeck) and policy.theta == 0.15 and policy.dt == 1.0
    obs = TensorDict({"observation": torch.zeros(1, 3)}, batch_size=[1])
    torch.manual_seed(0)
    with torch.no_grad():
        greedy = 2 * loss.actor(obs["observation"])
        with set_interaction_type(InteractionType.RANDOM):
            noise = torch.stack([policy(obs.clone())["action"] - greedy for _ in range(200)]).reshape(200, 2)
        with set_interaction_type(InteractionType.DETERMINISTIC):
            assert torch.allclose(policy(obs.clone())["action"], greedy)
    first = noise[:50]
    lag1 = torch.corrcoef(torch.stack([first[:-1, 0], first[1:, 0]]))[0, 1]
    assert lag1 > 0.5  # x_{t+1} = 0.85 x_t + ...: temporally correlated
    assert policy.stats()["train/sigma"] == 0.0 and noise[150:].abs().max() < noise[:50].abs().max()  # annealed to 0
