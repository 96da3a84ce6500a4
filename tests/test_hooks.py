"""One test per registry hook not covered elsewhere: envs, hooks, commands (the loop hooks: test_trainer.py)."""

from __future__ import annotations

import rlcore


def test_rl_register_envs(toy_pm, tmp_path):
    trainer = rlcore.build_trainer(
        {"algo": {"name": "toy"}, "env": {"id": "short-cartpole", "kwargs": {"max_steps": 3}}, "trainer": {"total_frames": 64}},
        run_dir=tmp_path,
        plugin_manager=toy_pm,
    )
    trainer.train()
    _, lengths = trainer.collector.finished_episodes
    assert set(lengths.tolist()) <= {1, 2, 3} and 3 in lengths.tolist()


def test_rl_register_hooks_with_options_and_state(toy_pm, tmp_path):
    config = {"algo": {"name": "toy"}, "hooks": {"counter": {"start": 100}}, "trainer": {"total_frames": 128}}
    trainer = rlcore.build_trainer(config, run_dir=tmp_path, plugin_manager=toy_pm)
    trainer.train()
    _, state = trainer.checkpoint.load()
    assert state["modules"]["counter"] == {"count": 104}  # 2 batches x 2 optimizer steps
    bad = {**config, "hooks": {"counter": {"begin": 1}}}
    try:
        rlcore.load_config(plugin_manager=toy_pm, **bad)
    except rlcore.ConfigError as err:
        assert str(err) == "unknown key hooks.counter.begin (valid choices: start)"
    else:
        raise AssertionError("an unknown hook option must be refused")


def test_rl_register_commands(with_plugins, rlctl):
    help_text = rlctl("--help").stdout
    assert "recorder-hello" in help_text
    result = rlctl("recorder-hello", "world")
    assert result.returncode == 0 and result.stdout == "hello world\n"
    blocked = rlctl("--no-plugin", "hookrecorder", "recorder-hello", "world")
    assert blocked.returncode == 2 and "No such command 'recorder-hello'" in blocked.stderr
