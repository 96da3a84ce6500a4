"""Discovery, the default configs of td3 and ddpg, and one clear line for bad input."""

from __future__ import annotations

import subprocess
import sys

import gymnasium
import pytest

import rl_plugin_td3
import rlcore


def test_discovered_through_its_entry_point():
    info = {i.name: i for i in rlcore.describe_plugins(rlcore.get_plugin_manager())}["td3"]
    assert info.status == "ok" and info.distribution == "rl-plugin-td3"
    assert info.provides == {"algorithms": ["ddpg", "td3"]}


def test_importing_the_plugin_does_not_import_torch():
    code = "import sys, rl_plugin_td3; rl_plugin_td3.rl_register_algorithms(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "False"


def test_the_default_configs():
    td3 = rlcore.load_config(algo={"name": "td3"})
    assert td3["env"]["id"] == "Pendulum-v1"
    assert td3["hooks"]["target_updater"] == {"kind": "soft", "tau": 0.005, "interval": 2}  # the targets move with the delayed actor
    assert td3["algo"]["policy_delay"] == 2 and td3["algo"]["twin"] is True and td3["algo"]["target_noise"] == 0.2
    assert td3["algo"]["exploration"] == "gaussian" and td3["algo"]["exploration_sigma"] == 0.1
    assert td3["hooks"]["replay_buffer"]["batch_size"] == 256
    assert td3["collector"]["frames_per_batch"] == 1 and td3["trainer"]["optim_steps_per_batch"] == 1
    assert {k for k in td3["algo"] if k != "name"} == set(rl_plugin_td3.TD3Options.__dataclass_fields__)
    ddpg = rlcore.load_config(algo={"name": "ddpg"})
    assert ddpg["hooks"]["target_updater"] == {"kind": "soft", "tau": 0.005, "interval": 1}
    assert (ddpg["algo"]["twin"], ddpg["algo"]["policy_delay"], ddpg["algo"]["target_noise"]) == (False, 1, 0.0)
    assert ddpg["algo"]["exploration"] == "ou"
    env = gymnasium.make("Pendulum-v1")
    loss = rl_plugin_td3.build_td3(ddpg["algo"], env.observation_space, env.action_space)
    assert loss.critic.critics == 1 and type(loss.policy).__name__ == "OrnsteinUhlenbeck"


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("algo.activation=sigmoid", "algo.activation: unknown value 'sigmoid'"),
        ("algo.policy_delay=0", "algo.policy_delay"),
        ("algo.target_noise=-0.1", "algo.target_noise"),
        ("algo.twin=maybe", "algo.twin: expected true or false"),
        ("algo.exploration=pink", "algo.exploration: unknown value 'pink'"),
        ("algo.ou_dt=0", "algo.ou_dt"),
        ("algo.exploration_sigma_end=0.01", "algo.exploration_annealing_frames: algo.exploration_sigma_end (0.01)"),
    ],
)
def test_bad_input_is_one_line_naming_the_key(override, message):
    with pytest.raises(rlcore.ConfigError) as err:
        config = rlcore.load_config(overrides=["algo.name=td3", override])
        env = gymnasium.make("Pendulum-v1")
        rl_plugin_td3.build_td3(config["algo"], env.observation_space, env.action_space)
    assert message in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("algo", ["td3", "ddpg"])
def test_discrete_actions_are_refused_with_the_reason(algo):
    env = gymnasium.make("CartPole-v1")
    with pytest.raises(rlcore.ConfigError, match=f"algo.name: {algo} needs a one-dimensional Box action space") as err:
        registered = {a.name: a for a in rl_plugin_td3.rl_register_algorithms()}  # called as rl-core calls it: no name in the section
        registered[algo].build({}, env.observation_space, env.action_space)
    assert "\n" not in str(err.value)
