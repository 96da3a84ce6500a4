"""SAC's networks and losses against references and hand-computed cases."""

from __future__ import annotations

import math

import gymnasium
import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import InteractionType, set_interaction_type
from torch.distributions import Normal, TanhTransform, TransformedDistribution

import rl_plugin_sac

OBS = gymnasium.spaces.Box(-10, 10, (3,))
ACTIONS = gymnasium.spaces.Box(-2.0, 2.0, (2,))


def sac(**options):
    torch.manual_seed(0)
    return rl_plugin_sac.build_sac({"hidden_sizes": [16, 16], **options}, OBS, ACTIONS)


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


def test_tanh_gaussian_log_prob_matches_torch_distributions():
    loss = sac()
    obs = torch.randn(1000, 3)
    torch.manual_seed(3)
    action, log_prob = loss.actor.sample(obs)
    mean, log_std = loss.actor(obs)
    torch.manual_seed(3)
    u = mean + log_std.exp() * torch.randn_like(mean)  # the same draw
    reference = TransformedDistribution(Normal(mean, log_std.exp()), [TanhTransform()])
    assert torch.allclose(action, torch.tanh(u))
    assert torch.allclose(log_prob.squeeze(-1), reference.log_prob(torch.tanh(u)).sum(-1), atol=1e-3)


def test_twin_critics_are_two_independent_mlps():
    critic = sac().critic
    obs, action = torch.randn(5, 3), torch.rand(5, 2)
    q = critic(obs, action)
    assert q.shape == (2, 5, 1)
    for i in range(2):
        h = torch.cat([obs, action], -1)
        for layer, (weight, bias) in enumerate(critic.layers):
            h = h @ getattr(critic, weight)[i] + getattr(critic, bias)[i]
            if layer < len(critic.layers) - 1:
                h = torch.relu(h)
        assert torch.allclose(q[i], h, atol=1e-6)
    assert not torch.allclose(q[0], q[1])


def constant_networks(loss, q1: float, q2: float, target_q: float):
    """Critics that output constants, an actor whose action is tanh(0) = 0 with log-std -20."""
    with torch.no_grad():
        for net in (loss.critic, loss.target_critic):
            for weight, bias in net.layers:
                getattr(net, weight).zero_()
                getattr(net, bias).zero_()
        last_bias = loss.critic.layers[-1][1]
        getattr(loss.critic, last_bias)[0].fill_(q1)
        getattr(loss.critic, last_bias)[1].fill_(q2)
        getattr(loss.target_critic, loss.target_critic.layers[-1][1]).fill_(target_q)
        weight, bias = loss.actor.layers[-1]
        getattr(loss.actor, weight).zero_()
        getattr(loss.actor, bias).copy_(torch.tensor([0.0, 0.0, -20.0, -20.0]))


def test_losses_by_hand():
    loss = sac(init_alpha=0.5, gamma=0.9)
    constant_networks(loss, q1=1.0, q2=3.0, target_q=2.0)
    data = batch()
    data.set("_weight", torch.ones(8))  # a prioritized sample, of equal weights
    torch.manual_seed(7)
    out = loss(data)
    torch.manual_seed(7)  # the loss draws the noise of the actions at s', then at s
    noise_next, noise = torch.randn(8, 2), torch.randn(8, 2)

    # u = 0 + e^-20 * noise: a = tanh(u) = 0 (tanh's Jacobian is 1 there) and log pi = sum(-noise^2 / 2 + 20 - log sqrt(2 pi))
    def log_pi(n):
        return (-0.5 * n.pow(2) + 20 - 0.5 * math.log(2 * math.pi)).sum(-1, keepdim=True)

    target = data["next", "reward"] + 0.9 * (2.0 - 0.5 * log_pi(noise_next))
    expected_q = 0.5 * (((1.0 - target) ** 2).mean() + ((3.0 - target) ** 2).mean())
    assert out["loss_qvalue"].item() == pytest.approx(expected_q.item(), rel=1e-4)
    assert out["loss_actor"].item() == pytest.approx((0.5 * log_pi(noise) - 1.0).mean().item(), rel=1e-4)  # min(Q1, Q2) = 1
    assert out["loss_alpha"].item() == pytest.approx((-math.log(0.5) * (log_pi(noise) - 2)).mean().item(), rel=1e-4)  # target entropy -2
    assert out["alpha"].item() == pytest.approx(0.5) and out["q_value"].item() == pytest.approx(2.0)
    td_error = torch.maximum((target - 1.0).abs(), (target - 3.0).abs()).squeeze(-1)
    assert torch.allclose(data["td_error"], td_error, rtol=1e-4)
    done = batch(terminated=True)  # no bootstrap: y = r
    expected_done = 0.5 * (((1.0 - done["next", "reward"]) ** 2).mean() + ((3.0 - done["next", "reward"]) ** 2).mean())
    assert loss(done)["loss_qvalue"].item() == pytest.approx(expected_done.item(), rel=1e-4)


def test_each_loss_reaches_only_its_own_parameters():
    loss = sac()
    groups = {
        "loss_qvalue": set(loss.critic.parameters()),
        "loss_actor": set(loss.actor.parameters()),
        "loss_alpha": {loss.log_alpha},
    }
    for key, own in groups.items():
        loss.zero_grad(set_to_none=True)
        loss(batch())[key].backward()
        reached = {p for p in loss.parameters() if p.grad is not None and p.grad.abs().sum() > 0}
        assert reached == own, key
    assert not list(loss.target_critic.parameters())


def test_importance_weights_scale_the_critic_loss():
    loss = sac()
    data = batch()
    torch.manual_seed(0)
    plain = loss(data.clone())["loss_qvalue"]
    weighted = data.clone()
    weighted.set("_weight", torch.full((8,), 0.5))
    torch.manual_seed(0)
    assert loss(weighted)["loss_qvalue"].item() == pytest.approx(0.5 * plain.item(), rel=1e-5)


def image_batch(n: int = 8) -> TensorDict:
    """A replay sample of 40 x 40 RGB frames and actions in [-2, 2]."""
    return TensorDict(
        {
            "observation": torch.randint(0, 256, (n, 40, 40, 3), dtype=torch.uint8),
            "action": torch.rand(n, 2) * 4 - 2,
            "next": {
                "observation": torch.randint(0, 256, (n, 40, 40, 3), dtype=torch.uint8),
                "reward": torch.randn(n, 1),
                "terminated": torch.zeros(n, 1, dtype=torch.bool),
            },
        },
        batch_size=[n],
    )


def trained_by(loss, batch: TensorDict, key: str) -> set:
    """The parameters of ``loss`` that the loss ``key`` of ``batch`` gives a gradient."""
    loss.zero_grad(set_to_none=True)
    loss(batch.clone())[key].backward()
    return {p for p in loss.parameters() if p.grad is not None and p.grad.abs().sum() > 0}


def test_policy_acts_in_the_bounds_deterministically_when_asked():
    loss = sac(init_random_frames=0)
    obs = TensorDict({"observation": torch.randn(64, 3)}, batch_size=[64])
    with set_interaction_type(InteractionType.DETERMINISTIC):
        a, b = loss.policy(obs.clone())["action"], loss.policy(obs.clone())["action"]
    assert torch.equal(a, b)
    mean = loss.actor(obs["observation"])[0]
    assert torch.allclose(a, 2 * torch.tanh(mean))  # bounds [-2, 2]
    with set_interaction_type(InteractionType.RANDOM):
        sampled = loss.policy(obs.clone())["action"]
    assert not torch.equal(sampled, a) and sampled.abs().max() <= 2


def test_image_observations_go_through_a_cnn_the_critics_train_and_the_actor_reads_detached():
    import numpy as np

    import rlcore
    from rl_plugin_nets import CNN

    frames = gymnasium.spaces.Box(0, 255, (40, 40, 3), np.uint8)
    torch.manual_seed(0)
    loss = rl_plugin_sac.build_sac({"hidden_sizes": [16], "cnn_features": 32}, frames, ACTIONS)
    encoder = loss.critic.encoder
    assert isinstance(encoder, CNN) and loss.policy.policy.encoder is encoder  # one encoder: the critics' and the acting policy's
    assert loss.actor.weight0.shape == (32, 16) and loss.critic.weight0.shape == (2, 32 + 2, 16)
    assert isinstance(loss.target_critic.encoder, CNN) and not list(loss.target_critic.parameters())  # the target's own copy
    torch.manual_seed(1)
    images = image_batch()
    groups = {"loss_qvalue": set(loss.critic.parameters()), "loss_actor": set(loss.actor.parameters()), "loss_alpha": {loss.log_alpha}}
    for key, own in groups.items():  # the encoder is among the critics' parameters only
        assert trained_by(loss, images, key) == own, key
    with set_interaction_type(InteractionType.DETERMINISTIC):
        acted = loss.policy(TensorDict({"observation": images["observation"]}, [8]))["action"]
    assert acted.shape == (8, 2) and bool((acted.abs() <= 2).all())
    with pytest.raises(rlcore.ConfigError, match="sac needs a one-dimensional Box observation space or images"):
        rl_plugin_sac.build_sac({"encoder": "mlp"}, frames, ACTIONS)


@pytest.mark.parametrize("algo", ["sac", "td3"])
def test_an_actor_encoder_of_its_own_is_trained_by_the_actor_s_loss_alone(algo):
    import importlib

    import numpy as np

    module = importlib.import_module(f"rl_plugin_{algo}")
    frames = gymnasium.spaces.Box(0, 255, (40, 40, 3), np.uint8)
    torch.manual_seed(0)
    options = {"hidden_sizes": [16], "cnn_features": 32, "share_encoder": False, **({"policy_delay": 1} if algo == "td3" else {})}
    loss = getattr(module, f"build_{algo}")(options, frames, ACTIONS)
    actor_encoder, critic_encoder = loss.actor_encoder, loss.critic.encoder
    assert actor_encoder is not None and actor_encoder is not critic_encoder
    assert not torch.equal(next(actor_encoder.parameters()), next(critic_encoder.parameters()))  # initialised apart
    policy = loss.policy.policy
    assert policy.encoder is actor_encoder  # the policy acts through it
    images = image_batch()
    for key, own in {"loss_qvalue": set(loss.critic.parameters()), "loss_actor": {*loss.actor.parameters(), *actor_encoder.parameters()}}.items():
        assert trained_by(loss, images, key) == own, key
    if algo == "td3":  # the target actor reads a target copy of it, moved with the target actor
        pairs = loss.target_networks()
        assert (actor_encoder, loss.target_actor_encoder) in pairs and loss.target_actor_encoder is not actor_encoder


class _Unbounded(gymnasium.ActionWrapper):
    """Pendulum with an action space unbounded both ways (the env clips the torque to [-2, 2] itself)."""

    def __init__(self, env: gymnasium.Env) -> None:
        import numpy as np

        super().__init__(env)
        self.action_space = gymnasium.spaces.Box(-np.inf, np.inf, (1,), np.float32)

    def action(self, action):
        return action


@pytest.mark.parametrize("algo", ["sac", "td3"])
def test_actions_without_bounds_are_acted_in_an_interval_of_width_two_that_a_warning_names(algo, tmp_path):
    import rlcore

    pytest.importorskip(f"rl_plugin_{algo}")
    if "UnboundedPendulum-v0" not in gymnasium.registry:
        gymnasium.register("UnboundedPendulum-v0", entry_point=lambda **kwargs: _Unbounded(gymnasium.make("Pendulum-v1", **kwargs)))
    config = rlcore.load_config(
        overrides=[f"algo.name={algo}", "env.id=UnboundedPendulum-v0", "trainer.total_frames=160", "algo.init_random_frames=64", "loggers.console=null"]
    )
    message = rf"^algo.name: {algo} squashes its actions into bounds, which the action space has not for entries 0: it acts in 0: \[-1, 1\]"
    with pytest.warns(UserWarning, match=message):
        trainer = rlcore.build_trainer(config, run_dir=tmp_path / "run")
    batches = []
    trainer.register_op("batch_process", lambda batch: batches.append(batch["action"].clone()))
    trainer.train()
    actions = torch.cat([b.flatten() for b in batches])
    assert actions.abs().max() <= 1 and actions.std() > 0.1  # random, then the policy's: all in [-1, 1]
    assert trainer.optim_steps > 0


def test_the_acting_space_gives_each_unbounded_entry_an_interval_of_width_two():
    import numpy as np

    from rl_plugin_nets import acting_space

    bounded = gymnasium.spaces.Box(-2.0, 3.0, (2,), np.float32)
    assert acting_space("sac", bounded) is bounded
    low, high = np.array([-np.inf, 0.0, -np.inf, -1.0], np.float32), np.array([np.inf, np.inf, 5.0, 1.0], np.float32)
    space = gymnasium.spaces.Box(low, high, dtype=np.float32)
    with pytest.warns(UserWarning, match=r"entries 0, 1, 2: it acts in 0: \[-1, 1\], 1: \[0, 2\], 2: \[3, 5\] "):
        acting = acting_space("td3", space)
    np.testing.assert_array_equal(acting.low, [-1, 0, 3, -1])
    np.testing.assert_array_equal(acting.high, [1, 2, 5, 1])
