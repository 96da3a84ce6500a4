"""The actor-critic policies: spaces, sampling, the mode, log-probabilities and entropies."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
import torch
from gymnasium import spaces
from tensordict import TensorDict
from tensordict.nn import InteractionType, set_interaction_type

import rlcore
from rl_plugin_pg._policies import make_actor_critic


def evaluate(policy, obs, action):
    """``policy.evaluate`` of rows of observations and the actions taken."""
    return policy.evaluate(TensorDict({"observation": obs, policy.action_key: action}, batch_size=obs.shape[:1]))


def _act(policy, obs, mode):
    with torch.no_grad(), set_interaction_type(mode):
        return policy(TensorDict({"observation": obs}, batch_size=[obs.shape[0]]))


def test_categorical_samples_and_mode():
    torch.manual_seed(0)
    policy = make_actor_critic(spaces.Box(-1, 1, (3,)), spaces.Discrete(3), hidden_sizes=[16])
    with torch.no_grad():
        policy.actor_net.bias1.copy_(torch.tensor([1.5, 0.0, -1.0]))  # the output layer: far from uniform
    obs = torch.randn(1, 3).expand(6000, 3)
    out = _act(policy, obs, InteractionType.RANDOM)
    assert out["action"].shape == (6000,) and out["action"].dtype == torch.long
    assert "state_value" not in out.keys()  # the loss module values whole batches at once
    assert policy.value(obs[:7]).shape == (7, 1)
    logits, _ = policy.heads(obs[:1])
    probs = torch.softmax(logits, -1)[0]
    counts = torch.bincount(out["action"], minlength=3) / 6000
    torch.testing.assert_close(counts, probs.detach(), atol=0.03, rtol=0)
    torch.testing.assert_close(out["sample_log_prob"], probs.log()[out["action"]].detach())
    deterministic = _act(policy, obs[:5], InteractionType.DETERMINISTIC)
    assert (deterministic["action"] == probs.argmax()).all()
    assert torch.equal(_act(policy, obs[:5], InteractionType.MODE)["action"], deterministic["action"])


@pytest.mark.parametrize("shared", [False, True])
def test_actor_and_value_alone_match_both_heads(shared):
    policy = make_actor_critic(spaces.Box(-1, 1, (2, 3)), spaces.Discrete(4), hidden_sizes=[8, 8], shared_trunk=shared)
    obs = torch.randn(5, 7, 2, 3)
    actor, value = policy.heads(obs)
    assert actor.shape == (5, 7, 4) and value.shape == (5, 7, 1)
    torch.testing.assert_close(policy.actor(obs), actor)
    torch.testing.assert_close(policy.value(obs), value)


def test_categorical_evaluate_matches_torch_distributions():
    policy = make_actor_critic(spaces.Box(-1, 1, (4,)), spaces.Discrete(5), hidden_sizes=[8, 8], activation="relu")
    obs, action = torch.randn(7, 4), torch.randint(0, 5, (7,))
    log_prob, entropy, value = evaluate(policy, obs, action)
    logits, expected_value = policy.heads(obs)
    dist = torch.distributions.Categorical(logits=logits)
    torch.testing.assert_close(log_prob, dist.log_prob(action))
    torch.testing.assert_close(entropy, dist.entropy())
    torch.testing.assert_close(value, expected_value)


@pytest.mark.parametrize("bounds", ["clip", "tanh"])
def test_gaussian_actions_stay_in_bounds(bounds):
    torch.manual_seed(0)
    space = spaces.Box(np.array([-2.0, 0.0], dtype=np.float32), np.array([2.0, 1.0], dtype=np.float32))
    policy = make_actor_critic(spaces.Box(-1, 1, (3,)), space, log_std_init=1.0, action_bounds=bounds)
    out = _act(policy, torch.randn(500, 3), InteractionType.RANDOM)
    action = out["action"]
    assert action.shape == (500, 2)
    assert (action[:, 0] >= -2).all() and (action[:, 0] <= 2).all()
    assert (action[:, 1] >= 0).all() and (action[:, 1] <= 1).all()
    # the log-probability is of the raw Gaussian sample
    log_prob, entropy, _ = evaluate(policy, torch.randn(4, 3), out["raw_action"][:4])
    assert log_prob.shape == (4,) and entropy.shape == (4,)


def test_gaussian_evaluate_matches_torch_distributions_and_mode_is_the_mean():
    policy = make_actor_critic(spaces.Box(-1, 1, (3,)), spaces.Box(-1, 1, (2,)), log_std_init=-0.5)
    obs, raw = torch.randn(6, 3), torch.randn(6, 2)
    log_prob, entropy, _ = evaluate(policy, obs, raw)
    mean, _ = policy.heads(obs)
    dist = torch.distributions.Normal(mean, policy.log_std.exp())
    torch.testing.assert_close(log_prob, dist.log_prob(raw).sum(-1))
    torch.testing.assert_close(entropy, dist.entropy().sum(-1))
    out = _act(policy, obs, InteractionType.DETERMINISTIC)
    torch.testing.assert_close(out["raw_action"], mean.detach())
    torch.testing.assert_close(out["action"], mean.detach().clamp(-1, 1))


def test_shared_trunk_and_image_like_observations():
    policy = make_actor_critic(spaces.Box(0, 1, (2, 3)), spaces.Discrete(2), shared_trunk=True, hidden_sizes=[4])
    separate = make_actor_critic(spaces.Box(0, 1, (2, 3)), spaces.Discrete(2), hidden_sizes=[4])
    count = lambda m: sum(p.numel() for p in m.parameters())
    assert count(policy) < count(separate)
    out = _act(policy, torch.rand(5, 2, 3), InteractionType.RANDOM)
    assert out["action"].shape == (5,) and policy.value(torch.rand(5, 2, 3)).shape == (5, 1)


def test_multi_discrete_and_multi_binary_evaluate_match_torch_distributions():
    torch.manual_seed(1)
    obs = torch.randn(9, 4)
    multi = make_actor_critic(spaces.Box(-1, 1, (4,)), spaces.MultiDiscrete([3, 2, 4]), hidden_sizes=[8])
    action = torch.stack([torch.randint(0, n, (9,)) for n in (3, 2, 4)], -1)
    log_prob, entropy, _ = evaluate(multi, obs, action)
    dists = [torch.distributions.Categorical(logits=chunk) for chunk in multi.actor(obs).split([3, 2, 4], -1)]
    torch.testing.assert_close(log_prob, sum(d.log_prob(action[:, i]) for i, d in enumerate(dists)))
    torch.testing.assert_close(entropy, sum(d.entropy() for d in dists))

    binary = make_actor_critic(spaces.Box(-1, 1, (4,)), spaces.MultiBinary(5), hidden_sizes=[8])
    ones = torch.randint(0, 2, (9, 5))
    log_prob, entropy, _ = evaluate(binary, obs, ones)
    dist = torch.distributions.Bernoulli(logits=binary.actor(obs))
    torch.testing.assert_close(log_prob, dist.log_prob(ones.float()).sum(-1))
    torch.testing.assert_close(entropy, dist.entropy().sum(-1))


@pytest.mark.parametrize("space", [spaces.MultiDiscrete([3, 2]), spaces.MultiBinary(2)])
def test_multi_discrete_and_multi_binary_samples_and_modes(space):
    torch.manual_seed(0)
    policy = make_actor_critic(spaces.Box(-1, 1, (3,)), space, hidden_sizes=[16])
    with torch.no_grad():
        policy.actor_net.bias1.copy_(torch.tensor([1.5, 0.0, -1.0, -0.5, 0.5][: policy.actor_net.bias1.numel()]))
    obs = torch.randn(1, 3).expand(6000, 3)
    out = _act(policy, obs, InteractionType.RANDOM)
    assert out["action"].shape == (6000, 2) and out["action"].dtype == torch.long
    assert all(space.contains(a) for a in out["action"][:50].numpy())
    log_prob, _, _ = evaluate(policy, obs[:50], out["action"][:50])
    torch.testing.assert_close(out["sample_log_prob"][:50], log_prob)  # what acting says is what learning reads
    logits = policy.actor(obs[:1])[0].detach()
    if isinstance(space, spaces.MultiBinary):
        torch.testing.assert_close(out["action"].float().mean(0), torch.sigmoid(logits), atol=0.03, rtol=0)
        mode = (logits > 0).long()
    else:
        first = torch.bincount(out["action"][:, 0], minlength=3) / 6000
        torch.testing.assert_close(first, torch.softmax(logits[:3], -1), atol=0.03, rtol=0)
        mode = torch.stack([logits[:3].argmax(), logits[3:].argmax()])
    assert (_act(policy, obs[:5], InteractionType.DETERMINISTIC)["action"] == mode).all()


def test_unsupported_spaces_are_refused():
    need = r"^algo\.name: the pg algorithms need a Discrete, a one-dimensional MultiDiscrete"
    with pytest.raises(rlcore.ConfigError, match=need + r" .* the env has Box\(-1.0, 1.0, \(2, 2\)"):
        make_actor_critic(spaces.Box(-1, 1, (3,)), spaces.Box(-1, 1, (2, 2)))
    with pytest.raises(rlcore.ConfigError, match=r"the env has MultiDiscrete\(\[\[2 2\]"):
        make_actor_critic(spaces.Box(-1, 1, (3,)), spaces.MultiDiscrete([[2, 2]]))
    with pytest.raises(rlcore.ConfigError, match=r"^algo\.name: the pg algorithms need a Box or a Dict observation space, the env has Discrete$"):
        make_actor_critic(spaces.Discrete(16), spaces.Discrete(4))
    with pytest.raises(ValueError, match="unknown activation"):
        make_actor_critic(spaces.Box(-1, 1, (3,)), spaces.Discrete(2), activation="swishy")


def test_image_observations_get_the_cnn_and_vectors_the_mlps():
    import rlcore
    from rl_plugin_nets import CNN

    pong = spaces.Box(0, 255, (4, 84, 84), np.uint8)  # Atari preprocessing and a stack of 4
    policy = make_actor_critic(pong, spaces.Discrete(6))
    assert isinstance(policy.encoder, CNN) and policy.trunk is None
    assert sum(p.numel() for p in policy.parameters()) < 1_700_000  # the flat MLP had 12.9M parameters on Pong's frames
    frames = torch.randint(0, 256, (3, 4, 84, 84), dtype=torch.uint8)
    out = _act(policy, frames, InteractionType.RANDOM)  # uint8 in: scaled inside the CNN
    assert out["action"].shape == (3,) and policy.value(frames).shape == (3, 1)
    assert make_actor_critic(spaces.Box(-1, 1, (4,)), spaces.Discrete(2)).encoder is None
    flat = make_actor_critic(pong, spaces.Discrete(6), encoder="mlp", hidden_sizes=[8])
    assert flat.encoder is None and flat.actor_net.weight0.shape == (4 * 84 * 84, 8)
    assert torch.equal(flat.actor(frames), flat.actor(frames.float() / 255))  # the MLP sees uint8 frames scaled, as the CNN does
    small = make_actor_critic(spaces.Box(0, 1, (10, 10, 4), bool), spaces.Discrete(3), cnn_channels=[8], cnn_features=32)
    assert small.encoder.net[0].out_channels == 8 and small.encoder.out_dim == 32 and small.actor_net.weight0.shape == (32, 3)
    with pytest.raises(rlcore.ConfigError, match="algo.encoder: a CNN needs an image observation space"):
        make_actor_critic(spaces.Box(-1, 1, (4,)), spaces.Discrete(2), encoder="cnn")


@pytest.mark.slow
@pytest.mark.parametrize(("env_id", "encoder"), [("PixelBandit-v0", "CNN"), ("DictBandit-v0", "MultiInputEncoder")])
def test_ppo_learns_to_read_its_observations_through_the_encoder(tmp_path, env_id, encoder):
    """On PixelBandit the side of a lit block decides the reward, on DictBandit the side swapped by the flag of the Dict
    observation's other entry: only a policy that reads all of its observation beats chance (0.5)."""
    import rlcore

    config = rlcore.load_config(
        overrides=["algo.name=ppo", f"env.id=rlcore_testing.envs:{env_id}", "trainer.total_frames=8192", "collector.frames_per_batch=512",
                   "trainer.progress_bar=false", "loggers={csv: null, console: null}", "trainer.seed=0"]
    )  # fmt: skip
    trainer = rlcore.build_trainer(config, run_dir=tmp_path / "run")
    assert type(trainer.loss_module.policy.encoder).__name__ == encoder
    env = trainer.make_env(num_envs=1)
    untrained = rlcore.evaluate(trainer.loss_module.policy, env, episodes=40, seed=1)["returns"]
    trainer.train()
    trained = rlcore.evaluate(trainer.loss_module.policy, env, episodes=40, seed=1)["returns"]
    env.close()
    assert sum(untrained) / 40 <= 0.75 and sum(trained) / 40 >= 0.9, (untrained, trained)


class PushedByTheFirstEntry(gymnasium.ActionWrapper):
    """CartPole whose push is the first entry of a ``MultiDiscrete([2, 3])`` or ``MultiBinary(3)`` action; the other
    entries do nothing (the policy learns to leave them to chance)."""

    def __init__(self, env: gymnasium.Env, binary: bool) -> None:
        super().__init__(env)
        self.action_space = spaces.MultiBinary(3) if binary else spaces.MultiDiscrete([2, 3])

    def action(self, action: np.ndarray) -> int:
        return int(action[0])


def _pushed_cartpole(binary: bool) -> gymnasium.Env:
    return PushedByTheFirstEntry(gymnasium.make("CartPole-v1"), binary)


@pytest.mark.slow
@pytest.mark.parametrize("binary", [False, True], ids=["multi-discrete", "multi-binary"])
def test_ppo_learns_with_multi_discrete_and_multi_binary_actions(tmp_path, binary):
    env_id = f"rlcore-tests/PushedCartPole{'Binary' if binary else 'Multi'}-v0"
    if env_id not in gymnasium.registry:
        gymnasium.register(env_id, entry_point=lambda: _pushed_cartpole(binary))
    config = rlcore.load_config(
        algo={"name": "ppo"},
        env={"id": env_id},
        overrides=["trainer.total_frames=20480", "trainer.seed=1", "trainer.progress_bar=false", "loggers.console=null"],
    )
    trainer = rlcore.build_trainer(config, run_dir=tmp_path / "run")
    trainer.train()
    env = trainer.make_env(num_envs=1)
    returns = rlcore.evaluate(trainer.loss_module.policy, env, episodes=5, seed=100)["returns"]
    env.close()
    assert sum(returns) / 5 >= 300, returns


def test_build_pg_is_the_familys_public_builder():
    from rl_plugin_pg import build_pg

    loss = build_pg("a2c", {"net_arch": {"pi": [8], "vf": [4, 4]}}, spaces.Box(-1, 1, (3,)), spaces.MultiBinary(2))
    assert [layer.shape[-1] for name, layer in loss.policy.actor_net.named_parameters() if name.startswith("bias")] == [8, 2]
    assert [layer.shape[-1] for name, layer in loss.policy.critic_net.named_parameters() if name.startswith("bias")] == [4, 4, 1]
    assert _act(loss.policy, torch.zeros(5, 3), InteractionType.RANDOM)["action"].shape == (5, 2)
    with pytest.raises(ValueError, match="unknown key"):
        build_pg("ppo", {"clip_rang": 0.1}, spaces.Box(-1, 1, (3,)), spaces.Discrete(2))


@pytest.mark.parametrize("share", [True, False])
def test_the_heads_share_the_cnn_or_each_has_its_own(share):
    images = spaces.Box(0, 255, (10, 10, 4), np.uint8)
    torch.manual_seed(0)
    policy = make_actor_critic(images, spaces.Discrete(3), share_encoder=share)
    assert (policy.critic_encoder is None) == share
    obs = torch.randint(0, 256, (5, 10, 10, 4), dtype=torch.uint8)
    actor, value = policy.heads(obs)
    torch.testing.assert_close(policy.actor(obs), actor)
    torch.testing.assert_close(policy.value(obs), value)
    log_prob, _, _ = evaluate(policy, obs, torch.zeros(5, dtype=torch.long))
    (log_prob.sum() + value.sum()).backward()
    actor_grads = [p.grad for p in policy.encoder.parameters()]
    assert all(g is not None and g.abs().sum() > 0 for g in actor_grads)
    if not share:  # the critic's loss reaches its own encoder only
        assert all(g is not None and g.abs().sum() > 0 for g in (p.grad for p in policy.critic_encoder.parameters()))
        policy.zero_grad()
        policy.value(obs).sum().backward()
        assert all(p.grad is None or not p.grad.any() for p in policy.encoder.parameters())
