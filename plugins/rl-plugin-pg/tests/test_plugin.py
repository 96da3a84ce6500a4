"""Discovery through the entry point, the registered algorithms and their default configs."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

import rl_plugin_pg
import rlcore

ALGORITHMS = ["a2c", "pg", "ppo", "ppo-kl", "spg"]


def test_discovered_through_its_entry_point():
    infos = {info.name: info for info in rlcore.describe_plugins(rlcore.get_plugin_manager())}
    info = infos["pg"]
    assert info.status == "ok"
    assert info.distribution == "rl-plugin-pg"
    assert info.provides == {"algorithms": ALGORITHMS}
    assert info.hooks == ["rl_register_algorithms"]


def test_importing_the_plugin_does_not_import_torch():
    code = "import sys, rl_plugin_pg; rl_plugin_pg.rl_register_algorithms(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("name", ALGORITHMS)
def test_defaults_resolve_and_build(name):
    import gymnasium

    config = rlcore.load_config(algo={"name": name})
    algo = {k: v for k, v in config["algo"].items() if k != "name"}
    assert set(algo) == {f.name for f in dataclasses.fields(rl_plugin_pg.OPTIONS[name])}
    assert all(algo[k] == v for k, v in rl_plugin_pg.DEFAULTS[name]["algo"].items())
    algorithm = rlcore.get_plugin_manager().factory("algorithms", name)
    for env_id in ("CartPole-v1", "Pendulum-v1"):
        env = gymnasium.make(env_id)
        loss = algorithm.build(config=algo, observation_space=env.observation_space, action_space=env.action_space, device="cpu")
        assert loss.optim_steps_per_batch == algo["epochs"] * algo["minibatches"]
        assert loss.policy is not None


def test_unknown_algo_key_is_refused():
    with pytest.raises(rlcore.ConfigError, match="algo.clip_rnage"):
        rlcore.load_config(algo={"name": "ppo", "clip_rnage": 0.1})
    import gymnasium

    from rl_plugin_pg._build import build_loss

    env = gymnasium.make("CartPole-v1")
    with pytest.raises(ValueError, match="clip_range"):
        build_loss("a2c", {"clip_range": 0.1}, env.observation_space, env.action_space)


def test_more_minibatches_than_a_batch_has_transitions_are_refused_before_training(tmp_path):
    config = rlcore.load_config(overrides=["algo.name=ppo", "algo.minibatches=300", "collector.frames_per_batch=256", "trainer.total_frames=512"])
    trainer = rlcore.build_trainer(config, run_dir=tmp_path / "run")
    with pytest.raises(rlcore.ConfigError, match=r"^algo.minibatches: 300 minibatches of a batch of 256 transitions leave some empty: at most 256$"):
        trainer.train()
    assert trainer.collected_frames == 0


def test_a_batch_without_a_key_the_loss_reads_is_refused_in_one_line(tmp_path):
    pytest.importorskip("rl_plugin_hooks")
    config = rlcore.load_config(
        overrides=[
            "algo.name=ppo", "env.num_envs=2", "collector.frames_per_batch=32", "trainer.total_frames=64", "trainer.progress_bar=false",
            "loggers.console=null", "hooks.select_keys={keys: [observation, action, sample_log_prob, next.reward, next.observation, next.terminated]}",
        ]
    )  # fmt: skip
    trainer = rlcore.build_trainer(config, run_dir=tmp_path / "run")
    with pytest.raises(rlcore.ConfigError, match=r"^algo: the batch has no key 'next.done', which the policy-gradient loss reads \(the batch has: action, "):
        trainer.train()
