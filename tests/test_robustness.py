"""Runs you can trust (issue #13): each case first reproduces what a careless or hostile user did, then checks
that rl-core refuses it in one line with exit 2, or survives it, and that nothing of the user's is lost."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
import torch
import yaml

import rlcore
from rlcore._app.cli import main

pg = pytest.importorskip("rl_plugin_pg")
QUIET = ["--no-plugin", "broken", "--no-plugin", "badhook", "--no-plugin", "badsig"]  # the test plugins broken on purpose
TOY = [*QUIET, "train", "--algo", "toy", "--seed", "1", "--set", "loggers.console=null"]
PPO = ["train", "--algo", "ppo", "--seed", "1", "--frames", "512", "--set", "loggers.console=null"]


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    """Run ``rlctl`` in this process: its exit code and what it printed on stderr (stdout is in ``OUT``)."""
    with pytest.raises(SystemExit) as exited:
        main(list(argv))
    captured = capsys.readouterr()
    OUT[:] = [captured.out]
    return int(exited.value.code), captured.err


OUT = [""]


def snapshot(directory: Path) -> dict[str, str]:
    """Every file under ``directory`` with a digest of its bytes."""
    return {str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.rglob("*")) if p.is_file()}


def rows(run: Path) -> list[dict[str, str]]:
    with open(run / "metrics.csv", newline="") as handle:
        return list(csv.DictReader(handle))


# ----------------------------------------------------------------------------------- run directories


def test_a_second_run_on_a_running_run_is_refused_naming_the_holder(with_plugins, toy_pm, tmp_path, capsys):
    run = tmp_path / "run"
    trainer = rlcore.build_trainer({"algo": {"name": "toy"}}, run_dir=run, plugin_manager=toy_pm)  # holds the directory
    before = snapshot(run)
    code, err = cli(capsys, *TOY, "--resume", str(run))
    assert code == 2
    assert re.fullmatch(rf"rlctl: error: {re.escape(str(run))}: in use by another run \(pid {os.getpid()} on \S+ since [-\d: ]+\)\n", err)
    code, err = cli(capsys, *TOY, "--out", str(run))
    assert code == 2 and err == f"rlctl: error: {run}: already holds a run; --resume it, or start it afresh with --force\n"
    assert snapshot(run) == before
    trainer.train()  # releases it when it ends
    code, _ = cli(capsys, *TOY, "--resume", str(run), "--frames", "320")
    assert code == 0 and rows(run)[-1]["frames"] == "320"


def test_out_into_an_existing_run_needs_resume_or_force(with_plugins, tmp_path, capsys):
    run = tmp_path / "run"
    assert cli(capsys, *TOY, "--frames", "128", "--out", str(run))[0] == 0
    before = snapshot(run)
    code, err = cli(capsys, *TOY, "--frames", "128", "--out", str(run))
    assert code == 2 and "already holds a run" in err and snapshot(run) == before
    assert cli(capsys, *TOY, "--frames", "64", "--out", str(run), "--force")[0] == 0
    assert yaml.safe_load((run / "config.yaml").read_text())["trainer"]["total_frames"] == 64
    assert max(int(r["frames"]) for r in rows(run)) == 64  # the earlier run's metrics are gone, not appended to
    assert [p.name for p in (run / "checkpoints").iterdir()] == ["ckpt-000000000064.pt"]


def test_out_must_be_a_fresh_or_own_run_directory(with_plugins, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    mine = tmp_path / "config.yaml"
    mine.write_text("algo: {name: toy}\ntrainer: {total_frames: 64}\n")
    before = snapshot(tmp_path)
    code, err = cli(capsys, *QUIET, "train", str(mine), "--out", "")
    assert (code, err) == (2, "rlctl: error: --out: expected a directory, got ''\n")
    code, err = cli(capsys, *QUIET, "train", str(mine), "--out", ".")
    assert (code, err) == (2, "rlctl: error: .: exists and is not an rl-core run directory; choose a new or empty one\n")
    code, err = cli(capsys, *QUIET, "train", str(mine), "--out", str(mine))
    assert code == 2 and "is a file" in err
    assert snapshot(tmp_path) == before


def test_every_file_of_a_run_stays_inside_it(with_plugins, tmp_path, capsys):
    outside = tmp_path / "x.csv"
    code, err = cli(capsys, *TOY, "--out", str(tmp_path / "a" / "b"), "--set", "loggers.csv.filename=../../x.csv")
    expected = "rlctl: error: loggers.csv.filename: expected a relative path inside the run directory, not config.yaml, .rlcore-run or checkpoints"
    assert (code, err) == (2, f"{expected}, got '../../x.csv'\n")
    assert not outside.exists() and not (tmp_path / "a").exists()
    for own in ("config.yaml", ".rlcore-run", "checkpoints/m.csv"):  # the run's own files: a logger writing there would wreck them
        code, err = cli(capsys, *TOY, "--out", str(tmp_path / "a"), "--set", f"loggers.csv.filename={own}")
        assert (code, err) == (2, f"{expected}, got {own!r}\n")
        assert not (tmp_path / "a").exists()
    code, _ = cli(capsys, *TOY, "--frames", "64", "--out", str(tmp_path / "c"), "--set", "loggers.csv.filename=logs/m.csv")
    assert code == 0 and (tmp_path / "c" / "logs" / "m.csv").is_file()


def test_a_run_directory_that_cannot_be_made_is_one_line(tmp_path, capsys):
    (tmp_path / "afile").write_text("")
    code, err = cli(capsys, *PPO, "--out", str(tmp_path / "afile" / "run"))
    assert (code, err) == (2, f"rlctl: error: {tmp_path / 'afile' / 'run'}: cannot be created (Not a directory)\n")
    code, err = cli(capsys, *PPO, "--out", str(tmp_path / "afile"))
    assert (code, err) == (2, f"rlctl: error: Invalid value for '--out': Directory '{tmp_path / 'afile'}' is a file. (rlctl train --help)\n")


def test_a_failed_resume_leaves_the_run_exactly_as_it_was(tmp_path, capsys):
    run = tmp_path / "run"
    assert cli(capsys, *PPO, "--out", str(run))[0] == 0
    before = snapshot(run)
    code, err = cli(capsys, "train", "--resume", str(run), "--set", "algo.hidden_sizes=[128,128]")
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("rlctl: error: --resume: the checkpoint does not fit this config (Error(s) in loading state_dict for PolicyGradientLoss: "
                          "size mismatch for ")  # fmt: skip  # (torch's second line: what does not fit)
    for change in (["--algo", "a2c"], ["--set", "algo.name=a2c"]):
        code, err = cli(capsys, "train", "--resume", str(run), *change)
        assert (code, err) == (2, f"rlctl: error: algo.name: the run in {run} has 'ppo'; resuming it with 'a2c' is refused\n")
    code, err = cli(capsys, "train", "--resume", str(run), "--set", "env.num_envs=4")
    assert (code, err) == (2, f"rlctl: error: env.num_envs: the run in {run} has 8; resuming it with 4 is refused\n")
    code, err = cli(capsys, "train", "--resume", str(run), "--set", "env.vectorization=async")  # the envs' saved state is sync's
    assert (code, err) == (2, f"rlctl: error: env.vectorization: the run in {run} has 'sync'; resuming it with 'async' is refused\n")
    code, err = cli(capsys, "train", "--resume", str(run), "--set", "env.kwargs.render_mode=rgb_array")  # restored envs keep theirs
    assert (code, err) == (2, f"rlctl: error: env.kwargs: the run in {run} has {{}}; resuming it with {{'render_mode': 'rgb_array'}} is refused\n")
    code, err = cli(capsys, "train", "--resume", str(run), "--set", "env.wrappers={frame_skip: {skip: 2}}")
    assert code == 2 and err.startswith("rlctl: error: env.wrappers: the run in ") and err.count("\n") == 1
    code, err = cli(capsys, "train", str(run / "config.yaml"), "--resume", str(run))
    assert code == 2 and err.endswith("--resume continues the run with its own config (RUN_DIR/config.yaml): give no CONFIG, and --set to change a value (rlctl train --help)\n")
    assert snapshot(run) == before
    config = (run / "config.yaml").read_text()
    (run / "config.yaml").write_text(config.replace("num_envs: 8", "num_envs: 4"))  # edited by hand: the checkpoint says otherwise
    code, err = cli(capsys, "train", "--resume", str(run))
    assert (code, err) == (2, "rlctl: error: --resume: the checkpoint does not fit this config (the checkpoint's collector ran 8 envs, env.num_envs is 4)\n")
    (run / "config.yaml").write_text(config)
    assert snapshot(run) == before
    code, err = cli(capsys, "train", "--resume", str(run), "--frames", "768")
    assert code == 0 and "resumed from" in err and rows(run)[-1]["frames"] == "768"
    code, err = cli(capsys, "train", "--resume", str(run), "--frames", "512")  # fewer than the run has
    assert code == 0 and "rlctl: warning: the run has 768 frames, trainer.total_frames is 512: nothing is left to train" in err


def test_the_run_record_pins_the_defaults_and_a_resume_may_name_them_or_not(tmp_path, capsys):
    """config.yaml writes out every option of the run's wrappers, loggers and hooks; a resume that names the same
    wrappers with fewer of their options (the defaults) continues, one that changes an option is refused."""
    run = tmp_path / "run"
    wrappers = "env.wrappers={frame_skip: {skip: 2}}"
    assert cli(capsys, *PPO, "--out", str(run), "--set", wrappers, "--set", "hooks.evaluation={episodes: 2}")[0] == 0
    recorded = yaml.safe_load((run / "config.yaml").read_text())
    assert recorded["env"]["wrappers"] == {"frame_skip": {"skip": 2}}  # (its one option)
    assert set(recorded["hooks"]["evaluation"]) > {"episodes", "record_interval", "video", "final"} and recorded["hooks"]["evaluation"]["episodes"] == 2
    assert recorded["loggers"]["console"] is None and recorded["loggers"]["csv"] == {"filename": "metrics.csv"}
    code, err = cli(capsys, "train", "--resume", str(run), "--frames", "768", "--set", wrappers)
    assert code == 0 and "resumed from" in err
    code, err = cli(capsys, "train", "--resume", str(run), "--set", "env.wrappers={frame_skip: {}}")  # skip 4, the default
    assert code == 2 and err.startswith(f"rlctl: error: env.wrappers: the run in {run} has {{'frame_skip': {{'skip': 2}}}}; resuming it with ")


# ----------------------------------------------------------------------------------- hostile plugins


@pytest.mark.parametrize(
    ("hostile", "plugin", "status"),
    [
        ("str", "hostile-str", "error: rl_register_loggers returned a str, expected a dict of name -> factory"),
        ("noncallable", "hostile-noncallable", "error: rl_register_hooks entry 'noncallable' is int, expected a callable factory under a string name"),
        ("raises", "hostile-raises", "error: rl_register_env_wrappers failed: RuntimeError: the registry exploded"),
    ],
)
def test_a_broken_registry_shows_in_the_listing_and_breaks_nothing_else(with_plugins, tmp_path, capsys, monkeypatch, hostile, plugin, status):
    import json

    monkeypatch.setenv("HOSTILE", hostile)
    code, _ = cli(capsys, "plugins", "list", "--json")
    listing = {p["name"]: p for p in json.loads(OUT[0])}
    assert code == 0 and listing[plugin]["status"] == status
    assert listing["hookrecorder"]["status"] == "ok"
    code, err = cli(capsys, *TOY, "--frames", "64", "--out", str(tmp_path / "run"))
    assert code == 0, err
    assert "Traceback" not in err


# ----------------------------------------------------------------------------------- values


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--set", "env.num_envs=0"], "env.num_envs: expected an integer >= 1, got 0"),
        (["--set", "collector.frames_per_batch=0"], "collector.frames_per_batch: expected an integer >= 1 and <= 100000000, got 0"),
        (["--set", "collector.frames_per_batch=100"], "collector.frames_per_batch: 100 is not a multiple of env.num_envs=8"),
        (["--set", "checkpoint.keep_last=0"], "checkpoint.keep_last: expected an integer >= 1, got 0"),
        (["--set", "optim.lr=-1"], "optim.lr: expected a number > 0, got -1"),
        (["--set", "optim.lr=.inf"], "optim.lr: expected a number > 0, got inf"),
        (["--set", "algo.gamma=.nan"], "algo.gamma: expected a number > 0 and <= 1, got nan"),
        (["--set", "algo.epochs=0"], "algo.epochs: expected an integer >= 1, got 0"),
        (["--set", "trainer.frame_skip=0"], "trainer.frame_skip: expected an integer >= 1 and <= 1000, got 0"),
        (["--frames", "-5"], "trainer.total_frames: expected an integer >= 1 and <= 1000000000000, got -5"),
        (["--set", "trainer.device=bogus"], "trainer.device: unknown device 'bogus' (valid choices: cpu)"),
        (["--set", "trainer.device=cuda:7"], "trainer.device: 'cuda:7' is not available on this machine (valid choices: cpu)"),
        (["--set", "env.kwargs.gravity=3"], "env.kwargs.gravity: CartPole-v1 takes no such argument (valid choices: sutton_barto_reward, render_mode, "
         "max_episode_steps, disable_env_checker)"),
        (["--set", "env.kwargs.max_episode_steps=0"], "env.kwargs.max_episode_steps: expected an integer >= 1 or null, got 0"),
        (["--env", "CartPol-v1"], "env.id: unknown env 'CartPol-v1' (neither a Gymnasium id nor a registered env; did you mean CartPole-v0, CartPole-v1?)"),
    ],
)
def test_bad_values_are_one_line_exit_2_and_leave_no_run_folder(tmp_path, capsys, args, message):
    if "cuda" in message and torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    run = tmp_path / "run"
    code, err = cli(capsys, "train", "--algo", "ppo", "--out", str(run), *args)
    assert (code, err) == (2, f"rlctl: error: {message}\n")
    assert not run.exists()


def test_ckpt_backend_variable_is_named(with_plugins, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CKPT_BACKEND", "bogus")
    code, err = cli(capsys, *TOY, "--out", str(tmp_path / "run"))
    assert code == 2 and err.startswith("rlctl: error: CKPT_BACKEND: unknown checkpoint backend 'bogus' (valid choices: torch")


def test_each_command_words_its_own_failure(with_plugins, toy_pm, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RLCORE_TRACEBACK", "0")
    run = tmp_path / "run"
    assert cli(capsys, *TOY, "--frames", "64", "--out", str(run))[0] == 0
    backend = toy_pm.factory("checkpoint_backends", "torch")(directory=run / "checkpoints", keep_last=3)
    backend.save({"counters": {"collected_frames": 128}}, 128)  # a checkpoint without a model
    code, err = cli(capsys, *QUIET, "eval", str(run), "--episodes", "1")
    assert code == 1 and err.splitlines()[-1] == "rlctl: error: evaluation failed: KeyError: 'loss_module'"
    code, err = cli(capsys, *QUIET, "eval", str(run), "--episodes", "0")
    assert code == 2 and "Invalid value for '--episodes'" in err
    code, err = cli(capsys, *QUIET, "eval", str(run), "--seed", "-1")
    assert code == 2 and "Invalid value for '--seed'" in err
    other = tmp_path / "other"
    assert cli(capsys, *PPO, "--frames", "64", "--out", str(other))[0] == 0
    theirs = max((other / "checkpoints").iterdir())
    code, err = cli(capsys, *QUIET, "eval", str(run), "--checkpoint", str(theirs))
    assert code == 2 and err.startswith(f"rlctl: error: {theirs}: not a checkpoint of the run in {run} (") and err.count("\n") == 1


def test_eval_needs_none_of_the_runs_logger_plugins(with_plugins, tmp_path, capsys):
    pytest.importorskip("rl_plugin_tensorboard")
    run = tmp_path / "run"
    assert cli(capsys, *TOY, "--frames", "64", "--out", str(run), "--set", "loggers.tensorboard={}")[0] == 0
    code, err = cli(capsys, *QUIET, "--no-plugin", "tensorboard", "eval", str(run), "--episodes", "1")
    assert code == 0, err
    assert json.loads(OUT[0])["episodes"] == 1


# ----------------------------------------------------------------------------------- checkpoints and metrics


def corrupt_tensor_bytes(checkpoint: Path) -> None:
    """Overwrite the bytes of the biggest tensor inside a torch checkpoint, leaving the zip archive valid."""
    with zipfile.ZipFile(checkpoint) as archive:
        infos = archive.infolist()
        data = {info.filename: archive.read(info.filename) for info in infos}
    biggest = max((name for name in data if "/data/" in name), key=lambda name: len(data[name]))
    data[biggest] = b"\xff" * len(data[biggest])  # NaN as float32
    with zipfile.ZipFile(checkpoint, "w", compression=zipfile.ZIP_STORED) as archive:
        for info in infos:
            archive.writestr(info, data[info.filename])


def test_a_corrupted_checkpoint_is_skipped_for_the_previous_good_one(with_plugins, tmp_path, capsys):
    run = tmp_path / "run"
    assert cli(capsys, *TOY, "--out", str(run), "--set", "trainer.save_trainer_interval=64")[0] == 0
    newest = run / "checkpoints" / "ckpt-000000000256.pt"
    corrupt_tensor_bytes(newest)
    code, err = cli(capsys, *QUIET, "eval", str(run), "--episodes", "1")
    assert code == 0
    assert f"rlctl: warning: skipping unreadable checkpoint {newest}: {newest} is corrupted: its content does not match its checksum" in err
    assert '"checkpoint": "' + str(run / "checkpoints" / "ckpt-000000000192.pt") in OUT[0]


def test_non_finite_weights_are_refused_at_save_naming_the_key(toy_pm, tmp_path):
    trainer = rlcore.build_trainer({"algo": {"name": "toy"}, "trainer": {"save_trainer_interval": 64}}, run_dir=tmp_path, plugin_manager=toy_pm)

    class Diverge:
        @rlcore.hookimpl
        def rl_post_steps(self, trainer):
            if trainer.collected_frames >= 128:
                with torch.no_grad():
                    trainer.loss_module.policy.net.weight[0, 0] = float("nan")

    trainer.register_plugin(Diverge())
    with pytest.raises(FloatingPointError, match=r"not checkpointing loss_module\.policy\.net\.weight: it holds NaN"):
        trainer.train()
    assert [p.name for p in trainer.checkpoint.checkpoints()] == ["ckpt-000000000064.pt"]


def test_stale_temporaries_are_removed_at_the_next_save(toy_pm, tmp_path):
    directory = tmp_path / "checkpoints"
    directory.mkdir()
    stale = directory / ".tmp-ckpt-000000000064.pt-12345"
    stale.write_bytes(b"\0" * 1000)
    backend = toy_pm.factory("checkpoint_backends", "torch")(directory=directory, keep_last=3)
    backend.save({"x": torch.zeros(3)}, 128)
    assert sorted(p.name for p in directory.iterdir()) == ["ckpt-000000000128.pt"]


def test_a_damaged_metrics_line_is_reported_and_the_good_rows_kept_on_resume(with_plugins, tmp_path, capsys):
    run = tmp_path / "run"
    assert cli(capsys, *TOY, "--frames", "192", "--out", str(run), "--set", "trainer.save_trainer_interval=64")[0] == 0
    lines = (run / "metrics.csv").read_text().splitlines()
    good = [dict(zip(("frames", "name", "value", "wall_time"), line.split(","), strict=True)) for line in lines[1:]]
    lines.insert(3, "12,loss/x,not-a-number")  # a torn line
    lines.insert(6, '"64,loss/y,1.0,17')  # a stray quote: it would swallow the lines after it into one field
    (run / "metrics.csv").write_text("\n".join(lines) + "\n")
    code, err = cli(capsys, *QUIET, "train", "--resume", str(run), "--frames", "256")
    assert code == 0
    assert f"rlctl: warning: {run / 'metrics.csv'} line 4 is damaged and was dropped: '12,loss/x,not-a-number'" in err
    assert f"rlctl: warning: {run / 'metrics.csv'} line 7 is damaged and was dropped: '\"64,loss/y,1.0,17'" in err
    after = rows(run)
    assert after[: len(good)] == good and after[-1]["frames"] == "256"


# ----------------------------------------------------------------------------------- signals


@pytest.mark.slow
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_while_the_run_is_built_stops_it_in_one_line_and_leaves_no_run_directory(tmp_path, signum, code):
    """A signal before training starts (a Ray cluster starting, say): what was built is closed, the fresh directory removed."""
    pytest.importorskip("rl_plugin_envs")
    pytest.importorskip("rl_plugin_pg")
    (tmp_path / "slowwrapper.py").write_text(  # a wrapper whose set-up the signal interrupts
        "import os, signal, time, gymnasium\n"
        "class Slow(gymnasium.Wrapper):\n"
        "    def __init__(self, env):\n"
        "        super().__init__(env)\n"
        f"        os.kill(os.getpid(), {int(signum)})\n"
        "        time.sleep(30)\n"
    )
    rlctl = Path(sys.executable).with_name("rlctl")
    argv = [str(rlctl), *PPO, "--set", "env.wrappers={slowwrapper.Slow: {}}", "--out", "run"]
    done = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=120, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == code, done.stderr[-1500:]
    assert done.stderr.strip().endswith(f"rlctl: {signal.Signals(signum).name}: stopped before training started"), done.stderr[-500:]
    assert not (tmp_path / "run").exists()


def test_a_rendering_env_leaves_sigterm_to_the_process() -> None:
    """pygame's SDL would take SIGTERM over once an env renders, as a quit event nobody reads: ``rlctl eval --video`` ran on."""
    code = (
        "import os, signal, time, rlcore\n"
        "env = rlcore.make_vector_env('CartPole-v1', 1, kwargs={'render_mode': 'rgb_array'})\n"
        "env.reset(seed=0)\n"
        "assert env.render()[0].shape == (400, 600, 3)\n"
        "os.kill(os.getpid(), signal.SIGTERM)\n"
        "time.sleep(5)\n"
        "print('still running')\n"
    )
    environ = {k: v for k, v in os.environ.items() if k != "SDL_NO_SIGNAL_HANDLERS"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=environ)
    assert done.returncode == -signal.SIGTERM and "still running" not in done.stdout, (done.returncode, done.stderr[-500:])


@pytest.mark.slow
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_to_the_whole_group_with_async_envs_checkpoints_and_exits_quietly(tmp_path, signum, code):
    run = tmp_path / "run"
    argv = ["train", "--algo", "ppo", "--frames", "1e7", "--out", str(run), "--set", "env.vectorization=async", "--set", "env.num_envs=2"]
    process = subprocess.Popen(
        [sys.executable, "-m", "rlcore", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        deadline = time.time() + 120
        while time.time() < deadline and not (run / "metrics.csv").is_file():
            time.sleep(0.05)
        time.sleep(1.0)
        os.killpg(process.pid, signum)  # what a Ctrl-C or a scheduler does: the whole process group
        _, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == code, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    frames = int(err.rsplit("rlctl: ", 1)[1].split(" frames")[0])
    assert (run / "checkpoints" / f"ckpt-{frames:012d}.pt").is_file()  # the batch it was in, checkpointed
    assert max(int(r["frames"]) for r in rows(run)) == frames


def test_loggers_closing_in_their_own_thread_still_see_that_the_run_failed(tmp_path):
    from rlcore_testing import MemoryLogger, make_trainer

    class Boom:
        @rlcore.hookimpl
        def rl_post_steps(self, trainer):
            raise RuntimeError("boom")

    failed, finished = MemoryLogger(), MemoryLogger()
    with pytest.raises(RuntimeError, match="boom"):
        make_trainer(tmp_path / "a", plugins=[Boom()], loggers=[failed]).train()
    make_trainer(tmp_path / "b", loggers=[finished]).train()
    assert (failed.status, finished.status) == ("failed", "finished")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["--env", "FrozenLake-v1"], "algo.name: the pg algorithms need a Box or a Dict observation space, the env has Discrete"),
        (["--set", "env.wrappers={resize: {height: 64, width: 64}}"], "env.wrappers.resize: does not fit the env ("),
        (["--set", "env.wrappers={grayscale: {}}"], "env.wrappers.grayscale: does not fit the env ("),
        (
            ["--set", 'env.wrappers={"gymnasium.wrappers.vector.NormalizeObservation": {}}'],
            "env.wrappers.gymnasium.wrappers.vector.NormalizeObservation: does not fit the env (Expected autoreset_mode",
        ),
        (["--set", "env.wrappers={atari: {}}"], "env.wrappers.atari: does not fit the env (needs an Atari env of ale-py (ALE/Pong-v5, ...), got CartPole-v1)"),
        (["--set", "hooks.target_updater={}"], "hooks.target_updater: the loss module of ppo has no target networks to update"),
        (["--set", "hooks.replay_buffer={}"], "hooks.replay_buffer: the algorithm learns on-policy, from each batch as it is collected"),
    ],
)
def test_parts_that_do_not_fit_the_env_or_algorithm_are_one_line(tmp_path, capsys, overrides, message):
    pytest.importorskip("rl_plugin_envs")
    code, err = cli(capsys, *PPO, *overrides, "--out", str(tmp_path / "run"))
    assert code == 2 and err.startswith(f"rlctl: error: {message}") and err.count("\n") == 1, err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("algo", ["dqn", "sac", "td3"])
@pytest.mark.parametrize("hook", ["replay_buffer", "target_updater"])
def test_an_off_policy_algorithm_without_the_hooks_it_needs_is_one_line(tmp_path, capsys, algo, hook):
    pytest.importorskip(f"rl_plugin_{algo}")
    code, err = cli(capsys, "train", "--algo", algo, "--set", f"hooks.{hook}=null", "--out", str(tmp_path / "run"))
    assert code == 2 and err.count("\n") == 1 and err.startswith(f"rlctl: error: hooks.{hook}: {algo} cannot train without it (its default: {{"), err
    assert not (tmp_path / "run").exists()  # refused with the config, before the run directory


@pytest.mark.parametrize("algo", ["dqn", "sac", "td3"])
def test_an_off_policy_algorithm_refuses_trajectories_in_one_line(tmp_path, capsys, algo):
    pytest.importorskip(f"rl_plugin_{algo}")
    code, err = cli(capsys, "train", "--algo", algo, "--set", "hooks.replay_buffer.flatten_tensordicts=false", "--out", str(tmp_path / "run"))
    assert (code, err) == (2, "rlctl: error: hooks.replay_buffer.flatten_tensordicts: the algorithm learns from single transitions, not "
                              "trajectories: set it true (false stores [envs, time] trajectories, as TorchRL's ReplayBufferTrainer "
                              "does by default)\n")  # fmt: skip
    assert not (tmp_path / "run").exists()


def test_usage_errors_are_one_line_with_where_the_help_is(capsys):
    code, err = cli(capsys, "eval", "runs/none-such")
    assert code == 2 and err.startswith("rlctl: error: Invalid value for 'RUN_DIR'") and err.endswith("(rlctl eval --help)\n")
    assert err.count("\n") == 1
    code, err = cli(capsys, "--plugin", "hooks", "config", "show")
    assert (code, err) == (2, "rlctl: error: config show: no algorithm is loaded (pip install rl-plugin-pg for PPO and more; rlctl plugins list shows what is installed)\n")
    code, err = cli(capsys, "--no-plugin", "rl-plugin-video", "eval", ".", "--video")
    assert code == 2 and err.splitlines()[-1] == "rlctl: eval --video comes with rl-plugin-video: pip install rl-plugin-video"


def test_a_path_option_naming_the_run_directory_itself_is_refused(with_plugins, tmp_path, capsys):
    for bad in (".", "./", ""):
        code, err = cli(capsys, *TOY, "--frames", "64", "--out", str(tmp_path / "run"), "--set", f"loggers.csv.filename='{bad}'")
        assert code == 2 and err.strip().splitlines() == [
            f"rlctl: error: loggers.csv.filename: expected a relative path inside the run directory, not config.yaml, .rlcore-run or checkpoints, got {bad!r}"
        ], err
    assert not (tmp_path / "run").exists()


def test_a_new_run_that_fails_in_its_first_batch_leaves_no_directory_and_runs_again(toy_pm, tmp_path):
    class FailsOnce:
        failed = False

        @rlcore.hookimpl
        def rl_post_steps(self) -> None:
            if not FailsOnce.failed:
                FailsOnce.failed = True
                raise RuntimeError("the first batch failed")

    config = {"algo": {"name": "toy"}, "trainer": {"seed": 1, "total_frames": 128}}
    trainer = rlcore.build_trainer(config, run_dir=tmp_path / "run", plugin_manager=toy_pm)
    trainer.register_plugin(FailsOnce(), "fails-once")
    with pytest.raises(RuntimeError, match="the first batch failed"):
        trainer.train()
    assert not (tmp_path / "run").exists()  # nothing was trained or logged: the same command can run again
    again = rlcore.build_trainer(config, run_dir=tmp_path / "run", plugin_manager=toy_pm)
    again.train()
    assert again.collected_frames == 128 and (tmp_path / "run" / "metrics.csv").exists()


def test_a_resume_refused_as_it_starts_leaves_the_config_as_it_was(with_plugins, tmp_path, capsys, monkeypatch):
    """A plugin that refuses the resumed run at rl_setup (its option check, or anything it raises) leaves config.yaml alone:
    the next plain --resume trains with the run's values, not the refused ones."""
    run = tmp_path / "run"
    assert cli(capsys, *TOY, "--frames", "64", "--out", str(run))[0] == 0
    before = (run / "config.yaml").read_text()

    class Refuses:
        @rlcore.hookimpl
        def rl_setup(self, trainer) -> None:
            if trainer.config["optim"]["lr"] == 0.5:
                raise rlcore.ConfigError("optim.lr: 0.5 is refused by this plugin")

    pm = rlcore.get_plugin_manager(block=["broken", "badhook", "badsig"])
    pm.add_plugin(Refuses(), "refuses")
    config = rlcore.load_config(run / "config.yaml", overrides=["optim.lr=0.5", "trainer.total_frames=128"], plugin_manager=pm)
    trainer = rlcore.build_trainer(config, run_dir=run, plugin_manager=pm, resume=True)
    with pytest.raises(rlcore.ConfigError, match="refused by this plugin"):
        trainer.train()
    assert (run / "config.yaml").read_text() == before  # lr as it was
    config = rlcore.load_config(run / "config.yaml", overrides=["trainer.total_frames=128"], plugin_manager=pm)
    trainer = rlcore.build_trainer(config, run_dir=run, plugin_manager=pm, resume=True)
    trainer.train()  # the run's own lr: the plugin lets it through
    assert trainer.collected_frames == 128 and "total_frames: 128" in (run / "config.yaml").read_text()


BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (BOMB, "not valid YAML at line 6: it stands for more than 100000 values (aliases expanded)"),
        ("trainer:\n  seed: " + "7" * 5000 + "\n", "not valid YAML: Exceeds the limit (4300 digits) for integer string conversion"),
        ("env: " + "[" * 2000 + "]" * 2000 + "\n", "nested too deep to be a config"),
    ],
    ids=["alias-bomb", "5000-digits", "nested-2000-deep"],
)
def test_a_hostile_config_file_is_one_line_and_exit_2(tmp_path, capsys, content, message):
    config = tmp_path / "hostile.yaml"
    config.write_text(content)
    code, err = cli(capsys, "train", str(config), "--out", str(tmp_path / "run"))
    assert code == 2 and len(err) < 300 and err.count("\n") == 1, err[:500]
    assert err.startswith(f"rlctl: error: {config}: {message}"), err


def test_an_endless_file_or_hostile_values_are_one_line_and_exit_2(tmp_path, capsys):
    code, err = cli(capsys, "train", "/dev/zero", "--out", str(tmp_path / "run"))
    assert (code, err) == (2, "rlctl: error: /dev/zero: larger than 1 MiB, which no config is\n")
    code, err = cli(capsys, "train", "--algo", "ppo", "--set", "trainer.seed=" + "7" * 5000, "--out", str(tmp_path / "run"))
    assert code == 2 and len(err) < 300 and err.startswith("rlctl: error: trainer.seed: expected an integer >= 0 and <= 4294967295 or null, got '7777"), err
    code, err = cli(capsys, "train", "--algo", "ppo", "--set", "env.kwargs=" + BOMB.replace("\n", ", ").join("{}"), "--out", str(tmp_path / "run"))
    assert code == 2 and len(err) < 300, err[:500]


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("trainer.device=cpu:99", "trainer.device: 'cpu:99' is not available on this machine (valid choices: cpu"),
        ("hooks.replay_buffer.beta=5", "hooks.replay_buffer.beta: expected a number >= 0 and <= 1, got 5"),
        ("hooks.replay_buffer.batch_size=2000000", "hooks.replay_buffer.batch_size: 2000000 is more than the capacity 100000: a sample would repeat items"),
        ("loggers.tensorboard.flush_secs=-1", "loggers.tensorboard.flush_secs: expected a number > 0, got -1"),
        ("collector.frames_per_batch=1e12", "collector.frames_per_batch: expected an integer >= 1 and <= 100000000, got 1000000000000.0"),
    ],
)
def test_nonsense_that_was_accepted_is_one_line_and_exit_2(tmp_path, capsys, override, message):
    pytest.importorskip("rl_plugin_dqn")
    pytest.importorskip("rl_plugin_tensorboard")
    code, err = cli(capsys, "train", "--algo", "dqn", "--set", override, "--out", str(tmp_path / "run"))
    assert code == 2 and err.count("\n") == 1 and err.startswith(f"rlctl: error: {message}"), err
    assert not (tmp_path / "run").exists()


def test_an_out_name_too_long_is_one_line_and_exit_2(tmp_path, capsys):
    code, err = cli(capsys, "train", "--algo", "ppo", "--out", str(tmp_path / ("x" * 300)))
    assert code == 2 and err.count("\n") == 1 and err.endswith(": cannot be used (File name too long)\n"), err


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a tmpfs of 256 KiB")
def test_a_full_disk_is_one_line_naming_enospc_and_the_last_good_checkpoint(tmp_path, capsys):
    small = tmp_path / "small"
    small.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(small)], capture_output=True).returncode != 0:
        pytest.skip("mounting a tmpfs needs root")
    try:
        run = small / "run"  # PPO's checkpoints take about 150 KB: the second one finds the disk full
        code, err = cli(capsys, *PPO, "--frames", "4096", "--out", str(run), "--set", "trainer.save_trainer_interval=1024")
        assert code == 2 and "Traceback" not in err, err
        assert err.splitlines()[-1] == (
            f"rlctl: error: {run / 'checkpoints' / 'ckpt-000000002048.pt'}: no space left on the device (ENOSPC) to write this "
            "checkpoint; the last good one is ckpt-000000001024.pt"
        )
        assert [p.name for p in (run / "checkpoints").iterdir()] == ["ckpt-000000001024.pt"]  # (no temporary left)
        frames = {int(row["frames"]) for row in csv.DictReader((run / "metrics.csv").read_text().splitlines())}
        assert max(frames) >= 1024
    finally:
        subprocess.run(["umount", "--lazy", str(small)], check=False)
