"""Config validation, overrides, the resolved config, and rlctl's one-line errors and exit codes."""

from __future__ import annotations

import csv
import signal
import subprocess
import sys
import time

import pytest
import yaml

import rlcore


@pytest.mark.slow
def test_defaults_merge_algorithm_defaults_and_overrides(toy_pm):
    config = rlcore.load_config(plugin_manager=toy_pm, overrides=["algo.name=toy", "trainer.total_frames=128", "optim.lr=0.01"])
    assert config["algo"] == {"name": "toy", "lr_scale": 1.0}
    assert config["env"]["num_envs"] == 2  # from the algorithm's defaults
    assert config["trainer"]["total_frames"] == 128 and config["optim"]["lr"] == 0.01
    assert list(config) == ["env", "collector", "algo", "optim", "trainer", "loggers", "hooks", "checkpoint", "plugins"]


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["trainer.totl_frames=3"], r"unknown key trainer.totl_frames \(valid choices: total_frames, frame_skip, optim_steps_per_batch, .*\)"),
        (["trainer.total_frames=many"], r"trainer.total_frames: expected an integer >= 1 and <= 1000000000000, got 'many'"),
        (["trainer.progress_bar=3"], r"trainer.progress_bar: expected true or false, got 3"),
        (["algo.lr_scal=2"], r"unknown key algo.lr_scal \(valid choices: lr_scale\)"),
        (["loggers.nope={}"], r"loggers: unknown logger 'nope' \(valid choices: console, csv.*\)"),
        (["loggers.csv.colour=red"], r"unknown key loggers.csv.colour \(valid choices: filename\)"),
        (["loggers.console.every=-1"], r"loggers.console.every: expected an integer >= 0, got -1"),
        (["hooks.nope={}"], r"hooks: unknown hook 'nope'"),
        (["checkpoint.backend=floppy"], r"checkpoint.backend: unknown checkpoint backend 'floppy' \(valid choices: .*torch.*\)"),
        (["env.wrappers.flip={}"], r"env.wrappers: unknown env wrapper 'flip' \(valid choices: .*normalize_observation, normalize_reward.*\)"),
        (["optim.name=adagrad"], r"optim.name: unknown optimizer 'adagrad' \(valid choices: adam, adamw, sgd, rmsprop, or an optimizer's import path .*\)"),
        (["optim.name=torch.nn.Linear"], r"optim.name: 'torch.nn.Linear' is not a torch.optim.Optimizer class"),
        (["optim.momentum=0.9"], r"unknown key optim.momentum \(valid choices: lr, betas, eps, weight_decay, amsgrad, .*\)"),
        (["optim.betas=0.9"], r"optim.betas: expected a list, each item a number or a Tensor, got 0.9"),
        (["wat.x=1"], r"unknown section 'wat' \(valid choices: env, collector, algo, optim, trainer, loggers, hooks, checkpoint\)"),
        (["novalue"], r"--set 'novalue': expected KEY=VALUE"),
    ],
)
def test_bad_config_names_the_key_and_the_choices(toy_pm, overrides, message):
    with pytest.raises(rlcore.ConfigError, match=message):
        rlcore.load_config(plugin_manager=toy_pm, overrides=["algo.name=toy", *overrides])


def test_ckpt_backend_env_var_chooses_unless_the_config_does(toy_pm, monkeypatch):
    monkeypatch.setenv("CKPT_BACKEND", "floppy")
    with pytest.raises(rlcore.ConfigError, match="CKPT_BACKEND: unknown checkpoint backend 'floppy'"):
        rlcore.load_config(plugin_manager=toy_pm, algo={"name": "toy"})
    config = rlcore.load_config(plugin_manager=toy_pm, algo={"name": "toy"}, checkpoint={"backend": "torch"})
    assert config["checkpoint"]["backend"] == "torch"


def test_a_run_path_stays_inside_the_run_directory_and_off_its_own_entries():
    from rlcore._kernel.options import InsideRunDir

    inside = InsideRunDir()
    assert all(path in inside for path in ("./x", "videos/eval", "sub/config.yaml", "metrics2.csv"))
    assert not any(path in inside for path in ("", ".", "./", " ", "/abs", "../x", "a/../../x", "config.yaml", ".rlcore-run", "checkpoints", "checkpoints/a"))


def test_yaml_merge_keys_are_no_duplicates_and_keys_of_other_types_differ(tmp_path):
    import yaml

    from rlcore._app.config import read_config_file

    config = tmp_path / "merged.yaml"
    config.write_text("common: &C {lr: 1.0, eps: 1}\ndefs:\n  fast: &A {<<: *C, lr: 2.0}\noptim: {<<: *A}\n")
    assert read_config_file(config)["optim"] == {"lr": 2.0, "eps": 1}
    assert yaml.load('{1: a, "1": b}', Loader=rlcore._app.config.yaml_loader()) == {1: "a", "1": "b"}
    with pytest.raises(yaml.YAMLError, match="duplicate key 'b'"):
        yaml.load("{a: {b: 1, b: 2}}", Loader=rlcore._app.config.yaml_loader())


def test_a_long_list_of_valid_choices_is_cut_the_nearest_first() -> None:
    from rlcore._kernel.errors import valid_choices

    names = [f"option_{i:02d}" for i in range(40)]
    assert valid_choices(names[:3], "x") == "option_00, option_01, option_02"  # all, in order, where they fit
    cut = valid_choices(names, "option_37x")
    assert cut.startswith("option_37, ") and cut.endswith(" more)") and len(cut) < 180, cut
    assert len(cut.split(", ")) - 1 + int(cut.rsplit("(", 1)[1].split()[0]) == 40  # the names listed and those counted


@pytest.mark.slow
def test_cli_bad_input_is_one_line_exit_2(with_plugins, tmp_path, rlctl):
    bad = tmp_path / "bad.yaml"
    bad.write_text("trainer: {total_frames: [1\n")
    twice = tmp_path / "twice.yaml"
    twice.write_text("env:\n  id: CartPole-v1\nalgo:\n  name: toy\nenv:\n  num_envs: 2\n")  # the second env: would replace the first
    cases = [
        (["train", "--algo", "toy", "--set", "trainer.totl_frames=3"], "rlctl: error: unknown key trainer.totl_frames (valid choices:"),
        (["train", str(tmp_path / "missing.yaml")], "missing.yaml: cannot read config file"),
        (["train", str(bad)], "bad.yaml: not valid YAML at line"),
        (["train", str(twice)], "twice.yaml: not valid YAML at line 5: duplicate key 'env' (first at line 1)"),
        (["train", "--algo", "toy", "--logger", "nope"], "loggers: unknown logger 'nope'"),
        (["--no-plugin", "rl-plugin-pg", "train", "--algo", "ppo"], "algorithm 'ppo' needs plugin 'pg' (rl-plugin-pg), which is blocked"),
        (["config", "show", "nope"], "algo.name: unknown algorithm 'nope'"),
        (["config", "show", "dqn", "--env", "Pendulum-v1"], "algo.name: dqn needs a Discrete action space, the env has Box("),
        (["train", "--frames", "x"], "trainer.total_frames: expected an integer >= 1 and <= 1000000000000, got 'x'"),
        (["train", "--algo", "toy", "--seed", "-1"], "trainer.seed: expected an integer >= 0 and <= 4294967295 or null, got -1"),
        (["train", "--algo", "toy", "--logger", "broken"], "logger 'broken' needs plugin 'broken' (rl-plugin-broken), which is broken: import failed: RuntimeError"),
        (["eval", str(tmp_path)], "cannot read config file"),
    ]
    for i, (argv, message) in enumerate(cases):
        result = rlctl(*argv, cwd=tmp_path, subprocess=i == 0)  # the first in a process of its own, the others in this one
        assert result.returncode == 2, (argv, result.stderr)
        assert message in result.stderr and "Traceback" not in result.stderr, (argv, result.stderr)


@pytest.mark.slow
def test_cli_train_writes_the_run_directory_and_its_config_reproduces_it(with_plugins, tmp_path, rlctl):
    env = {"HOOKRECORDER_LOG": str(tmp_path / "calls.txt")}
    first = rlctl("train", "--algo", "toy", "--seed", "3", "--frames", "192", "--out", str(tmp_path / "a"), env=env)
    assert first.returncode == 0, first.stderr
    run = tmp_path / "a"
    resolved = yaml.safe_load((run / "config.yaml").read_text())
    assert resolved["trainer"]["seed"] == 3 and resolved["trainer"]["total_frames"] == 192
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["ckpt-000000000192.pt"]
    with open(run / "metrics.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["frames", "name", "value", "wall_time"]
    assert (tmp_path / "calls.txt").read_text().splitlines()[0] == "setup"

    second = rlctl("train", str(run / "config.yaml"), "--out", str(tmp_path / "b"))
    assert second.returncode == 0, second.stderr

    def losses(path):
        with open(path / "metrics.csv", newline="") as handle:
            return [(r["frames"], r["value"]) for r in csv.DictReader(handle) if r["name"].startswith(("loss/", "train/"))]

    assert losses(run) == losses(tmp_path / "b")


@pytest.mark.slow
def test_cli_config_show_and_eval(with_plugins, tmp_path, rlctl):
    listed = rlctl("config", "show")  # no ALGO: the algorithms, a line each
    assert listed.returncode == 0 and "toy     a toy policy gradient for tests  [hookrecorder]" in [line.strip() for line in listed.stdout.splitlines()]
    shown = rlctl("config", "show", "toy")
    assert shown.returncode == 0
    config = yaml.safe_load(shown.stdout)
    assert config["algo"] == {"name": "toy", "lr_scale": 1.0}
    with_console = yaml.safe_load(rlctl("config", "show", "toy", "--set", "loggers.console={every: 5}").stdout)  # a logger's options, all
    assert with_console["loggers"]["console"] == {"every": 5, "keys": ["train/episode_return", "eval/episode_return", "perf/fps"], "stream": "stderr"}
    (tmp_path / "toy.yaml").write_text(shown.stdout)
    assert rlctl("train", str(tmp_path / "toy.yaml"), "--out", str(tmp_path / "run")).returncode == 0
    result = rlctl("eval", str(tmp_path / "run"), "--episodes", "3")
    assert result.returncode == 0, result.stderr
    import json

    report = json.loads(result.stdout)
    assert report["frames"] == 256 and len(report["returns"]) == 3 and report["checkpoint"].endswith("ckpt-000000000256.pt")
    recorded = rlctl("eval", str(tmp_path / "run"), "--episodes", "2", "--video")
    assert recorded.returncode == 0, recorded.stderr
    report = json.loads(recorded.stdout)
    import imageio.v3 as iio

    frames = iio.imread(report["video"], plugin="FFMPEG")
    assert frames.shape == (report["lengths"][0], 400, 600, 3)  # one frame per action of the first episode


@pytest.mark.slow
def test_cli_warns_about_unrelated_broken_plugins_and_refuses_needed_ones(with_plugins, tmp_path, rlctl):
    result = rlctl("train", "--algo", "toy", "--frames", "64", "--out", str(tmp_path / "r"))
    assert result.returncode == 0
    assert result.stderr.count("plugin 'broken' (rl-plugin-broken) is not loaded") == 1
    result = rlctl("--no-plugin", "hookrecorder", "train", "--algo", "toy")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].startswith("rlctl: error: algo.name: unknown algorithm 'toy'")


@pytest.mark.slow
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_signal_finishes_the_batch_checkpoints_and_exits(with_plugins, tmp_path, signum, code, rlctl):
    run = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "rlcore", "train", "--algo", "toy", "--frames", "100000000", "--out", str(run), "--set", "trainer.save_trainer_interval=100000000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 60
    while time.time() < deadline and not (run / "metrics.csv").exists():
        time.sleep(0.2)
    time.sleep(1.0)
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == code, err
    checkpoints = list((run / "checkpoints").iterdir())
    assert len(checkpoints) == 1
    frames = int(checkpoints[0].name[5:17])
    with open(run / "metrics.csv", newline="") as handle:
        logged = max(int(r["frames"]) for r in csv.DictReader(handle))
    assert frames == logged > 0
    resumed = rlctl("train", "--resume", str(run), "--set", f"trainer.total_frames={frames + 128}")
    assert resumed.returncode == 0, resumed.stderr
    assert f"resumed from {checkpoints[0]} at {frames} frames" in resumed.stderr


def test_null_removes_a_default_logger_for_good(toy_pm, tmp_path):
    config = rlcore.load_config(plugin_manager=toy_pm, overrides=["algo.name=toy", "loggers.console=null"])
    assert config["loggers"] == {"csv": {"filename": "metrics.csv"}, "console": None}  # (the defaults written out: the record pins them)
    trainer = rlcore.build_trainer(config, run_dir=tmp_path, plugin_manager=toy_pm)
    assert [type(logger.logger).__name__ for logger in trainer.loggers] == ["CSVLogger"]
    assert yaml.safe_load((tmp_path / "config.yaml").read_text())["loggers"] == {"csv": {"filename": "metrics.csv"}, "console": None}


def test_algorithm_presets_apply_to_their_env_only(toy_pm):
    from rl_plugin_hookrecorder import PRESET_ENV

    plain = rlcore.load_config(plugin_manager=toy_pm, algo={"name": "toy"})
    tuned = rlcore.load_config(plugin_manager=toy_pm, algo={"name": "toy"}, env={"id": PRESET_ENV})
    mine = rlcore.load_config(plugin_manager=toy_pm, algo={"name": "toy", "lr_scale": 3.0}, env={"id": PRESET_ENV})
    assert plain["algo"]["lr_scale"] == 1.0 and tuned["algo"]["lr_scale"] == 0.5 and mine["algo"]["lr_scale"] == 3.0
    assert rlcore.load_config(plugin_manager=toy_pm, algo={"name": "toy", "lr_scale": None})["algo"]["lr_scale"] is None
