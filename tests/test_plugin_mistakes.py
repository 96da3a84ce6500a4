"""A plugin author's mistakes (``tests/mistakes/rl-plugin-intruder``, installed as a real distribution by the
``intruder`` fixture, for these tests only): each is named in one line, and the rest of rl-core works on.

The intruder's ``csv`` logger clashes with the builtin one, which refuses every run: the runs here block it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import rlcore
from rlcore._kernel.manager import where_failed

BY = "plugin 'intruder-factories' (rl-plugin-intruder)"


def runs_pm() -> rlcore.PluginManager:
    return rlcore.get_plugin_manager(block=["intruder-csv"])


def config(**sections: Any) -> dict[str, Any]:
    """A short PPO run: 2 batches of 64 frames."""
    base = {
        "algo": {"name": "ppo"},
        "env": {"num_envs": 2},
        "collector": {"frames_per_batch": 64},
        "trainer": {"total_frames": 128, "progress_bar": False, "seed": 0},
    }
    return {**base, **sections}


@pytest.mark.slow
def test_a_first_party_entry_point_name_stays_first_party(intruder: Path) -> None:
    infos = rlcore.get_plugin_manager().infos
    assert infos["pg"].distribution == "rl-plugin-pg" and infos["pg"].ok
    assert infos["pg (rl-plugin-intruder)"].status == "error: plugin name 'pg' is taken by rl-plugin-pg; rename this entry point"
    infos = rlcore.get_plugin_manager(block=["rl-plugin-intruder"]).infos  # blocking the intruder leaves rl-plugin-pg working
    assert infos["pg"].distribution == "rl-plugin-pg" and infos["pg"].ok and infos["pg (rl-plugin-intruder)"].status == "blocked"
    infos = rlcore.get_plugin_manager(block=["rl-plugin-pg"]).infos  # the user's choice: the other one
    assert infos["pg"].distribution == "rl-plugin-intruder" and infos["pg"].ok and infos["pg (rl-plugin-pg)"].status == "blocked"


@pytest.mark.slow
def test_a_plugin_that_replaces_a_command_adds_none(intruder: Path, rlctl_bare: Any) -> None:
    result = rlctl_bare("train", "--help")
    assert result.returncode == 0 and "--algo" in result.stdout
    assert rlctl_bare("boom").returncode == 2  # its other command is left out with it
    listed = {p["name"]: p for p in json.loads(rlctl_bare("plugins", "list", "--json").stdout)}
    status = "error: rl_register_commands failed: ValueError: it replaces the command 'train'; add a command of another name"
    assert listed["intruder-command"]["status"] == status
    result = rlctl_bare("--no-plugin", "intruder-csv", "config", "show", "ppo", "--env", "Boom-v0")  # its env is left out with its commands
    assert result.returncode == 2 and "unknown env 'Boom-v0'" in result.stderr
    assert f"plugin 'intruder-command' (rl-plugin-intruder) is not used: {status[7:]}" in result.stderr


def test_a_plugin_name_to_load_must_be_installed(intruder: Path, rlctl_bare: Any) -> None:
    result = rlctl_bare("--plugin", "nosuch", "plugins", "list")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("rlctl: error: --plugin: no installed plugin is named 'nosuch' (valid choices: ")
    assert "intruder-factories" in result.stderr and "Traceback" not in result.stderr
    result = rlctl_bare("plugins", "list", env={"RLCORE_PLUGINS": "rl-plugin-pg,nosuch"})
    assert result.returncode == 2 and result.stderr.startswith("rlctl: error: RLCORE_PLUGINS: no installed plugin is named 'nosuch'")
    result = rlctl_bare("--no-plugin", "nosuch", "--plugin", "rl-plugin-pg", "plugins", "list")  # blocked either way: a warning
    assert result.returncode == 0 and "rlctl: warning: --no-plugin nosuch: no installed plugin has that name" in result.stderr


def test_plugins_list_shows_a_name_registered_twice(intruder: Path) -> None:
    infos = {i.name: i for i in rlcore.describe_plugins(rlcore.get_plugin_manager())}
    assert infos["intruder-csv"].status == "error: loggers name 'csv' is also registered by 'rlcore.csv'; block one with --no-plugin"
    assert infos["rlcore.csv"].ok


def test_a_function_named_after_a_hook_implements_it(intruder: Path, tmp_path: Path) -> None:
    import rl_plugin_intruder

    pm = runs_pm()
    assert pm.infos["intruder-typo"].status == "error: implements unknown hook rl_post_step (did you mean rl_post_steps?)"
    rl_plugin_intruder._Counts.calls = 0
    trainer = rlcore.build_trainer(config(hooks={"counts": {}}), run_dir=tmp_path / "run", plugin_manager=pm)
    trainer.train()
    assert rl_plugin_intruder._Counts.calls == trainer.batches == 2


@pytest.mark.parametrize(
    ("hook", "message"),
    [
        ("returns_none", f"hooks.returns_none: {BY} returned None, expected an rlcore.TrainerHookBase or an object with hook methods"),
        ("returns_int", f"hooks.returns_int: {BY} returned 3, expected an rlcore.TrainerHookBase or an object with hook methods"),
        ("typo", f"hooks.typo: {BY} made an invalid hook: implements unknown hook rl_post_step (did you mean rl_post_steps?)"),
    ],
)
def test_a_hook_factory_that_makes_no_hook(intruder: Path, tmp_path: Path, hook: str, message: str) -> None:
    with pytest.raises(rlcore.PluginError) as info:
        rlcore.build_trainer(config(hooks={hook: {}}), run_dir=tmp_path / "run", plugin_manager=runs_pm())
    assert str(info.value) == message
    assert not (tmp_path / "run").exists()  # a run that cannot start removes the directory it made


def test_a_factory_whose_dependency_is_missing_is_a_one_line_plugin_error(intruder: Path, tmp_path: Path) -> None:
    with pytest.raises(rlcore.PluginError) as info:
        rlcore.build_trainer(config(hooks={"needs_a_module": {}}), run_dir=tmp_path / "run", plugin_manager=runs_pm())
    assert str(info.value) == f"{BY} making hook 'needs_a_module': needs the module 'nosuch_dependency', which is not installed"


def test_a_factory_that_raises_is_named(intruder: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="level must be even") as info:
        rlcore.build_trainer(config(hooks={"raises": {}}), run_dir=tmp_path / "run", plugin_manager=runs_pm())
    assert where_failed(info.value) == f"{BY} making hook 'raises': "
    with pytest.raises(rlcore.PluginError) as wrapper_info:
        rlcore.build_trainer(config(env={"wrappers": {"returns_none": {}}}), run_dir=tmp_path / "run", plugin_manager=runs_pm())
    assert str(wrapper_info.value) == f"env.wrappers.returns_none: {BY} returned None, expected a gymnasium.vector.VectorEnv"


@pytest.mark.slow
def test_from_the_command_line(intruder: Path, tmp_path: Path, rlctl_bare: Any) -> None:
    args = ["--plugin", "rl-plugin-pg", "--plugin", "intruder-factories", "train", "--algo", "ppo", "--set", "trainer.total_frames=128", "--set", "trainer.progress_bar=false"]
    result = rlctl_bare(*args, "--out", str(tmp_path / "a"), "--set", "hooks.returns_none={}")
    assert result.returncode == 2 and result.stderr.strip().splitlines() == [
        f"rlctl: error: hooks.returns_none: {BY} returned None, expected an rlcore.TrainerHookBase or an object with hook methods"
    ]
    result = rlctl_bare(*args, "--out", str(tmp_path / "b"), "--set", "hooks.raises={}", env={"RLCORE_TRACEBACK": "0"})
    assert result.returncode == 1 and result.stderr.strip().splitlines() == [
        f"rlctl: error: training failed: {BY} making hook 'raises': ValueError: level must be even"
    ]


@pytest.mark.parametrize(
    ("section", "where"),
    [
        # an op, not rlcore.ops.post_steps; the intruder's module is several entry points' (this test's): its distribution is named
        ({"hooks": {"op_raises": {}}}, "rl-plugin-intruder in rl_plugin_intruder._OpRaises.step at rl_post_steps: "),
        ({"env": {"wrappers": {"breaks_in_step": {}}}}, "rl-plugin-intruder in rl_plugin_intruder._breaks_in_step.<locals>.BreaksInStep.step: "),
    ],
)
def test_an_error_in_a_plugins_code_names_the_plugin(intruder: Path, tmp_path: Path, section: dict[str, Any], where: str) -> None:
    """Raised in an op, or in a wrapper's step (outside any hook call): the plugin whose code it came from is named."""
    trainer = rlcore.build_trainer(config(**section), run_dir=tmp_path / "run", plugin_manager=runs_pm())
    with pytest.raises((RuntimeError, ValueError), match="broke") as info:
        trainer.train()
    assert where_failed(info.value) == where


def test_an_op_that_cannot_take_its_call_is_refused_when_registered(intruder: Path, tmp_path: Path) -> None:
    with pytest.raises(TypeError) as info:
        rlcore.build_trainer(config(hooks={"op_raises": {"arity_wrong": True}}), run_dir=tmp_path / "run", plugin_manager=runs_pm())
    assert str(info.value).startswith("register_op('post_steps', _OpRaises.register.<locals>.<lambda>): it is called as op(), which its signature refuses")
    assert where_failed(info.value) == f"{BY} making hook 'op_raises': "


@pytest.mark.slow
def test_a_name_of_a_plugin_not_loaded_says_which_are_installed_but_not_loaded(intruder: Path, tmp_path: Path, rlctl_bare: Any) -> None:
    result = rlctl_bare("--plugin", "rl-plugin-pg", "train", "--algo", "ppo", "--out", str(tmp_path / "a"), "--set", "hooks.counts={}")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("rlctl: error: hooks: unknown hook 'counts' (valid choices: ")
    assert "installed but not loaded in this run (--plugin, --no-plugin, RLCORE_PLUGINS): " in result.stderr
    assert "intruder-factories (rl-plugin-intruder)" in result.stderr and "rl-plugin-dqn" not in result.stderr  # first-party ones say it otherwise


def test_a_config_whose_plugin_is_gone_says_so_before_the_name_it_does_not_know(tmp_path: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("algo: {name: ppo}\nhooks: {counts: {}}\nplugins: {rl-plugin-gone: 1.0.0}\n")
    gone = pytest.warns(UserWarning, match="the config was written with rl-plugin-gone 1.0.0, which is not installed")
    with gone, pytest.raises(rlcore.ConfigError, match="unknown hook 'counts'"):
        rlcore.load_config(config)


def test_env_kwargs_of_a_registered_env_are_checked_against_its_factory(intruder: Path, tmp_path: Path) -> None:
    pm = runs_pm()
    with pytest.raises(rlcore.ConfigError, match=r"^env\.kwargs\.length: expected an integer >= 1, got 0$"):
        rlcore.build_trainer(config(env={"id": "Intruder-v0", "kwargs": {"length": 0}}), run_dir=tmp_path / "run", plugin_manager=pm)
    env = rlcore.make_vector_env("Intruder-v0", 1, kwargs={"length": 3}, plugin_manager=pm)
    env.reset(seed=0)
    ends = [bool(env.step(env.action_space.sample())[3][0]) for _ in range(3)]
    env.close()
    assert ends == [False, False, True]  # truncated at its length (unless it fell first: seed 0 does not)


def test_the_resolved_config_pins_the_defaults_of_a_registered_envs_options(intruder: Path) -> None:
    """As a hook's or a logger's: config.yaml then reproduces the run if the plugin's defaults change."""
    pm = runs_pm()
    resolved = rlcore.load_config(algo={"name": "ppo"}, env={"id": "Intruder-v0"}, plugin_manager=pm)
    assert resolved["env"]["kwargs"] == {"length": 5, "render_mode": None}
    given = rlcore.load_config(algo={"name": "ppo"}, env={"id": "Intruder-v0", "kwargs": {"length": 7}}, plugin_manager=pm)
    assert given["env"]["kwargs"] == {"length": 7, "render_mode": None}


@pytest.mark.slow
def test_a_hook_that_never_returns_is_stopped_by_a_second_sigterm_that_names_it(intruder: Path, tmp_path: Path) -> None:
    """The first SIGTERM waits for the batch, which never ends, and says where it is stuck; the second stops at once,
    names the hook it stopped and what the run keeps, and exits 143 (a SIGTERM's code, as the first would have)."""
    import csv
    import signal
    import subprocess
    import sys
    import time

    run = tmp_path / "run"
    sets = ["collector.frames_per_batch=64", "trainer.save_trainer_interval=64", "trainer.progress_bar=false", "hooks.hangs={frames: 64}"]
    argv = ["--plugin", "rl-plugin-pg", "--plugin", "intruder-factories", "train", "--algo", "ppo", "--out", str(run)]
    process = subprocess.Popen([sys.executable, "-m", "rlcore", *argv, *(a for s in sets for a in ("--set", s))], stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (run / "hanging").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        time.sleep(6.0)  # (rlctl says where it is stuck after 5 s)
        assert process.poll() is None  # the batch never ends, so neither does the run
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 143, err[-2000:]
    assert "Traceback" not in err
    hook = f"hook 'hangs' of {BY} at rl_post_optim"
    assert f"rlctl: still running 5 s after the SIGTERM, in {hook}; a second SIGTERM stops at once" in err.splitlines(), err[-2000:]
    assert err.strip().splitlines()[-1] == (
        f"rlctl: SIGTERM again: stopped at once in {hook}; "
        "the frames since its last checkpoint, ckpt-000000000064.pt, are lost (--resume continues from it)"
    ), err[-2000:]
    with open(run / "metrics.csv", newline="") as handle:
        assert max(int(row["frames"]) for row in csv.DictReader(handle)) >= 64  # what was logged stays


@pytest.mark.slow
def test_a_plugin_that_never_returns_is_given_up_at_its_deadline_and_named(stuck: Path, tmp_path: Path, rlctl_bare: Any) -> None:
    """Its import, or its registry hook, never returns: rlctl --help, plugins list and a run go on without it."""
    env = {"RLCORE_PLUGIN_TIMEOUT": "1"}
    assert rlctl_bare("--help", env=env, subprocess=True).returncode == 0
    listed = rlctl_bare("plugins", "list", "--json", env=env, subprocess=True)
    status = {p["name"]: p["status"] for p in json.loads(listed.stdout)}
    assert status["stuck-import"] == "error: import failed: TimeoutError: did not return within 1 s (RLCORE_PLUGIN_TIMEOUT)"
    assert status["stuck-registry"] == "error: rl_register_hooks failed: TimeoutError: did not return within 1 s (RLCORE_PLUGIN_TIMEOUT)"
    args = ("--plugin", "rl-plugin-pg", "--plugin", "stuck-registry", "train", "--algo", "ppo", "--frames", "64", "--set", "collector.frames_per_batch=64")
    done = rlctl_bare(*args, "--out", str(tmp_path / "run"), env=env, subprocess=True)
    assert done.returncode == 0, done.stderr
    assert "rlctl: warning: plugin 'stuck-registry' (rl-plugin-stuck) is not used: rl_register_hooks failed: TimeoutError" in done.stderr
    refused = rlctl_bare("--help", env={"RLCORE_PLUGIN_TIMEOUT": "soon"}, subprocess=True)
    assert refused.returncode == 2 and refused.stderr.strip() == (
        "rlctl: error: RLCORE_PLUGIN_TIMEOUT: expected a number of seconds > 0 (or inf), got 'soon'"
    )


@pytest.mark.slow
def test_ctrl_c_while_a_plugin_is_imported_is_one_line_and_exit_130(stuck: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    process = subprocess.Popen([sys.executable, "-m", "rlcore", "plugins", "list"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(3)  # (the stuck import waits out its 60 s)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130 and err.strip() == "rlctl: interrupted while the plugins were loaded", err
