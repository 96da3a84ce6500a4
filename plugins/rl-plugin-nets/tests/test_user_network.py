"""``algo.network``: a user's encoder factory, given the spaces, in every algorithm that has an encoder (pg, dqn, sac, td3)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from torch import nn

import rlcore

USERNETS = '''
from torch import nn

CALLS = []


class Body(nn.Module):
    """A user's encoder: a linear layer, layer norm, tanh."""

    def __init__(self, size):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(size, 32), nn.LayerNorm(32), nn.Tanh())

    def forward(self, x):
        return self.layers(x)


def make(observation_space, action_space):
    CALLS.append((observation_space.shape, action_space))
    return Body(observation_space.shape[0])


def not_a_module(observation_space, action_space):
    return "a string"


def flat(observation_space, action_space):
    return nn.Flatten(0)
'''


@pytest.fixture
def usernets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> object:
    (tmp_path / "usernets.py").write_text(USERNETS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "usernets", raising=False)
    import usernets

    return usernets


def _config(algo: str, network: str) -> dict[str, object]:
    env = "CartPole-v1" if algo in ("ppo", "dqn") else "Pendulum-v1"
    return {
        "algo": {"name": algo, "network": network, **({"init_random_frames": 64} if algo != "ppo" else {})},
        "env": {"id": env, "num_envs": 1},
        "trainer": {"total_frames": 128, "seed": 0, "progress_bar": False},
        "collector": {"frames_per_batch": 128 if algo == "ppo" else 1},
        "loggers": {},
    }


@pytest.mark.parametrize("algo", ["ppo", "dqn", "sac", "td3"])
def test_each_algorithm_reads_observations_through_the_users_network(algo: str, usernets: object, tmp_path: Path) -> None:
    pytest.importorskip({"ppo": "rl_plugin_pg", "dqn": "rl_plugin_dqn", "sac": "rl_plugin_sac", "td3": "rl_plugin_td3"}[algo])
    trainer = rlcore.build_trainer(_config(algo, "usernets:make"), tmp_path / "run")
    (shape, action_space), *_ = usernets.CALLS  # type: ignore[attr-defined]
    assert shape == ((4,) if algo in ("ppo", "dqn") else (3,)) and action_space == trainer.make_env(1).single_action_space
    bodies = [m for m in trainer.loss_module.modules() if type(m).__name__ == "Body"]
    assert bodies and all(isinstance(m.layers[1], nn.LayerNorm) for m in bodies)
    before = [p.detach().clone() for p in bodies[0].parameters()]
    trainer.train()
    assert any(not (a == b.detach()).all() for a, b in zip(before, bodies[0].parameters()))  # it learns with the rest
    policy = rlcore.load_policy(tmp_path / "run")  # a run of it loads again, the factory imported by its path
    assert any(type(m).__name__ == "Body" for m in policy.module.modules())
    policy.close()


@pytest.mark.parametrize(
    ("network", "message"),
    [
        ("usernets:nope", r"^algo\.network: "),
        ("usernets:not_a_module", r"^algo\.network: usernets:not_a_module\(observation_space, action_space\) returned str, expected a torch\.nn\.Module$"),
        ("usernets:flat", r"^algo\.network: Flatten maps observations \(2, 4\) to \(8,\), expected features \(2, N\)$"),
    ],
)
def test_a_network_that_does_not_fit_is_one_line(network: str, message: str, usernets: object, tmp_path: Path) -> None:
    with pytest.raises(rlcore.ConfigError, match=message):
        rlcore.build_trainer(_config("ppo", network), tmp_path / "run")
    assert not (tmp_path / "run").exists()


def _widths(module: nn.Module) -> list[int]:
    """The output width of each layer of a module, in order: its biases' last dimension (twin critics keep theirs stacked)."""
    return [int(p.shape[-1]) for name, p in module.named_parameters() if name.rsplit(".", 1)[-1].startswith("bias")]


@pytest.mark.parametrize(
    ("algo", "net_arch", "heads"),
    [
        ("ppo", {"pi": [32], "vf": [16, 8]}, {"actor_net": [32, 2], "critic_net": [16, 8, 1]}),
        ("dqn", {"qf": [24]}, {"qnet": [24, 2]}),
        ("sac", {"pi": [20], "qf": [12, 12]}, {"actor": [20, 2], "critic": [12, 12, 1]}),
        ("td3", {"pi": [20], "qf": [12]}, {"actor": [20, 1], "critic": [12, 1]}),
    ],
)
def test_net_arch_gives_each_head_its_own_widths(algo: str, net_arch: dict[str, list[int]], heads: dict[str, list[int]], tmp_path: Path) -> None:
    pytest.importorskip({"ppo": "rl_plugin_pg", "dqn": "rl_plugin_dqn", "sac": "rl_plugin_sac", "td3": "rl_plugin_td3"}[algo])
    config = _config(algo, None)
    config["algo"] = {**config["algo"], "net_arch": net_arch}  # type: ignore[dict-item]
    del config["algo"]["network"]  # type: ignore[attr-defined]
    trainer = rlcore.build_trainer(config, tmp_path / "run")
    loss = trainer.loss_module
    for attribute, widths in heads.items():
        head = getattr(loss.policy if algo == "ppo" else loss, attribute)
        assert _widths(head)[: len(widths)] == widths, (attribute, _widths(head))
    trainer.train()
