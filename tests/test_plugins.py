"""Discovery through entry points, status of broken and blocked plugins, `rlctl plugins list`."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import rlcore


def test_test_plugin_is_discovered_with_its_hooks_and_provides(with_plugins):
    pm = rlcore.get_plugin_manager()
    info = {i.name: i for i in rlcore.describe_plugins(pm)}["hookrecorder"]
    assert info.status == "ok"
    assert info.distribution == "rl-plugin-hookrecorder"
    assert info.version == "1.2.3"
    assert "rl_post_optim_log" in info.hooks and "rl_setup" in info.hooks
    assert info.provides == {"algorithms": ["toy"], "commands": ["recorder-hello"], "envs": ["opaque-cartpole", "short-cartpole"], "hooks": ["counter"]}


def test_builtins_are_plugins_and_blockable(with_plugins):
    pm = rlcore.get_plugin_manager()
    builtins = {i.name for i in rlcore.describe_plugins(pm) if i.builtin}
    assert builtins == {"rlcore.csv", "rlcore.console", "rlcore.torch_checkpoint", "rlcore.gymnasium"}
    blocked = rlcore.get_plugin_manager(block=["rlcore.csv"])
    assert blocked.infos["rlcore.csv"].status == "blocked"
    assert "csv" not in blocked.registry("loggers")
    with pytest.raises(rlcore.PluginError, match="'csv' needs plugin 'rlcore.csv' .* which is blocked"):
        blocked.factory("loggers", "csv")


def test_plugin_raising_on_import_is_an_error_status(with_plugins):
    info = rlcore.get_plugin_manager().infos["broken"]
    assert info.status == "error: import failed: RuntimeError: this plugin is broken on purpose"


def test_unknown_hook_is_an_error_status_and_unregistered(with_plugins):
    pm = rlcore.get_plugin_manager()
    assert pm.infos["badhook"].status == "error: implements unknown hook rl_not_a_hook"
    assert pm.get_plugin("badhook") is None


def test_spec_mismatch_fails_pluggy_validation(with_plugins):
    pm = rlcore.get_plugin_manager()
    status = pm.infos["badsig"].status
    assert status == "error: rl_post_steps takes no argument 'weather' (valid choices: trainer)"
    assert "badsig_logger" not in pm.registry("loggers")


def test_rlcore_plugins_env_restricts_before_import(with_plugins, monkeypatch):
    monkeypatch.setenv("RLCORE_PLUGINS", "rl-plugin-hookrecorder")
    sys.modules.pop("rl_plugin_broken", None)
    pm = rlcore.get_plugin_manager()
    assert pm.infos["hookrecorder"].status == "ok"
    assert pm.infos["broken"].status == "blocked"
    assert "rl_plugin_broken" not in sys.modules  # never imported
    assert pm.infos["rlcore.csv"].status == "ok"  # builtins load unless blocked by name
    monkeypatch.setenv("RLCORE_PLUGINS", "")
    assert rlcore.get_plugin_manager().infos["hookrecorder"].status == "blocked"


def test_plugins_list_json_never_fails_and_shows_errors(with_plugins, rlctl):
    result = rlctl("plugins", "list", "--json", "--all")
    assert result.returncode == 0, result.stderr
    listed = {p["name"]: p for p in json.loads(result.stdout)}
    for name in ("rlcore.csv", "rlcore.console", "rlcore.torch_checkpoint", "hookrecorder", "broken", "badhook", "badsig"):
        assert {"name", "version", "hooks", "provides", "status"} <= set(listed[name])
    assert listed["broken"]["status"].startswith("error: ")
    assert listed["hookrecorder"]["provides"]["algorithms"] == ["toy"]
    assert listed["rlcore.csv"]["provides"] == {"loggers": ["csv"]}
    without_all = {p["name"] for p in json.loads(rlctl("plugins", "list", "--json").stdout)}
    assert "rlcore.csv" not in without_all and "hookrecorder" in without_all


def test_no_plugin_flag_blocks(with_plugins, rlctl):
    result = rlctl("--no-plugin", "rl-plugin-hookrecorder", "plugins", "list")
    assert result.returncode == 0
    assert "hookrecorder  (rl-plugin-hookrecorder 1.2.3)  blocked" in result.stdout
    result = rlctl("--plugin", "hookrecorder", "plugins", "list")
    assert "broken  (rl-plugin-broken 0.0.1)  blocked" in result.stdout


@pytest.mark.parametrize("argv", [["--help"], ["plugins", "list", "--all"]])
def test_listing_and_help_do_not_import_torch(with_plugins, argv):
    code = (
        "import sys; from rlcore._app.cli import main\n"
        f"try:\n    main({argv!r})\nexcept SystemExit as e:\n    assert e.code == 0, e.code\n"
        "heavy = [m for m in ('torch', 'tensordict', 'gymnasium') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_duplicate_names_are_a_clear_error(with_plugins):
    pm = rlcore.get_plugin_manager(block=["broken", "badhook", "badsig"])

    class Clash:
        @rlcore.hookimpl
        def rl_register_loggers(self):
            return {"csv": object}

    pm.add_plugin(Clash(), "clash")
    with pytest.raises(rlcore.PluginError, match="loggers name 'csv' is registered by both"):
        pm.registry("loggers")


def test_missing_first_party_capability_names_the_distribution(with_plugins):
    pm = rlcore.PluginManager(discover=False)  # nothing installed
    with pytest.raises(rlcore.ConfigError, match=r"algo.name: unknown algorithm 'ppo' \(valid choices: none loaded\); install rl-plugin-pg for it"):
        pm.factory("algorithms", "ppo", key="algo.name")
    blocked = rlcore.get_plugin_manager(only=["hookrecorder"])
    if "pg" in blocked.infos:  # rl-plugin-pg is installed in the development set-up
        with pytest.raises(rlcore.PluginError, match=r"algorithm 'ppo' needs plugin 'pg' \(rl-plugin-pg\), which is blocked"):
            blocked.factory("algorithms", "ppo")


def test_a_plugin_whose_registry_hook_fails_takes_no_part_in_the_run(toy_pm, tmp_path):
    calls: list[int] = []

    class HalfBroken:  # registers wrappers wrongly, and would also act in the loop
        @rlcore.hookimpl
        def rl_register_env_wrappers(self):
            raise RuntimeError("the registry exploded")

        @rlcore.hookimpl
        def rl_post_steps(self, trainer):
            calls.append(trainer.collected_frames)

    assert toy_pm.add_plugin(HalfBroken(), "halfbroken")
    with pytest.warns(UserWarning, match=r"plugin 'halfbroken' \(\?\) is not used: rl_register_env_wrappers failed: RuntimeError: the registry exploded"):
        config = rlcore.load_config(plugin_manager=toy_pm, overrides=["algo.name=toy", "loggers.console=null"])
    rlcore.build_trainer(config, run_dir=tmp_path, plugin_manager=toy_pm).train()
    assert calls == [] and not toy_pm.infos["halfbroken"].ok  # left out, as rlctl plugins list says

