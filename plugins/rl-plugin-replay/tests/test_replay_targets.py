"""Hard and soft target updates, exactly."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from rl_plugin_replay import HardUpdate, SoftUpdate, TargetNetworks, make_target


class Loss(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
        self.target = make_target(self.net)

    def target_networks(self):
        return [(self.net, self.target)]

    def perturb(self) -> None:
        with torch.no_grad():
            for p in self.net.parameters():
                p.add_(torch.randn_like(p))
            self.net[1].running_mean.add_(1.0)


def flat(module: nn.Module) -> torch.Tensor:
    return torch.cat([t.flatten().float() for t in module.state_dict().values() if t.is_floating_point()])


def test_make_target_is_a_frozen_copy():
    loss = Loss()
    assert isinstance(loss, TargetNetworks)
    assert torch.equal(flat(loss.net), flat(loss.target))
    assert not list(loss.target.parameters())  # buffers: no optimizer of loss.parameters() sees them
    assert loss.target.state_dict().keys() == loss.net.state_dict().keys()
    assert all(a.data_ptr() != b.data_ptr() for a, b in zip(loss.net.state_dict().values(), loss.target.state_dict().values(), strict=True))
    x = torch.randn(5, 3)
    loss.net.eval(), loss.target.eval()
    assert torch.equal(loss.net(x), loss.target(x))


def test_hard_update_copies_every_interval_steps():
    loss = Loss()
    updater = HardUpdate(loss, interval=3)
    before = flat(loss.target).clone()
    for step in range(1, 7):
        loss.perturb()
        updater.step()
        if step % 3:
            assert torch.equal(flat(loss.target), before), step
        else:
            assert torch.equal(flat(loss.target), flat(loss.net)), step  # parameters and running statistics
            before = flat(loss.target).clone()
    assert updater.state_dict() == {"steps": 6}


def test_soft_update_is_polyak_averaging():
    loss = Loss()
    tau = 0.25
    updater = SoftUpdate(loss, tau=tau)
    loss.perturb()
    target, online = flat(loss.target).clone(), flat(loss.net).clone()
    updater.step()
    assert torch.allclose(flat(loss.target), (1 - tau) * target + tau * online, rtol=0, atol=1e-6)
    assert not torch.equal(flat(loss.target), online)


def test_torchrl_s_keywords_and_init_():
    """``HardUpdate(loss, value_network_update_interval=N)``, ``SoftUpdate(loss, eps=1 - tau)`` and ``init_()``, as in TorchRL."""
    loss = Loss()
    hard = HardUpdate(loss, value_network_update_interval=2)
    assert hard.interval == 2
    soft = SoftUpdate(loss, eps=0.75)
    loss.perturb()
    target, online = flat(loss.target).clone(), flat(loss.net).clone()
    soft.step()
    assert soft.tau == 0.25 and torch.allclose(flat(loss.target), 0.75 * target + 0.25 * online, rtol=0, atol=1e-6)
    soft.init_()
    assert torch.equal(flat(loss.target), flat(loss.net))
    with pytest.raises(ValueError, match="tau or eps"):
        SoftUpdate(loss, tau=0.1, eps=0.9)
    with pytest.raises(ValueError, match="interval or value_network_update_interval"):
        HardUpdate(loss, interval=5, value_network_update_interval=10)
    with pytest.raises(RuntimeError, match="init_\\(\\) needs the loss module"):
        HardUpdate().init_()


def test_an_updater_made_before_the_module_moves_updates_the_moved_targets():
    loss = Loss()
    updater = HardUpdate(loss)
    loss.double()  # (as .to("cuda") would) new tensors behind the same modules
    loss.perturb()
    updater.step()
    assert torch.equal(flat(loss.target), flat(loss.net))


def test_the_step_count_is_restored():
    loss = Loss()
    updater = SoftUpdate(loss, tau=0.5, interval=2)
    updater.load_state_dict({"steps": 1})
    loss.perturb()
    before = flat(loss.target).clone()
    updater.step()  # the second step of the count: an update
    assert not torch.equal(flat(loss.target), before)


def test_bad_arguments():
    with pytest.raises(TypeError, match="target_networks"):
        HardUpdate(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="tau"):
        SoftUpdate(Loss(), tau=0.0)
    with pytest.raises(ValueError, match="interval"):
        HardUpdate(Loss(), interval=0)
