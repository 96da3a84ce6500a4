"""Discovery, the default config, and one clear line for bad input."""

from __future__ import annotations

import subprocess
import sys

import gymnasium
import pytest

import rl_plugin_dqn
import rlcore


def test_discovered_through_its_entry_point():
    info = {i.name: i for i in rlcore.describe_plugins(rlcore.get_plugin_manager())}["dqn"]
    assert info.status == "ok" and info.distribution == "rl-plugin-dqn"
    assert info.provides == {"algorithms": ["dqn"]}


def test_importing_the_plugin_does_not_import_torch():
    code = "import sys, rl_plugin_dqn; rl_plugin_dqn.rl_register_algorithms(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "False"


def test_the_default_config_lists_the_replay_hooks():
    config = rlcore.load_config(algo={"name": "dqn"})
    assert config["env"]["id"] == "CartPole-v1"
    assert config["hooks"]["replay_buffer"]["batch_size"] == 64
    assert config["hooks"]["target_updater"] == {"kind": "hard", "tau": 0.005, "interval": 128}  # (tau: the default, unused by hard)
    assert config["trainer"]["optim_steps_per_batch"] == 128 and config["collector"]["frames_per_batch"] == 256
    assert {k for k in config["algo"] if k != "name"} == set(rl_plugin_dqn.DQNOptions.__dataclass_fields__)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("algo.loss=hubber", "algo.loss: unknown value 'hubber' (valid choices: huber, mse)"),
        ("algo.n_step=0", "algo.n_step"),
        ("algo.duelling=true", "unknown key algo.duelling"),
        ("hooks.target_updater.kind=polyak", "hooks.target_updater.kind: unknown value 'polyak'"),
    ],
)
def test_bad_input_is_one_line_naming_the_key(override, message):
    with pytest.raises(rlcore.ConfigError) as err:
        rlcore.load_config(overrides=["algo.name=dqn", override])
    assert message in str(err.value) and "\n" not in str(err.value)


def test_continuous_actions_are_refused_with_the_reason():
    env = gymnasium.make("Pendulum-v1")
    with pytest.raises(rlcore.ConfigError, match="dqn needs a Discrete action space"):
        rl_plugin_dqn.build_dqn({}, env.observation_space, env.action_space)
