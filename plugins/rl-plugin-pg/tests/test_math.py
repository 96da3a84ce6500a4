"""The losses' math against small hand-computed cases."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch
from tensordict import TensorDict
from torch import nn

import rlcore
from rl_plugin_pg._advantages import gae
from rl_plugin_pg._losses import PolicyGradientLoss, explained_variance


def reference_gae(rewards, values, next_values, terminated, truncated, gamma, lam):
    """Step-by-step GAE of one env, written as plain Python over lists."""
    advantages = [0.0] * len(rewards)
    running = 0.0
    for t in reversed(range(len(rewards))):
        done = terminated[t] or truncated[t]
        if done:
            running = 0.0  # the next step belongs to another episode
        bootstrap = 0.0 if terminated[t] else gamma * next_values[t]
        delta = rewards[t] + bootstrap - values[t]
        running = delta + gamma * lam * running
        advantages[t] = running
    return advantages


def _column(values, dtype=torch.float32):
    return torch.tensor(values, dtype=dtype).reshape(1, -1, 1)


def test_gae_matches_step_by_step_reference():
    gamma, lam = 0.9, 0.8
    envs = [
        # rewards, V(s), V(s'), terminated, truncated
        ([1.0, 0.5, -1.0, 2.0, 0.0], [0.3, 0.2, 0.1, 0.4, 0.5], [0.2, 0.7, 0.4, 0.5, 0.9], [0, 0, 1, 0, 0], [0, 0, 0, 0, 0]),
        ([0.0, 1.0, 1.0, 1.0, 1.0], [1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 9.0, 4.0, 5.0, 6.0], [0, 0, 0, 0, 0], [0, 1, 0, 0, 0]),
    ]
    expected = [reference_gae(*env, gamma, lam) for env in envs]
    stack = lambda i, dtype=torch.float32: torch.cat([_column(env[i], dtype) for env in envs])
    terminated, truncated = stack(3, torch.bool), stack(4, torch.bool)
    got = gae(stack(0), stack(1), stack(2), terminated, terminated | truncated, gamma, lam)
    assert got.shape == (2, 5, 1)
    torch.testing.assert_close(got.squeeze(-1), torch.tensor(expected))


def test_gae_hand_computed_small_case():
    # one env, two steps, no episode end: the last step bootstraps from V(s'_1)
    gamma, lam = 0.5, 0.5
    reward, value, next_value = _column([1.0, 2.0]), _column([0.0, 1.0]), _column([1.0, 4.0])
    no = torch.zeros(1, 2, 1, dtype=torch.bool)
    a1 = 2.0 + 0.5 * 4.0 - 1.0  # 3.0
    a0 = (1.0 + 0.5 * 1.0 - 0.0) + 0.25 * a1  # 1.5 + 0.75
    torch.testing.assert_close(gae(reward, value, next_value, no, no, gamma, lam), _column([a0, a1]))


def test_truncation_bootstraps_and_termination_does_not():
    gamma, lam = 0.99, 0.95
    reward, value = _column([1.0]), _column([2.0])
    final_value = _column([10.0])  # value of the true final observation
    truncated = torch.ones(1, 1, 1, dtype=torch.bool)
    not_terminated = torch.zeros(1, 1, 1, dtype=torch.bool)
    # truncated: the episode would have gone on, so its return is bootstrapped
    got = gae(reward, value, final_value, not_terminated, truncated, gamma, lam)
    assert got.item() == pytest.approx(1.0 + 0.99 * 10.0 - 2.0)
    # terminated: nothing follows
    got = gae(reward, value, final_value, truncated, truncated, gamma, lam)
    assert got.item() == pytest.approx(1.0 - 2.0)


def test_episode_end_cuts_the_advantage_recursion():
    gamma, lam = 1.0, 1.0
    reward, value, next_value = _column([1.0, 1.0]), _column([0.0, 0.0]), _column([0.0, 0.0])
    done = _column([1, 0], torch.bool)
    got = gae(reward, value, next_value, done, done, gamma, lam)
    torch.testing.assert_close(got, _column([1.0, 1.0]))  # not 2.0: the second step is another episode


class ObservationIsValue(nn.Module):
    """A stand-in critic: the value of an observation is the observation."""

    lstm = None

    def batch_values(self, batch):
        return batch["observation"], batch["next", "observation"]


def test_batch_process_values_and_bootstraps_the_whole_batch():
    gamma, lam = 0.9, 0.8
    rewards, terminated, truncated = [1.0, 0.5, -1.0, 2.0], [0, 1, 0, 0], [0, 0, 1, 0]
    obs, next_obs = [0.3, 0.2, 0.1, 0.4], [0.2, 0.7, 0.4, 0.5]
    term, trunc = _column(terminated, torch.bool), _column(truncated, torch.bool)
    batch = TensorDict(
        {
            "observation": _column(obs),
            "sample_log_prob": _column([0.0] * 4),  # (as the collector writes it; read by the loss, not here)
            "next": {"observation": _column(next_obs), "reward": _column(rewards), "terminated": term, "done": term | trunc},
        },
        batch_size=[1, 4],
    )
    loss = PolicyGradientLoss(ObservationIsValue(), gamma=gamma, gae_lambda=lam)
    trainer = SimpleNamespace(collected_frames=4, batch_frames=4, total_frames=100)
    out = loss.rl_batch_process(trainer, batch)
    assert out.batch_size == (4,)
    expected = reference_gae(rewards, obs, next_obs, terminated, truncated, gamma, lam)
    torch.testing.assert_close(out["advantage"].squeeze(-1), torch.tensor(expected))
    torch.testing.assert_close(out["state_value"].squeeze(-1), torch.tensor(obs))
    torch.testing.assert_close(out["value_target"].squeeze(-1), torch.tensor(expected) + torch.tensor(obs))


class FixedPolicy(nn.Module):
    """A stand-in policy whose ``evaluate`` returns given log-probs, entropies and values."""

    action_key = "action"
    lstm = None

    def __init__(self, log_prob, entropy, value):
        super().__init__()
        self.log_prob = nn.Parameter(torch.tensor(log_prob))
        self.entropy = torch.tensor(entropy)
        self.value_out = nn.Parameter(torch.tensor(value).unsqueeze(-1))

    def evaluate(self, batch):
        return self.log_prob, self.entropy, self.value_out


def _batch(old_log_prob, advantage, value_target, state_value):
    n = len(old_log_prob)
    return TensorDict(
        {
            "observation": torch.zeros(n, 1),
            "action": torch.zeros(n, dtype=torch.long),
            "sample_log_prob": torch.tensor(old_log_prob),
            "advantage": torch.tensor(advantage).unsqueeze(-1),
            "value_target": torch.tensor(value_target).unsqueeze(-1),
            "state_value": torch.tensor(state_value).unsqueeze(-1),
        },
        batch_size=[n],
    )


LOG_2 = math.log(2.0)
# new/old probability ratios of 2, 1/2 and 1, with advantages 1, 1 and -1
NEW, OLD, ADV = [LOG_2, -LOG_2, 0.0], [0.0, 0.0, 0.0], [1.0, 1.0, -1.0]


def _loss(objective, **kwargs):
    policy = FixedPolicy(NEW, [0.5, 0.7, 0.9], [1.0, 2.0, 3.0])
    options = {"normalize_advantage": False, "value_coef": 0.5, "entropy_coef": 0.1, **kwargs}
    return PolicyGradientLoss(policy, objective=objective, **options)


def test_clip_objective_hand_computed():
    out = _loss("clip", clip_range=0.2)(_batch(OLD, ADV, [1.0, 2.0, 3.0], [1.0, 2.0, 3.0]))
    # min(r A, clip(r) A): min(2, 1.2) = 1.2; min(0.5, 0.8) = 0.5; min(-1, -1) = -1
    assert out["loss_policy"].item() == pytest.approx(-(1.2 + 0.5 - 1.0) / 3)
    assert out["clip_fraction"].item() == pytest.approx(2 / 3)
    assert out["loss_entropy"].item() == pytest.approx(-0.1 * 0.7)
    assert out["entropy"].item() == pytest.approx(0.7)
    # KL(old || new) estimated as (r - 1) - log r
    kl = ((2 - 1 - LOG_2) + (0.5 - 1 + LOG_2) + 0.0) / 3
    assert out["kl_approx"].item() == pytest.approx(kl)


def test_surrogate_and_vanilla_objectives_hand_computed():
    batch = _batch(OLD, ADV, [1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
    assert _loss("surrogate")(batch)["loss_policy"].item() == pytest.approx(-(2.0 + 0.5 - 1.0) / 3)
    assert _loss("pg")(batch)["loss_policy"].item() == pytest.approx(-(LOG_2 - LOG_2 + 0.0) / 3)


def test_vanilla_gradient_is_log_prob_times_advantage():
    loss = _loss("pg")
    out = loss(_batch(OLD, [3.0, -1.0, 2.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0]))
    out["loss_policy"].backward()
    torch.testing.assert_close(loss.policy.log_prob.grad, -torch.tensor([3.0, -1.0, 2.0]) / 3)


def test_kl_penalty_term():
    loss = _loss("kl", kl_penalty=3.0)
    out = loss(_batch(OLD, ADV, [1.0, 2.0, 3.0], [1.0, 2.0, 3.0]))
    assert out["loss_kl"].item() == pytest.approx(3.0 * out["kl_approx"].item())
    assert out["loss_policy"].item() == pytest.approx(-(2.0 + 0.5 - 1.0) / 3)


def test_advantage_normalisation():
    loss = _loss("surrogate", normalize_advantage=True)
    policy_new = [0.0, 0.0, 0.0]
    loss.policy.log_prob.data = torch.tensor(policy_new)
    # ratios of 1: the loss is minus the mean of the normalised advantages, which is 0
    out = loss(_batch(OLD, [1.0, 5.0, 9.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.0]))
    assert out["loss_policy"].item() == pytest.approx(0.0, abs=1e-6)


def test_value_loss_plain_and_clipped():
    # values 1, 2, 3 (new); targets 2, 2, 0; collected values 0, 2, 2.5
    batch = _batch(OLD, ADV, [2.0, 2.0, 0.0], [0.0, 2.0, 2.5])
    plain = _loss("clip", value_coef=0.5)(batch)["loss_value"].item()
    assert plain == pytest.approx(0.5 * (1.0 + 0.0 + 9.0) / 3)
    # clipped to +-0.2 around the collected value: 0.2, 2.0, 2.7 -> errors 3.24, 0, 7.29; max with unclipped
    clipped = _loss("clip", value_coef=0.5, value_clip_range=0.2)(batch)["loss_value"].item()
    assert clipped == pytest.approx(0.5 * (max(1.0, 3.24) + 0.0 + max(9.0, 7.29)) / 3)


class Trainer(SimpleNamespace):
    stopped = False

    def stop_optim_steps(self):
        self.stopped = True


@pytest.mark.parametrize(("kl", "factor"), [(0.001, 0.5), (0.01, 1.0), (0.0149, 1.0), (0.016, 2.0), (0.5, 2.0)])
def test_kl_penalty_adaptation(monkeypatch, kl, factor):
    loss = _loss("kl", kl_target=0.01, kl_penalty=1.0)
    loss._batch = _batch(OLD, ADV, [0.0] * 3, [0.0] * 3)
    monkeypatch.setattr(loss, "batch_kl", lambda batch: kl)
    loss.rl_post_steps()
    assert loss.kl_coef.item() == pytest.approx(factor)
    assert "kl_coef" in loss.state_dict()  # checkpointed with the loss module


def test_kl_penalty_adapts_from_the_batch_kl():
    loss = _loss("kl", kl_target=0.01, kl_penalty=1.0)
    loss._batch = _batch(OLD, ADV, [0.0] * 3, [0.0] * 3)  # ratios 2, 1/2, 1: KL ~ 0.1 >> 0.015
    loss.rl_post_steps()
    assert loss.kl_coef.item() == pytest.approx(2.0)


def test_kl_far_past_target_stops_the_batch():
    loss = _loss("kl", kl_target=0.01, kl_stop_factor=4.0)
    trainer = Trainer()
    loss.rl_post_loss(trainer, TensorDict({"kl_approx": torch.tensor(0.039)}, []))
    assert not trainer.stopped
    loss.rl_post_loss(trainer, TensorDict({"kl_approx": torch.tensor(0.041)}, []))
    assert trainer.stopped


def test_minibatches_cover_the_batch_with_a_fresh_permutation_each_epoch():
    loss = _loss("clip", epochs=2, minibatches=3)
    assert loss.optim_steps_per_batch == 6
    batch = TensorDict({k: torch.arange(10) for k in ("observation", "action", "sample_log_prob", "state_value", "advantage", "value_target")}, batch_size=[10])
    trainer = SimpleNamespace(optim_step_in_batch=0)
    epochs = []
    for epoch in range(2):
        seen = []
        for step in range(3):
            trainer.optim_step_in_batch = epoch * 3 + step
            seen.append(loss.rl_process_optim_batch(trainer, batch)["advantage"])
        assert sorted(torch.cat(seen).tolist()) == list(range(10))
        epochs.append(torch.cat(seen))
    assert not torch.equal(epochs[0], epochs[1])


def test_linear_coefficient_schedule():
    loss = _loss("clip", clip_range=0.2, entropy_coef=0.01, schedule={"clip_range": 0.0, "entropy_coef": 0.03})
    loss.apply_schedule(0.5)
    assert loss.clip_range == pytest.approx(0.1)
    assert loss.entropy_coef == pytest.approx(0.02)
    loss.apply_schedule(2.0)
    assert loss.clip_range == pytest.approx(0.0)
    with pytest.raises(rlcore.ConfigError, match=r"^algo.schedule: cannot schedule 'gamma' \(valid choices: entropy_coef,"):
        _loss("clip", schedule={"gamma": 0.5})
    assert _loss("clip", schedule={"clip_range": None}).schedule == {}  # null takes a schedule off


def test_explained_variance():
    target = torch.tensor([1.0, 2.0, 3.0, 4.0])
    assert explained_variance(target, target) == pytest.approx(1.0)
    assert explained_variance(torch.full((4,), 2.5), target) == pytest.approx(0.0)
    assert math.isnan(explained_variance(target, torch.ones(4)))
