"""The loop: hook order, chaining of data hooks, pluggy ordering and wrappers, TorchRL-style registration."""

from __future__ import annotations

import csv
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch

import rlcore
from rlcore import TrainerHookBase, hookimpl

BATCH = ["batch_process", "pre_steps_log", "pre_optim_steps"]
STEP = ["process_optim_batch", "post_loss", "optimizer", "post_optim", "post_optim_log"]
END = ["post_steps", "post_steps_log"]


def make_trainer(pm: rlcore.PluginManager, run_dir: Path, resume: bool = False, **trainer: Any) -> rlcore.Trainer:
    config = {"algo": {"name": "toy"}, "trainer": {"seed": 1, **trainer}, "loggers": {"csv": {}}}
    return rlcore.build_trainer(config, run_dir=run_dir, plugin_manager=pm, resume=resume)


def metrics(run_dir: Path) -> list[dict[str, str]]:
    with open(run_dir / "metrics.csv", newline="") as handle:
        return list(csv.DictReader(handle))


def test_every_hook_point_is_called_in_the_documented_order(toy_pm, tmp_path):
    import rl_plugin_hookrecorder

    trainer = make_trainer(toy_pm, tmp_path)
    trainer.train()
    batch = BATCH + STEP * 2 + END
    assert ["setup", *batch * 4, "shutdown"] == rl_plugin_hookrecorder.CALLS
    assert trainer.collected_frames == 256 and trainer.batches == 4 and trainer.optim_steps == 8
    rows = metrics(tmp_path)
    assert [r["frames"] for r in rows if r["name"] == "recorder/batch_frames"] == ["64", "128", "192", "256"]
    assert {"loss/objective", "train/entropy", "optim/lr", "perf/fps", "train/episode_return"} <= {r["name"] for r in rows}


def test_exception_hook_then_shutdown_and_checkpoint_survives(toy_pm, tmp_path):
    import rl_plugin_hookrecorder

    class Boom:
        @hookimpl
        def rl_post_steps(self, trainer):
            if trainer.collected_frames >= 192:
                raise RuntimeError("boom")

    trainer = make_trainer(toy_pm, tmp_path, save_trainer_interval=64)
    trainer.register_plugin(Boom())
    with pytest.raises(RuntimeError, match="boom"):
        trainer.train()
    assert rl_plugin_hookrecorder.CALLS[-2:] == ["exception:RuntimeError", "shutdown"]
    assert [p.name for p in trainer.checkpoint.checkpoints()] == ["ckpt-000000000064.pt", "ckpt-000000000128.pt"]
    assert max(int(r["frames"]) for r in metrics(tmp_path)) == 192  # everything logged before the failure is there


class Tag:
    """A data-hook plugin that appends its tag to a list carried by the batch."""

    def __init__(self, tag: str, seen: list[str], new_batch: bool, **opts: Any) -> None:
        self.tag, self.seen, self.new_batch = tag, seen, new_batch

        @hookimpl(**opts)
        def rl_batch_process(batch):
            self.seen.append(f"{self.tag}<-{batch.get_non_tensor('tag', 'collected')}")
            if self.new_batch:
                out = batch.clone(False)
                out.set_non_tensor("tag", self.tag)
                return out
            batch.set_non_tensor("tag", self.tag)  # changed in place, returns None
            return None

        self.rl_batch_process = rl_batch_process


def test_data_hooks_chain_in_pluggy_order(toy_pm, tmp_path):
    seen: list[str] = []
    trainer = make_trainer(toy_pm, tmp_path, total_frames=64)
    trainer.register_plugin(Tag("last", seen, True, trylast=True), "last")
    trainer.register_plugin(Tag("plain", seen, False), "plain")
    trainer.register_plugin(Tag("first", seen, True, tryfirst=True), "first")
    trainer.register_plugin(Tag("plain2", seen, True), "plain2")
    trainer.train()
    # tryfirst, then LIFO among plain ones, trylast at the end: each sees the previous output
    assert seen == ["first<-collected", "plain2<-first", "plain<-plain2", "last<-plain"]


def test_wrappers_of_a_data_hook_see_input_and_final_output(toy_pm, tmp_path):
    events: list[str] = []

    class NewStyle:
        @hookimpl(wrapper=True)
        def rl_process_optim_batch(self, batch):
            events.append(f"new-in:{batch.shape[-1]}")
            result = yield
            events.append(f"new-out:{result.shape[0]}")
            return result[:5]

    class OldStyle:
        @hookimpl(hookwrapper=True)
        def rl_process_optim_batch(self, batch):
            outcome = yield
            events.append(f"old-out:{outcome.get_result().shape[0]}")

    class Observer:
        @hookimpl(wrapper=True)
        def rl_process_optim_batch(self, batch):
            return (yield)  # looks, and hands the result on, as a pluggy wrapper does

    class Flatten:
        @hookimpl
        def rl_process_optim_batch(self, batch):
            return batch.reshape(-1)

    seen_shapes: list[int] = []
    trainer = make_trainer(toy_pm, tmp_path, total_frames=64, optim_steps_per_batch=1)
    trainer.register_plugin(Flatten(), "flatten")
    trainer.register_plugin(OldStyle(), "old")
    trainer.register_plugin(NewStyle(), "new")
    trainer.register_plugin(Observer(), "observer")
    trainer.register_op("post_loss", lambda sub: seen_shapes.append(sub.shape[0]))
    trainer.train()
    assert events == ["new-in:32", "old-out:64", "new-out:64"]
    assert seen_shapes == [5]


def test_every_shutdown_implementation_runs_and_the_first_error_is_raised(toy_pm, tmp_path):
    calls: list[str] = []

    class Fails:
        @hookimpl(tryfirst=True)
        def rl_shutdown(self):
            calls.append("fails")
            raise RuntimeError("cleanup failed")

    class Cleans:
        @hookimpl
        def rl_shutdown(self):
            calls.append("cleans")

    trainer = make_trainer(toy_pm, tmp_path, total_frames=64)
    trainer.register_plugin(Fails(), "fails")
    trainer.register_plugin(Cleans(), "cleans")
    with pytest.raises(RuntimeError, match="cleanup failed"):
        trainer.train()
    assert calls == ["fails", "cleans"]


def test_a_shutdown_error_does_not_hide_the_runs_own(toy_pm, tmp_path, capsys):
    class Fails:
        @hookimpl
        def rl_shutdown(self):
            raise RuntimeError("cleanup failed")

        @hookimpl
        def rl_post_steps(self):
            raise ValueError("the run's own error")

    trainer = make_trainer(toy_pm, tmp_path, total_frames=64)
    trainer.register_plugin(Fails(), "fails")
    with pytest.raises(ValueError, match="the run's own error"):
        trainer.train()
    err = capsys.readouterr().err
    assert "while stopping" in err and "cleanup failed" in err


def test_a_finite_collector_ends_the_run_with_its_last_batch_and_a_checkpoint(toy_pm, tmp_path):
    trainer = make_trainer(toy_pm, tmp_path, total_frames=10_000)
    batches = [trainer.collector.collect() for _ in range(2)]
    trainer.collector = iter(batches)  # any iterable of batches is a collector (no seeding, no checkpoint of its own)
    trainer.train()
    assert trainer.collected_frames == 128 and trainer.batches == 2
    assert (tmp_path / "checkpoints" / "ckpt-000000000128.pt").exists()


def test_optimizer_hook_can_be_replaced(toy_pm, tmp_path):
    class NoStep:
        @hookimpl
        def rl_optimizer(self, trainer, losses):
            return {"skipped": 1.0}

    trainer = make_trainer(toy_pm, tmp_path, total_frames=128)
    trainer.register_plugin(NoStep())
    before = [p.detach().clone() for p in trainer.loss_module.parameters()]
    trainer.train()
    assert all(torch.equal(a, b) for a, b in zip(before, trainer.loss_module.parameters()))
    assert "optim/skipped" in {r["name"] for r in metrics(tmp_path)}


def test_register_op_runs_in_registration_order_with_torchrl_signatures(toy_pm, tmp_path):
    calls: list[str] = []
    trainer = make_trainer(toy_pm, tmp_path, total_frames=64)

    def double_reward(batch):
        calls.append("double")
        batch["next", "reward"] = batch["next", "reward"] * 2
        return batch

    def check_reward(batch, expected):
        calls.append("check")
        assert float(batch["next", "reward"].max()) == expected

    trainer.register_op("batch_process", double_reward)
    trainer.register_op("batch_process", check_reward, expected=2.0)
    trainer.register_op("pre_optim_steps", lambda: calls.append("pre_optim"))
    trainer.register_op("post_steps_log", lambda batch: {"custom/value": 3.0, "log_pbar": True})
    with pytest.raises(ValueError, match="unknown hook point 'nope'"):
        trainer.register_op("nope", print)
    trainer.train()
    assert calls == ["double", "check", "pre_optim"]
    assert [r["value"] for r in metrics(tmp_path) if r["name"] == "custom/value"] == ["3.0"]
    assert trainer._pbar_values["custom/value"] == 3.0


class CountingHook(TrainerHookBase):
    """A TorchRL-style hook: counts optimizer steps, state in checkpoints."""

    def __init__(self) -> None:
        self.count = 0

    def step(self) -> None:
        self.count += 1

    def state_dict(self) -> dict[str, Any]:
        return {"count": self.count}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.count = state_dict["count"]

    def register(self, trainer, name: str) -> None:
        trainer.register_op("post_optim", self.step)
        trainer.register_module(name, self)


def test_trainer_hook_base_state_round_trips_through_a_checkpoint(toy_pm, tmp_path):
    trainer = make_trainer(toy_pm, tmp_path)
    hook = CountingHook()
    hook.register(trainer, "counter")
    trainer.train()
    assert hook.count == 8
    fresh = make_trainer(toy_pm, tmp_path, resume=True)
    restored = CountingHook()
    restored.register(fresh, "counter")
    path = fresh.load_from_file()  # once more, now that the hook is registered
    assert path.name == "ckpt-000000000256.pt"
    assert restored.count == 8 and fresh.collected_frames == 256 and fresh.optim_steps == 8
    for a, b in zip(trainer.loss_module.parameters(), fresh.loss_module.parameters()):
        assert torch.equal(a, b)


def test_log_interval_throttles_per_metric(toy_pm, tmp_path):
    trainer = make_trainer(toy_pm, tmp_path, log_interval=128)
    trainer.train()
    frames = [r["frames"] for r in metrics(tmp_path) if r["name"] == "loss/objective"]
    assert frames == ["64", "192", "256"]  # and the mean of the values after 192, at the end of the run


def test_a_metric_is_logged_once_per_frame_count(toy_pm, tmp_path):
    class EveryStep:
        @hookimpl
        def rl_post_optim_log(self, trainer):
            return {"mine/step": trainer.optim_steps}

    trainer = make_trainer(toy_pm, tmp_path, log_interval=1)
    trainer.register_plugin(EveryStep())  # two optimisation steps a batch, each logs at the batch's frame count
    trainer.train()
    rows = [(r["frames"], float(r["value"])) for r in metrics(tmp_path) if r["name"] == "mine/step"]
    assert rows == [("64", 1), ("128", 2.5), ("192", 4.5), ("256", 6.5)]  # the first value at a frame count, then the mean since
    with pytest.raises(TypeError, match="cannot log 1: a metric's name is a string, got int"):
        trainer.log({1: 2.0})


def test_a_gauge_is_logged_as_it_stands_and_a_constant_mean_stays_exact(toy_pm, tmp_path):
    class Gauges:
        @hookimpl
        def rl_post_optim_log(self, trainer):
            return {"mine/size": rlcore.Gauge(trainer.optim_steps), "mine/mean": trainer.optim_steps, "mine/lr": 1e-3}

    trainer = make_trainer(toy_pm, tmp_path, log_interval=128)
    trainer.register_plugin(Gauges())
    trainer.train()
    logged = {name: [(r["frames"], float(r["value"])) for r in metrics(tmp_path) if r["name"] == name] for name in ("mine/size", "mine/mean", "mine/lr")}
    assert logged["mine/size"] == [("64", 1), ("192", 5), ("256", 8)]  # the value at each point
    assert logged["mine/mean"] == [("64", 1), ("192", 3.5), ("256", 7)]  # the mean of the values since the last point
    assert logged["mine/lr"] == [("64", 1e-3), ("192", 1e-3), ("256", 1e-3)]  # a constant's mean is itself, to the bit


def test_stop_and_stop_optim_steps(toy_pm, tmp_path):
    class Control:
        @hookimpl
        def rl_post_optim(self, trainer):
            trainer.stop_optim_steps()

        @hookimpl
        def rl_post_steps(self, trainer):
            if trainer.batches == 1:
                trainer.stop()

    trainer = make_trainer(toy_pm, tmp_path, total_frames=10_000)
    trainer.register_plugin(Control())
    trainer.train()
    assert trainer.batches == 2 and trainer.optim_steps == 2 and trainer.collected_frames == 128


class FailingLogger(rlcore.Logger):
    def log_scalar(self, name, value, step):
        raise OSError("disk full")


def test_failing_logger_is_reported_once_and_dropped(toy_pm, tmp_path):
    trainer = make_trainer(toy_pm, tmp_path)
    failing = trainer.guard(FailingLogger("x", tmp_path))
    trainer.loggers.append(failing)
    with pytest.warns(UserWarning) as caught:
        trainer.train()
    dropped = [str(w.message) for w in caught if "dropped" in str(w.message)]
    assert dropped == ["logger FailingLogger failed: OSError: disk full; it is dropped and the run goes on"]
    failing._thread.join(5)
    assert not failing._thread.is_alive()  # its worker ended with it
    assert [r["frames"] for r in metrics(tmp_path) if r["name"] == "loss/objective"] == ["64", "128", "192", "256"]


class CannotStart:
    """A logger plugin whose backend cannot be opened: its factory raises."""

    @staticmethod
    def open_backend(exp_name: str, log_dir: str) -> rlcore.Logger:
        raise OSError("cannot open the log backend")

    @hookimpl
    def rl_register_loggers(self) -> dict[str, Any]:
        return {"unopenable": self.open_backend}


def test_a_logger_that_cannot_be_set_up_is_dropped_naming_its_plugin(toy_pm, tmp_path):
    toy_pm.add_plugin(CannotStart(), "cannotstart")
    config = rlcore.load_config(plugin_manager=toy_pm, algo={"name": "toy"}, loggers={"unopenable": {}}, trainer={"total_frames": 128})
    with pytest.warns(UserWarning) as caught:  # at once, as the run is built
        trainer = rlcore.build_trainer(config, run_dir=tmp_path / "run", plugin_manager=toy_pm)
    trainer.train()
    dropped = [str(w.message) for w in caught if "dropped" in str(w.message)]
    assert dropped == [
        "logger unopenable of plugin 'cannotstart' could not be set up (OSError: cannot open the log backend); it is dropped and the run goes on"
    ]
    assert trainer.collected_frames == 128 and "loss/objective" in (tmp_path / "run" / "metrics.csv").read_text()


class HangingLogger(rlcore.Logger):
    """A backend that stops answering at its second write (a server that went away)."""

    def __init__(self, exp_name, log_dir):
        super().__init__(exp_name, log_dir)
        self.writes = 0
        self.release = threading.Event()

    def log_scalars(self, values, step):
        self.writes += 1
        if self.writes == 2:
            self.release.wait(60)


def test_a_logger_that_stops_answering_is_dropped_at_its_deadline(toy_pm, tmp_path):
    config = {"algo": {"name": "toy"}, "trainer": {"seed": 1, "logger_timeout": 0.5, "save_trainer_interval": 64}, "loggers": {"csv": {}}}
    trainer = rlcore.build_trainer(config, run_dir=tmp_path, plugin_manager=toy_pm)
    hanging = HangingLogger("x", tmp_path)
    guard = trainer.guard(hanging)
    trainer.loggers.append(guard)
    start = time.monotonic()
    with pytest.warns(UserWarning, match=r"logger HangingLogger did not answer within 0.5 s; it is dropped and the run goes on"):
        trainer.train()
    assert time.monotonic() - start < 10  # the run waited once, for the deadline, not for the backend
    hanging.release.set()
    guard._thread.join(5)
    assert not guard._thread.is_alive() and hanging.writes == 2  # once free, its worker ended, running none of the calls queued since
    assert trainer.collected_frames == 256 and all(getattr(one, "logger", None) is not hanging for one in trainer.loggers)
    assert [r["frames"] for r in metrics(tmp_path) if r["name"] == "loss/objective"] == ["64", "128", "192", "256"]


class SlowLogger(rlcore.Logger):
    """A backend that answers every write in time, but too slowly to keep up (a slow link)."""

    def log_scalars(self, values, step):
        time.sleep(0.2)


def test_a_logger_that_falls_behind_is_dropped_with_a_warning_not_silently(toy_pm, tmp_path):
    config = {"algo": {"name": "toy"}, "trainer": {"seed": 1, "logger_timeout": 0.5, "save_trainer_interval": 64}, "loggers": {"csv": {}}}
    trainer = rlcore.build_trainer(config, run_dir=tmp_path, plugin_manager=toy_pm)
    trainer.loggers.append(trainer.guard(SlowLogger("x", tmp_path)))
    with pytest.warns(UserWarning, match=r"logger SlowLogger did not write what it was given within 0.5 s; it is dropped and the run goes on"):
        trainer.train()
    assert [r["frames"] for r in metrics(tmp_path) if r["name"] == "loss/objective"] == ["64", "128", "192", "256"]


def test_a_config_hook_object_named_like_the_plugin_that_provides_it(toy_pm, tmp_path):
    calls: list[int] = []

    class Counter:  # what the hook factory returns: an object with hook implementations, not a TrainerHookBase
        @hookimpl
        def rl_post_steps(self, trainer):
            calls.append(trainer.collected_frames)

    class Provider:  # the installed plugin "tally", which registers the hook "tally" (as the scaffold names them)
        @hookimpl
        def rl_register_hooks(self):
            return {"tally": Counter}

    assert toy_pm.add_plugin(Provider(), "tally")
    config = {"algo": {"name": "toy"}, "trainer": {"seed": 1}, "loggers": {"csv": {}}, "hooks": {"tally": {}}}
    rlcore.build_trainer(config, run_dir=tmp_path, plugin_manager=toy_pm).train()
    assert calls == [64, 128, 192, 256] and toy_pm.infos["tally"].ok


def test_the_env_is_closed_when_the_algorithm_fails_to_build(toy_pm, tmp_path):
    from rlcore.builtins.gymnasium_envs import sync_vector_env

    closed: list[bool] = []

    def tracked(make_env, num_envs, **_):  # the builtin sync env, noting when it is closed
        env = sync_vector_env(make_env, num_envs)
        close = env.close
        env.close = lambda **kwargs: (closed.append(True), close(**kwargs))[1]
        return env

    def fails(**_):
        raise RuntimeError("the network does not fit")

    class Provider:
        @hookimpl
        def rl_register_vectorizations(self):
            return {"tracked": tracked}

        @hookimpl
        def rl_register_algorithms(self):
            return [rlcore.Algorithm("fails", fails, defaults={"algo": {}})]

    assert toy_pm.add_plugin(Provider(), "failing-build")
    config = {"algo": {"name": "fails"}, "env": {"vectorization": "tracked"}, "loggers": {"csv": {}}}
    with pytest.raises(RuntimeError, match="does not fit"):
        rlcore.build_trainer(config, run_dir=tmp_path, plugin_manager=toy_pm)
    assert closed == [True]  # (an async env's worker processes would have been left running)


def test_same_seed_same_run(toy_pm, tmp_path):
    runs = []
    for name in ("a", "b"):
        trainer = make_trainer(toy_pm, tmp_path / name)
        trainer.train()
        runs.append([p.detach().clone() for p in trainer.loss_module.parameters()])
    assert all(torch.equal(a, b) for a, b in zip(*runs))


def _trainer_of_own_loss(tmp_path: Path, loss_key: str) -> rlcore.Trainer:
    import gymnasium as gym
    from tensordict import TensorDict
    from tensordict.nn import TensorDictModule

    env = gym.make_vec("CartPole-v1", 2, vectorization_mode="sync", vector_kwargs={"autoreset_mode": gym.vector.AutoresetMode.SAME_STEP})
    net = torch.nn.Linear(4, 2)
    policy = TensorDictModule(lambda obs: net(obs).argmax(-1), in_keys=["observation"], out_keys=["action"])

    class Loss(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.net, self.policy = net, policy

        def forward(self, batch):
            return TensorDict({loss_key: self.net(batch["observation"]).pow(2).mean()}, [])

    loss = Loss()
    pm = rlcore.PluginManager(discover=False)
    return rlcore.Trainer(
        collector=rlcore.Collector(env, policy, 32),
        loss_module=loss,
        optimizer=torch.optim.SGD(loss.parameters(), lr=0.1),
        total_frames=96,
        clip_norm=1.0,
        log_interval=1,
        loggers=[rlcore.get_logger("csv", exp_name="mine", log_dir=tmp_path)],
        plugin_manager=pm,
        progress_bar=False,
    )


def test_trainer_without_build_trainer(tmp_path):
    """`pip install rl-core` alone: the user's own loss module on the embedded defaults."""
    trainer = _trainer_of_own_loss(tmp_path, "loss_value")
    trainer.train()
    assert [r["frames"] for r in metrics(tmp_path) if r["name"] == "loss/value"] == ["32", "64", "96"]
    assert "optim/grad_norm" in {r["name"] for r in metrics(tmp_path)}


def test_a_loss_module_without_loss_entries_is_named_in_the_error(tmp_path):
    trainer = _trainer_of_own_loss(tmp_path, "value")
    with pytest.raises(ValueError, match=r"no 'loss\*' entry to optimise \(got value\)"):
        trainer.train()


@pytest.mark.slow
def test_generate_exp_name_is_unique_and_sorts_by_time():
    import time

    names = []
    for _ in range(3):
        names.append(rlcore.generate_exp_name("ppo_CartPole-v1"))
        time.sleep(1.01)
    assert sorted(names) == names and len(set(names)) == 3
    assert all(n.startswith("ppo_CartPole-v1_") for n in names)
    assert len({rlcore.generate_exp_name("x") for _ in range(50)}) == 50


def test_clip_by_value(toy_pm, tmp_path):
    trainer = make_trainer(toy_pm, tmp_path, total_frames=64, clip_norm=1e-6, clip_grad_norm=False)
    seen = []

    class Grads:
        @hookimpl(wrapper=True)
        def rl_optimizer(self, trainer):
            result = yield
            seen.append(max(p.grad.abs().max().item() for p in trainer.loss_module.parameters()))
            return result

    trainer.register_plugin(Grads())
    trainer.train()
    assert seen and max(seen) <= 1e-6


def test_envs_that_cannot_be_saved_resume_with_fresh_episodes(toy_pm, tmp_path):
    config = {"algo": {"name": "toy"}, "env": {"id": "opaque-cartpole"}, "trainer": {"total_frames": 64, "seed": 0}}
    trainer = rlcore.build_trainer(config, run_dir=tmp_path, plugin_manager=toy_pm)
    trainer.train()
    with pytest.warns(UserWarning, match="cannot be saved .*starts fresh episodes"):
        resumed = rlcore.build_trainer({**config, "trainer": {"total_frames": 128, "seed": 0}}, run_dir=tmp_path, plugin_manager=toy_pm, resume=True)
    resumed.train()
    assert resumed.collected_frames == 128


@pytest.mark.parametrize("vectorization", ["sync", "async"])
def test_resume_continues_the_running_episodes_of_sync_and_async_envs(toy_pm, tmp_path, vectorization):
    config = {"algo": {"name": "toy"}, "env": {"vectorization": vectorization}, "trainer": {"total_frames": 64, "seed": 0}}
    whole = rlcore.build_trainer({**config, "trainer": {"total_frames": 128, "seed": 0}}, run_dir=tmp_path / "whole", plugin_manager=toy_pm)
    whole.train()
    half = rlcore.build_trainer(config, run_dir=tmp_path / "half", plugin_manager=toy_pm)
    half.train()
    resumed = rlcore.build_trainer({**config, "trainer": {"total_frames": 128, "seed": 0}}, run_dir=tmp_path / "half", plugin_manager=toy_pm, resume=True)
    resumed.train()
    for a, b in zip(whole.loss_module.parameters(), resumed.loss_module.parameters()):
        assert torch.equal(a, b)
    assert resumed.collector.finished_episodes[0].tolist() == whole.collector.finished_episodes[0].tolist()


@pytest.mark.parametrize("max_norm", [1e-3, 1e3])
def test_clip_grad_norm_matches_torch(max_norm):
    from rlcore._kernel.trainer import clip_grad_norm

    torch.manual_seed(0)
    ours = [torch.nn.Parameter(torch.randn(shape)) for shape in [(2, 4, 8), (8,), (3, 8), (1,)]]
    theirs = [torch.nn.Parameter(p.detach().clone()) for p in ours]
    for a, b in zip(ours, theirs, strict=True):
        a.grad = torch.randn_like(a)
        b.grad = a.grad.clone()
    ours[-1].grad = theirs[-1].grad = None  # a parameter without gradient is left out
    norm = clip_grad_norm(ours, max_norm)
    expected = torch.nn.utils.clip_grad_norm_(theirs, max_norm)
    torch.testing.assert_close(norm, expected)
    for a, b in zip(ours[:-1], theirs[:-1], strict=True):
        torch.testing.assert_close(a.grad, b.grad)
    assert (norm > max_norm) == (max_norm == 1e-3)


class RefuseAtSetup:
    """A hook that checks its options when the run starts, as rl-plugin-video's check their directory."""

    def __init__(self, at_batch: int = 0) -> None:
        self.at_batch = at_batch

    @hookimpl
    def rl_setup(self) -> None:
        if self.at_batch == 0:
            raise rlcore.ConfigError("hooks.refuser.option: refused")

    @hookimpl
    def rl_post_steps(self, trainer) -> None:
        if trainer.batches == self.at_batch:
            raise rlcore.ConfigError("hooks.refuser.option: refused late")


@pytest.mark.parametrize("existing", [False, True])
def test_a_run_refused_as_it_starts_leaves_no_run_directory(toy_pm, tmp_path, existing):
    run_dir = tmp_path / "run"
    if existing:
        run_dir.mkdir()  # an empty directory given with --out: empty again
    config = rlcore.load_config(plugin_manager=toy_pm, algo={"name": "toy"}, trainer={"total_frames": 256, "save_trainer_interval": 64})
    trainer = rlcore.build_trainer(config, run_dir=run_dir, plugin_manager=toy_pm)
    trainer.register_plugin(RefuseAtSetup(), "refuser")
    with pytest.raises(rlcore.ConfigError, match="refused"):
        trainer.train()
    assert (run_dir.exists() and not any(run_dir.iterdir())) if existing else not run_dir.exists()
    again = rlcore.build_trainer(config, run_dir=run_dir, plugin_manager=toy_pm)  # the same --out is free
    again.train()
    late = rlcore.build_trainer(config, run_dir=tmp_path / "late", plugin_manager=toy_pm)
    late.register_plugin(RefuseAtSetup(at_batch=2), "refuser")
    with pytest.raises(rlcore.ConfigError, match="refused late"):
        late.train()
    assert (tmp_path / "late" / "config.yaml").exists() and (tmp_path / "late" / "checkpoints").is_dir()  # a run that trained keeps what it made


def test_a_trainer_shut_down_without_training_frees_its_run_directory(toy_pm, tmp_path):
    config = rlcore.load_config(plugin_manager=toy_pm, algo={"name": "toy"}, trainer={"total_frames": 128})
    rlcore.build_trainer(config, run_dir=tmp_path / "run", plugin_manager=toy_pm).shutdown()
    again = rlcore.build_trainer(config, run_dir=tmp_path / "run", plugin_manager=toy_pm, force=True)  # not held by the first
    again.train()
    assert again.collected_frames == 128


def test_resuming_a_finished_run_logs_no_row_twice(toy_pm, tmp_path):
    """The means pending at the end are logged, then checkpointed as logged (the last checkpoint, of the same frame count,
    held them pending: a resume of the finished run logged them again)."""
    trainer = make_trainer(toy_pm, tmp_path, total_frames=256, log_interval=1000, save_trainer_interval=256)
    trainer.train()
    rows = [(r["frames"], r["name"]) for r in metrics(tmp_path)]
    assert ("256", "loss/objective") in rows  # a pending mean, logged at the end
    again = make_trainer(toy_pm, tmp_path, resume=True, total_frames=256, log_interval=1000, save_trainer_interval=256)
    again.train()  # nothing left to train
    assert [(r["frames"], r["name"]) for r in metrics(tmp_path)] == rows


def test_a_newest_checkpoint_of_another_algorithm_is_skipped_with_a_warning(toy_pm, tmp_path):
    """A checkpoint that does not fit the run (another algorithm's, copied there) is skipped as an unreadable one is."""
    trainer = make_trainer(toy_pm, tmp_path, total_frames=128, save_trainer_interval=64)
    trainer.train()
    newest = tmp_path / "checkpoints" / "ckpt-000000000192.pt"
    torch.save({"loss_module": {"another": torch.zeros(3)}, "counters": {"collected_frames": 192, "batches": 3, "optim_steps": 6}}, newest)
    with pytest.warns(UserWarning, match=rf"skipping checkpoint {newest}: it does not fit this run \(Error\(s\) in loading state_dict"):
        resumed = make_trainer(toy_pm, tmp_path, resume=True, total_frames=256)
    assert resumed.resumed_from == tmp_path / "checkpoints" / "ckpt-000000000128.pt" and resumed.collected_frames == 128


class KeptOnFlush(rlcore.Logger):
    """Buffers what it is given and keeps it only on ``flush()``: what a kill would leave of a buffering logger."""

    def __init__(self, exp_name: str, log_dir: Path) -> None:
        super().__init__(exp_name, log_dir)
        self.buffer: list[int] = []
        self.kept: list[int] = []

    def log_scalar(self, name: str, value: float, step: int) -> None:
        self.buffer.append(step)

    def flush(self) -> None:
        self.kept += self.buffer
        self.buffer = []


def test_every_logger_is_flushed_before_each_checkpoint(toy_pm, tmp_path):
    """A checkpoint never counts frames its loggers' flushed data lacks (a kill right after it loses no logged step)."""
    logger = KeptOnFlush("run", tmp_path)
    trainer = make_trainer(toy_pm, tmp_path, save_trainer_interval=64)
    trainer.loggers.append(trainer.guard(logger))
    kept_at_save = []
    real_save = trainer.checkpoint.save

    def save(state, frames):
        kept_at_save.append((frames, max(logger.kept, default=0), max(logger.buffer, default=0)))
        return real_save(state, frames)

    trainer.checkpoint.save = save
    trainer.train()
    assert [frames for frames, _, _ in kept_at_save] == [64, 128, 192, 256]
    assert all(kept == frames and buffered == 0 for frames, kept, buffered in kept_at_save), kept_at_save


def test_a_checkpoint_saved_after_the_run_ended_does_not_wait_for_its_closed_loggers(toy_pm, tmp_path):
    """A script that trains, then saves once more: the loggers are closed, so there is nothing to flush or wait for,
    and none is dropped for a wait that could never end."""
    logger = KeptOnFlush("run", tmp_path)
    trainer = make_trainer(toy_pm, tmp_path, logger_timeout=1)
    guarded = trainer.guard(logger)
    trainer.loggers.append(guarded)
    trainer.train()
    trainer.collected_frames += 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (a dropped logger warns)
        trainer.save_trainer(force_save=True)
    assert trainer.dropped_loggers == {} and guarded.wait() and guarded.problem() is None
