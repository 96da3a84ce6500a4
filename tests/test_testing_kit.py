"""rl-core's kit for plugin authors (``rlcore_testing``): the tiny trainer, the hook recorder, and suites that catch bugs."""

from __future__ import annotations

import re
import textwrap
import types
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import gymnasium
import pytest

import rlcore
from rlcore import TrainerHookBase, hookimpl
from rlcore.hookspecs import LIFECYCLE_HOOKS, LOOP_HOOKS
from rlcore_testing import HookRecorder, MemoryLogger, kill_and_resume, make_trainer


def test_the_kit_is_a_pytest_plugin_of_its_own_distribution_not_of_rl_core() -> None:
    from importlib import metadata

    (entry,) = [ep for ep in metadata.distribution("rl-core-testing").entry_points if ep.group == "pytest11"]
    assert (entry.name, entry.value) == ("rlcore", "rlcore_testing")
    assert [ep for ep in metadata.distribution("rl-core").entry_points if ep.group == "pytest11"] == []  # rl-core alone adds nothing to pytest


def test_rl_trainer_is_a_real_short_run_recorded_hook_by_hook(
    rl_trainer: rlcore.Trainer, rl_hook_recorder: HookRecorder, rl_logger: MemoryLogger
) -> None:
    assert isinstance(rl_trainer.collector, rlcore.Collector)
    rl_trainer.train()
    assert (rl_trainer.collected_frames, rl_trainer.batches, rl_trainer.optim_steps) == (128, 4, 8)
    step = ["rl_process_optim_batch", "rl_post_loss", "rl_optimizer", "rl_post_optim", "rl_post_optim_log"]
    batch = ["rl_batch_process", "rl_pre_steps_log", "rl_pre_optim_steps", *step * 2, "rl_post_steps", "rl_post_steps_log"]
    assert rl_hook_recorder.names() == ["rl_setup", *batch * 4, "rl_shutdown"]
    assert set(rl_hook_recorder.names()) == set(LOOP_HOOKS + LIFECYCLE_HOOKS) - {"rl_exception"}
    optimizer = rl_hook_recorder.of("optimizer")[0]
    assert optimizer.plugins == ("rlcore.trainer",) and set(optimizer["losses"].keys()) == {"loss_objective", "entropy"}
    assert rl_hook_recorder.of("rl_batch_process")[0]["batch"].batch_size == (2, 16)
    assert rl_logger.status == "finished"
    assert rl_logger.steps("loss/objective") == [32, 64, 96, 128]
    assert rl_trainer.checkpoint is not None and rl_trainer.checkpoint.load()[1]["counters"]["collected_frames"] == 128


class Doubler:
    """A plugin under test: doubles the rewards of each batch and counts optimizer steps."""

    def __init__(self) -> None:
        self.steps = 0

    @hookimpl
    def rl_batch_process(self, batch: Any) -> Any:
        batch["next", "reward"] = batch["next", "reward"] * 2

    @hookimpl
    def rl_post_optim(self) -> None:
        self.steps += 1


def test_a_plugin_under_test_is_seen_at_its_hook_points(rl_make_trainer: Callable[..., rlcore.Trainer]) -> None:
    recorder, doubler = HookRecorder(), Doubler()
    trainer = rl_make_trainer(plugins={"doubler": doubler, "recorder": recorder}, total_frames=64)
    trainer.train()
    assert recorder.names(plugin="doubler") == ["rl_batch_process", "rl_post_optim", "rl_post_optim"] * 2
    for call in recorder.of("batch_process"):  # the result is the batch after every implementation ran
        assert call.result["next", "reward"].eq(2.0).all()
    i = recorder.names().index("rl_post_optim")
    assert recorder.calls[i - 1].name == "rl_optimizer" and "doubler" in recorder.calls[i].plugins
    assert doubler.steps == trainer.optim_steps == 4


class Failing:
    @hookimpl
    def rl_post_optim(self) -> None:
        raise RuntimeError("diverged")


def test_the_recorder_records_the_error_and_the_exception_hook(rl_make_trainer: Callable[..., rlcore.Trainer]) -> None:
    recorder = HookRecorder()
    trainer = rl_make_trainer(plugins=[recorder, Failing()])
    with pytest.raises(RuntimeError, match="diverged"):
        trainer.train()
    assert recorder.names()[-3:] == ["rl_post_optim", "rl_exception", "rl_shutdown"]
    assert isinstance(recorder.of("post_optim")[-1].error, RuntimeError)
    assert isinstance(recorder.of("exception")[0]["exception"], RuntimeError)


class Counter(TrainerHookBase):
    def __init__(self) -> None:
        self.count = 0

    def register(self, trainer: rlcore.Trainer, name: str) -> None:
        trainer.register_op("post_steps", self.step)
        trainer.register_module(name, self)

    def step(self) -> None:
        self.count += 1

    def state_dict(self) -> dict[str, Any]:
        return {"count": self.count}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.count = state_dict["count"]


def test_make_trainer_registers_hooks_and_resumes_in_its_run_directory(tmp_path: Path) -> None:
    first = make_trainer(tmp_path, hooks={"counter": Counter()}, total_frames=96)
    first.train()
    resumed_counter = Counter()
    resumed = make_trainer(tmp_path, hooks={"counter": resumed_counter}, total_frames=160)
    resumed.load_from_file()
    assert (resumed.collected_frames, resumed_counter.count) == (96, 3)
    resumed.train()
    assert (resumed.collected_frames, resumed_counter.count) == (160, 5)


def test_make_trainer_loads_no_installed_plugin_and_frees_their_names(tmp_path: Path) -> None:
    trainer = make_trainer(tmp_path, checkpoint=False)
    loaded = {name for name, plugin in trainer.plugin_manager.list_name_plugin() if plugin is not None}
    assert {info.distribution for info in trainer.plugin_manager.infos.values() if info.name in loaded} <= {"rl-core", ""}
    trainer.register_plugin(Doubler(), "tensorboard")  # an installed plugin's name: free for the plugin under test
    assert "tensorboard" in {name for name, _ in trainer.plugin_manager.list_name_plugin()}
    trainer.collector.shutdown()


def test_make_trainer_refuses_an_env_it_cannot_drive(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="discrete actions"):
        make_trainer(tmp_path, env_id="Pendulum-v1")


# ---------------------------------------------------------------------------- the suites catch bugs

BROKEN = '''
import warnings
from rlcore import CheckpointBackend, CheckpointError, Logger
from rlcore_testing import CheckpointBackendConformance, LoggerConformance


class ForgetfulLogger(Logger):
    """Keeps one value per call of log_scalars, and fails when closed twice."""

    def __init__(self, exp_name, log_dir):
        super().__init__(exp_name, log_dir)
        self.values, self.closed = {}, False

    def log_scalar(self, name, value, step):
        self.values.setdefault(name, []).append((step, value))

    def log_scalars(self, values, step):
        for name, value in list(values.items())[:1]:
            self.log_scalar(name, value, step)

    def close(self):
        if self.closed:
            raise RuntimeError("already closed")
        self.closed = True


class InMemory(LoggerConformance):
    """The suite on a logger that keeps its values in ``values``; a subclass names the logger class."""

    resume_mode = "new_run"
    logger_class = Logger

    def make_logger(self, log_dir):
        return self.logger_class("run", log_dir)

    def read_back(self, logger):
        return logger.values

    def read_back_killed(self, log_dir):
        return None  # (nothing outside the process)


class TestForgetfulLogger(InMemory):
    logger_class = ForgetfulLogger


class TruncatingLogger(Logger):
    """Stores steps in 32 bits."""

    def __init__(self, exp_name, log_dir):
        super().__init__(exp_name, log_dir)
        self.values = {}

    def log_scalar(self, name, value, step):
        self.values.setdefault(name, []).append((step & 0xFFFFFFFF, value))


class TestTruncatingLogger(InMemory):
    logger_class = TruncatingLogger


class CarelessBackend(CheckpointBackend):
    """Writes in place (no temporary name), raises ValueError on a damaged file, and keeps every checkpoint."""

    suffix = ".txt"

    def save(self, state, frames):
        self.directory.mkdir(parents=True, exist_ok=True)
        path = self.directory / f"ckpt-{frames:012d}{self.suffix}"
        self.write(state, path)
        return path

    def write(self, state, path):
        path.write_text(repr(dict(state)))

    def read(self, path):
        if not path.is_file():
            raise CheckpointError(f"{path} is missing")
        return eval(path.read_text())


class TestCarelessBackend(CheckpointBackendConformance):
    def make_backend(self, directory, keep_last):
        return CarelessBackend(directory, keep_last)
'''


@pytest.mark.slow
def test_the_conformance_suites_fail_a_broken_logger_and_backend(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    module = tmp_path / "test_broken_implementations.py"
    module.write_text(textwrap.dedent(BROKEN), encoding="utf-8")
    capsys.readouterr()
    failing = {
        "TestForgetfulLogger::test_scalars_read_back_at_their_steps",  # a value of a step went missing; close twice raised
        "TestTruncatingLogger::test_scalars_read_back_at_their_steps",  # a step beyond 32 bits came back wrong
        "TestCarelessBackend::test_a_realistic_state_round_trips",  # repr() cannot hold tensors
        "TestCarelessBackend::test_load_picks_the_newest_and_keep_last_prunes_the_oldest",  # nothing pruned
        "TestCarelessBackend::test_a_failed_write_leaves_no_checkpoint_under_a_real_name",  # written in place
    }
    passing = {
        "TestForgetfulLogger::test_resume_from_a_checkpoint",
        "TestTruncatingLogger::test_resume_from_a_checkpoint",
        "TestCarelessBackend::test_keep_last_must_be_positive",
    }
    select = " or ".join(name.split("::")[1] for name in failing | passing)
    args = ["-q", "-rf", "-p", "no:cacheprovider", "-p", "no:timeout", "--import-mode=importlib", "--rootdir", str(tmp_path), "-k", select]
    code = pytest.main([*args, str(module)])
    output = capsys.readouterr().out
    assert code == pytest.ExitCode.TESTS_FAILED, output
    failed = set(re.findall(r"^FAILED \S+::(\w+::\w+)", output, flags=re.M))
    assert failed == failing, output
    assert f"{len(failing)} failed, {len(passing)} passed" in output, output


def test_an_algorithms_loss_module_is_tested_with_its_hooks_and_wrappers(rl_make_trainer: Callable[..., rlcore.Trainer]) -> None:
    pytest.importorskip("rl_plugin_dqn")
    pytest.importorskip("rl_plugin_envs")
    import gymnasium

    from rl_plugin_dqn import build_dqn
    from rl_plugin_replay import HardUpdate, ReplayBufferTrainer, make_replay_buffer

    space = gymnasium.spaces.Box(-float("inf"), float("inf"), (4,))
    loss = build_dqn({"hidden_sizes": [16], "init_random_frames": 64, "n_step": 1}, space, gymnasium.spaces.Discrete(2))
    replay = ReplayBufferTrainer(make_replay_buffer(1000), batch_size=16, flatten_tensordicts=True)
    trainer = rl_make_trainer(
        loss_module=loss,
        hooks={"replay_buffer": replay, "target_updater": HardUpdate(interval=4)},
        wrappers={"scale_reward": {"scale": 0.5}},
        plugin_manager=rlcore.get_plugin_manager(),  # (where the wrapper is)
    )
    trainer.train()
    assert trainer.optim_steps == 6 and len(replay.replay_buffer) == 128  # none in the first batch (init_random_frames)
    assert bool((replay.replay_buffer.storage.column(("next", "reward"))[:128] == 0.5).all())  # the wrapper's rewards
    with pytest.raises(ValueError, match=r"^make_trainer's own loss needs an env with a flat observation and discrete actions; Pendulum-v1 has Box"):
        rl_make_trainer(env_id="Pendulum-v1")


def test_a_trainer_hook_whose_hook_methods_its_register_leaves_out_is_refused(rl_make_trainer: Callable[..., rlcore.Trainer]) -> None:
    class Mixed(TrainerHookBase):  # register_op-s one thing, and has a hook method that nothing registers
        def register(self, trainer: rlcore.Trainer, name: str = "mixed") -> None:
            trainer.register_op("post_steps", lambda: None)

        @hookimpl
        def rl_post_steps(self) -> None: ...

        def state_dict(self) -> dict:
            return {}

        def load_state_dict(self, state: dict) -> None: ...

    with pytest.raises(rlcore.PluginError, match=r"^hooks.mixed: Mixed is an rlcore.TrainerHookBase with hook methods \(rl_post_steps\) that its register\(\) "):
        rl_make_trainer(hooks={"mixed": Mixed()})

    class Registered(Mixed):  # the replay buffer's way: register() registers the hook methods too
        def register(self, trainer: rlcore.Trainer, name: str = "mixed") -> None:
            trainer.register_plugin(self, f"hooks.{name}")

    assert rl_make_trainer(hooks={"mixed": Registered()}).plugin_manager.has_plugin("hooks.mixed")


@pytest.mark.slow
def test_kill_and_resume_kills_a_run_and_wants_it_seeded(tmp_path: Path) -> None:
    """The killed run is killed for real (SIGKILL, its checkpoints left); runs without one seed cannot be compared."""
    pytest.importorskip("rl_plugin_pg")
    args = ["train", "--algo", "ppo", "--env", "CartPole-v1", "--frames", "2048", "--set", "collector.frames_per_batch=256",
            "--set", "trainer.save_trainer_interval=256", "--set", "checkpoint.keep_last=20", "--set", "loggers.console=null"]  # fmt: skip
    with pytest.raises(AssertionError, match=r"drew different seeds .*--seed N"):
        kill_and_resume(tmp_path, args, kill_after=512, env={"RLCORE_PLUGINS": "rl-plugin-pg"})
    frames = sorted(int(p.name[5:17]) for p in (tmp_path / "resumed" / "checkpoints").glob("ckpt-*"))
    assert 512 in frames and frames[-1] < 2048  # killed after its checkpoint at 512 frames, before the end


class Scale(gymnasium.vector.VectorWrapper):
    """Rewards times ``factor``; counts its steps (its state, checkpointed)."""

    def __init__(self, env: Any, factor: float) -> None:
        super().__init__(env)
        self.factor, self.steps = factor, 0

    def step(self, actions: Any) -> Any:
        obs, reward, terminated, truncated, info = self.env.step(actions)
        self.steps += 1
        return obs, reward * self.factor, terminated, truncated, info

    def state_dict(self) -> dict[str, Any]:
        return {"steps": self.steps}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.steps = state["steps"]


def scale(env: Any, factor: Annotated[float, rlcore.Range(gt=0)] = 1.0) -> Scale:
    return Scale(env, factor)


def counter(every: int = 1) -> Counter:
    return Counter()


def test_make_trainer_uses_the_wrappers_and_hooks_of_the_plugins_it_is_given(tmp_path: Path) -> None:
    """A plugin module given to make_trainer registers before the env: its wrapper (options checked, state checkpointed) and hook by name."""
    plugin = types.ModuleType("rl_plugin_scaling")
    plugin.rl_register_env_wrappers = hookimpl(lambda: {"scale": scale})  # type: ignore[attr-defined]
    plugin.rl_register_hooks = hookimpl(lambda: {"counter": counter})  # type: ignore[attr-defined]
    recorder = HookRecorder()
    trainer = make_trainer(tmp_path, plugins=[plugin, recorder], wrappers={"scale": {"factor": 0.5}}, hooks={"counter": {"every": 2}})
    trainer.train()
    assert all(call["batch"]["next", "reward"].eq(0.5).all() for call in recorder.of("batch_process"))
    state = trainer.modules["env"].state_dict()
    assert state == {"0:Scale": {"steps": 64}} and trainer.modules["counter"].count == 4
    with pytest.raises(rlcore.ConfigError, match=r"^env.wrappers.scale.factor: "):
        make_trainer(tmp_path / "b", plugins=[plugin], wrappers={"scale": {"factor": -1}})
    with pytest.raises(rlcore.ConfigError, match=r"^unknown key hooks.counter.evry"):
        make_trainer(tmp_path / "c", plugins=[plugin], hooks={"counter": {"evry": 2}})
    with pytest.raises(rlcore.PluginError, match=r"^hooks.counter: 2 is neither an rlcore.TrainerHookBase nor an object with hook methods"):
        make_trainer(tmp_path / "d", hooks={"counter": 2})


@pytest.mark.slow  # (a subprocess)
def test_run_rlctl_in_this_process_says_what_a_subprocess_says_and_restores_what_it_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import signal

    import torch

    from rlcore_testing import run_rlctl

    pytest.importorskip("rl_plugin_pg")
    monkeypatch.setenv("RLCORE_KIT_PROBE", "before")
    torch.set_num_threads(2)
    handlers, here = [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)], Path.cwd()
    short = ("--frames", "64", "--set", "collector.frames_per_batch=32", "--set", "loggers.console=null")
    done = run_rlctl("train", "--algo", "ppo", *short, "--out", "run", env={"RLCORE_KIT_PROBE": "during"}, cwd=tmp_path)
    assert done.returncode == 0 and done.stderr.strip() == "rlctl: 64 frames, run directory run", done.stderr
    assert (tmp_path / "run" / "config.yaml").is_file()  # in cwd
    # what rlctl set (the env, the working directory, its signal handlers, one torch thread) is undone
    assert os.environ["RLCORE_KIT_PROBE"] == "before" and Path.cwd() == here and torch.get_num_threads() == 2
    assert [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)] == handlers
    bad = ("train", "--algo", "ppo", "--set", "optim.lr=-1")
    inside, apart = run_rlctl(*bad, cwd=tmp_path), run_rlctl(*bad, cwd=tmp_path, subprocess=True)
    assert inside == apart and inside.returncode == 2 and inside.stderr.startswith("rlctl: error: optim.lr"), (inside, apart)
