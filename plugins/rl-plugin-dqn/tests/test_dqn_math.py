"""DQN's targets and losses against hand-computed cases."""

from __future__ import annotations

import gymnasium
import pytest
import torch
from tensordict import TensorDict
from tensordict.nn import InteractionType, set_interaction_type

import rl_plugin_dqn

SPACE = gymnasium.spaces.Box(-10, 10, (2,))
ACTIONS = gymnasium.spaces.Discrete(2)


def linear_dqn(**options):
    """A DQN whose Q-functions are linear, ``Q(s) = s @ W``: online ``W = I``, target ``W = diag(2, 0.5)``."""
    loss = rl_plugin_dqn.build_dqn({"hidden_sizes": [], "gamma": 0.5, **options}, SPACE, ACTIONS)
    with torch.no_grad():
        loss.qnet.net.weight0.copy_(torch.eye(2))
        loss.qnet.net.bias0.zero_()
        loss.target_qnet.net.weight0.copy_(torch.diag(torch.tensor([2.0, 0.5])))
        loss.target_qnet.net.bias0.zero_()
    return loss


def sample(terminated=False, steps=None, weight=None):
    """One transition: s = (1, 2), a = 1, r = 1, s' = (3, 4)."""
    data = {
        "observation": torch.tensor([[1.0, 2.0]]),
        "action": torch.tensor([1]),
        "next": {"observation": torch.tensor([[3.0, 4.0]]), "reward": torch.tensor([[1.0]]), "terminated": torch.tensor([[terminated]])},
    }
    if steps is not None:
        data["steps_to_next_obs"] = torch.tensor([[steps]])
    if weight is not None:
        data["_weight"] = torch.tensor([weight])
    return TensorDict(data, batch_size=[1])


# Q(s, a=1) = 2.  Online Q(s') = (3, 4): the greedy next action is 1.  Target Q(s') = (6, 2).
# double DQN: y = 1 + 0.5 * Q_target(s', 1) = 1 + 0.5 * 2 = 2
# DQN:        y = 1 + 0.5 * max Q_target(s') = 1 + 0.5 * 6 = 4
@pytest.mark.parametrize(("double", "target"), [(True, 2.0), (False, 4.0)])
def test_double_and_vanilla_targets(double, target):
    loss = linear_dqn(double_dqn=double)
    batch = sample(weight=1.0)  # a prioritized sample
    out = loss(batch)
    assert out["q_value"].item() == 2.0 and out["target_value"].item() == target
    assert batch["td_error"].tolist() == [abs(target - 2.0)]  # the new priority, written for the replay hook
    unweighted = sample()
    loss(unweighted)
    assert "td_error" not in unweighted.keys()


def test_termination_cuts_the_bootstrap_and_n_steps_discount_by_gamma_to_the_m():
    assert linear_dqn()(sample(terminated=True))["target_value"].item() == 1.0
    # three steps: y = r + 0.5**3 * Q_target(s', 1) = 1 + 0.125 * 2
    assert linear_dqn(n_step=3)(sample(steps=3))["target_value"].item() == 1.25


def test_huber_and_squared_losses_and_importance_weights():
    # DQN target 4, Q = 2: error 2; Huber: 2 - 0.5 = 1.5; squared: 4
    assert linear_dqn(double_dqn=False)(sample())["loss_q"].item() == pytest.approx(1.5)
    assert linear_dqn(double_dqn=False, loss="mse")(sample())["loss_q"].item() == pytest.approx(4.0)
    assert linear_dqn(double_dqn=False, loss="mse")(sample(weight=0.25))["loss_q"].item() == pytest.approx(1.0)


def test_gradient_reaches_the_online_network_only():
    loss = linear_dqn(double_dqn=False, loss="mse")
    loss(sample())["loss_q"].backward()
    # d/dW (Q(s,1) - y)^2 = 2 (Q - y) s  in column 1: 2 * (2 - 4) * (1, 2)
    assert torch.equal(loss.qnet.net.weight0.grad, torch.tensor([[0.0, -4.0], [0.0, -8.0]]))
    assert not list(loss.target_qnet.parameters())  # buffers, out of the optimizer's reach
    assert not any(t.requires_grad for t in loss.target_qnet.buffers())


def test_dueling_head_is_value_plus_centred_advantage():
    loss = rl_plugin_dqn.build_dqn({"hidden_sizes": [], "dueling": True}, SPACE, ACTIONS)
    heads = loss.qnet.heads
    with torch.no_grad():  # V(s) = s0 + s1, A(s) = (s0, 3 s1)
        heads.weight0.copy_(torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 3.0]]))
        heads.bias0.zero_()
    q = loss.qnet(torch.tensor([[1.0, 2.0]]))
    # V = 3, A = (1, 6), mean 3.5: Q = 3 + (1, 6) - 3.5
    assert q.tolist() == [[0.5, 5.5]]


def test_evaluation_is_greedy_and_collection_explores():
    loss = linear_dqn(eps_init=1.0, eps_end=1.0, init_random_frames=0)
    obs = TensorDict({"observation": torch.tensor([[1.0, 2.0]]).expand(2000, 2)}, batch_size=[2000])
    with set_interaction_type(InteractionType.DETERMINISTIC):
        assert (loss.policy(obs.clone())["action"] == 1).all()
    with set_interaction_type(InteractionType.RANDOM):
        assert 0.4 < (loss.policy(obs.clone())["action"] == 1).float().mean() < 0.6  # epsilon = 1: uniform


def test_image_observations_get_the_nature_dqn_and_vectors_the_mlp():
    import numpy as np

    import rlcore
    from rl_plugin_nets import CNN

    pong = gymnasium.spaces.Box(0, 255, (4, 84, 84), np.uint8)  # Atari preprocessing and a stack of 4
    loss = rl_plugin_dqn.build_dqn({}, pong, gymnasium.spaces.Discrete(6))
    qnet = loss.qnet
    assert isinstance(qnet.encoder, CNN) and [m.out_channels for m in qnet.encoder.net if hasattr(m, "out_channels")] == [32, 64, 64]
    assert qnet.heads.weight0.shape == (512, 6)  # a linear head on the 512 features: the Nature DQN
    convolutions = (4 * 8 * 8 + 1) * 32 + (32 * 4 * 4 + 1) * 64 + (64 * 3 * 3 + 1) * 64
    assert sum(p.numel() for p in qnet.parameters()) == convolutions + (64 * 7 * 7 + 1) * 512 + (512 + 1) * 6  # the paper's network
    frames = torch.randint(0, 256, (3, 4, 84, 84), dtype=torch.uint8)
    q = qnet(frames)  # uint8 in: scaled inside the CNN
    assert q.shape == (3, 6) and torch.allclose(loss.target_qnet(frames), q)  # the target starts as a copy
    minatar = gymnasium.spaces.Box(0, 1, (10, 10, 4), bool)
    dueling = rl_plugin_dqn.build_dqn({"dueling": True, "cnn_channels": [8], "cnn_features": 32}, minatar, gymnasium.spaces.Discrete(3))
    assert dueling.qnet.encoder.net[0].out_channels == 8 and dueling.qnet.heads.weight0.shape == (32, 1 + 3)
    assert dueling.qnet(torch.zeros(2, 10, 10, 4, dtype=torch.bool)).shape == (2, 3)
    assert rl_plugin_dqn.build_dqn({}, SPACE, ACTIONS).qnet.encoder is None
    flat = rl_plugin_dqn.build_dqn({"encoder": "mlp", "hidden_sizes": [8]}, minatar, gymnasium.spaces.Discrete(3))
    assert flat.qnet.encoder is None and flat.qnet.net.weight0.shape == (400, 8)
    pong_flat = rl_plugin_dqn.build_dqn({"encoder": "mlp", "hidden_sizes": [8]}, pong, gymnasium.spaces.Discrete(6)).qnet
    assert torch.equal(pong_flat(frames), pong_flat(frames.float() / 255))  # the MLP sees uint8 frames scaled, as the CNN does
    with pytest.raises(rlcore.ConfigError, match="algo.encoder: a CNN needs an image observation space"):
        rl_plugin_dqn.build_dqn({"encoder": "cnn"}, SPACE, ACTIONS)
