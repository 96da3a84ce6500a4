"""Discovery, the default config, and one clear line for bad input."""

from __future__ import annotations

import subprocess
import sys

import gymnasium
import pytest

import rl_plugin_sac
import rlcore


def test_discovered_through_its_entry_point():
    info = {i.name: i for i in rlcore.describe_plugins(rlcore.get_plugin_manager())}["sac"]
    assert info.status == "ok" and info.distribution == "rl-plugin-sac"
    assert info.provides == {"algorithms": ["sac"]}


def test_importing_the_plugin_does_not_import_torch():
    code = "import sys, rl_plugin_sac; rl_plugin_sac.rl_register_algorithms(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "False"


def test_the_default_config_lists_the_replay_hooks():
    config = rlcore.load_config(algo={"name": "sac"})
    assert config["env"]["id"] == "Pendulum-v1"
    assert config["hooks"]["target_updater"] == {"kind": "soft", "tau": 0.005, "interval": 1}
    assert config["hooks"]["replay_buffer"]["batch_size"] == 256
    assert config["collector"]["frames_per_batch"] == 1 and config["trainer"]["optim_steps_per_batch"] == 1
    assert {k for k in config["algo"] if k != "name"} == set(rl_plugin_sac.SACOptions.__dataclass_fields__)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("algo.activation=sigmoid", "algo.activation: unknown value 'sigmoid'"),
        ("algo.init_alpha=0", "algo.init_alpha"),
        ("algo.learn_alpha=maybe", "algo.learn_alpha: expected true or false"),
        ("algo.log_std_min=3", "algo.log_std_min: expected less than algo.log_std_max"),
    ],
)
def test_bad_input_is_one_line_naming_the_key(override, message):
    with pytest.raises(rlcore.ConfigError) as err:
        config = rlcore.load_config(overrides=["algo.name=sac", override])
        env = gymnasium.make("Pendulum-v1")
        rl_plugin_sac.build_sac(config["algo"], env.observation_space, env.action_space)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_discrete_actions_are_refused_with_the_reason():
    env = gymnasium.make("CartPole-v1")
    with pytest.raises(rlcore.ConfigError, match="sac needs a one-dimensional Box action space"):
        rl_plugin_sac.build_sac({}, env.observation_space, env.action_space)
