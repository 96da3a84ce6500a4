"""The kernel's typed contracts: hook points listed once, protocols, TorchRL's Trainer parameters, typed options, install hints."""

from __future__ import annotations

import inspect
import math
import pickle
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import pytest
import tomllib
import torch
import yaml
from tensordict import TensorDict
from tensordict.nn import InteractionType, TensorDictModuleBase, interaction_type
from torch import nn

import rlcore
from rlcore import Range, TrainerHookBase, hookspecs
from rlcore._app.cli import main

ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- hook points


def test_hook_points_are_listed_once_and_register_op_takes_exactly_them():
    assert typing.get_args(hookspecs.HookPoint) == hookspecs.HOOK_POINTS
    assert tuple(f"rl_{p}" for p in hookspecs.HOOK_POINTS) == hookspecs.LOOP_HOOKS
    assert typing.get_type_hints(rlcore.Trainer.register_op)["dest"] is hookspecs.HookPoint
    assert set(hookspecs.DATA_HOOKS) | set(hookspecs.LOGGING_HOOKS) <= set(hookspecs.LOOP_HOOKS)
    for name in hookspecs.LOOP_HOOKS:  # every point has its hookspec
        assert callable(getattr(hookspecs, name))


# --------------------------------------------------------------------------- protocols


def test_the_builtin_parts_satisfy_the_documented_protocols():
    env = rlcore.make_vector_env("CartPole-v1", 2, wrappers={"normalize_observation": {}})
    loss = OwnLoss()
    collector = rlcore.Collector(env, loss.policy, 8)
    assert isinstance(collector, rlcore.CollectorProtocol)
    assert isinstance(env, rlcore.EnvWrapperProtocol)
    assert isinstance(env.env, rlcore.SaveableVectorEnv)  # the sync backend saves its envs
    async_env = rlcore.make_vector_env("CartPole-v1", 1, vectorization="async")
    try:
        assert isinstance(async_env, rlcore.SaveableVectorEnv)  # and so does the async one, from its workers
    finally:
        async_env.close()
        env.close()


# --------------------------------------------------------------------------- TorchRL's Trainer parameters


class OwnPolicy(TensorDictModuleBase):
    """A categorical policy over a linear layer (CartPole): the user's own, no plugin involved."""

    in_keys = ["observation"]
    out_keys = ["action", "sample_log_prob"]

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Linear(4, 2)

    def forward(self, td: TensorDict) -> TensorDict:
        logits = self.net(td["observation"])
        sample = interaction_type() == InteractionType.RANDOM
        action = torch.distributions.Categorical(logits=logits).sample() if sample else logits.argmax(-1)
        td["action"] = action
        td["sample_log_prob"] = torch.log_softmax(logits, -1).gather(-1, action.unsqueeze(-1)).squeeze(-1)
        return td


class OwnLoss(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.policy = OwnPolicy()

    def forward(self, batch: TensorDict) -> TensorDict:
        logits = self.policy.net(batch["observation"])
        log_prob = torch.log_softmax(logits, -1).gather(-1, batch["action"].unsqueeze(-1)).squeeze(-1)
        return TensorDict({"loss_objective": -(log_prob * batch["next", "reward"].squeeze(-1)).mean()}, [])


class CountBatches(TrainerHookBase):
    """A TorchRL-style stateful hook with a default name, as TorchRL's own hooks have."""

    def __init__(self) -> None:
        self.seen = 0

    def state_dict(self) -> dict[str, Any]:
        return {"seen": self.seen}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        self.seen = state_dict["seen"]

    def register(self, trainer: rlcore.Trainer, name: str = "count_batches") -> None:
        trainer.register_op("post_steps", self.count)
        trainer.register_module(name, self)

    def count(self) -> None:
        self.seen += 1


def torchrl_script(tmp_path: Path, save_trainer_file: Path, total_frames: int) -> tuple[rlcore.Trainer, CountBatches]:
    """A TorchRL training script with its imports changed to rl-core's."""
    from rlcore import Collector, Trainer, get_logger, make_vector_env

    torch.manual_seed(0)
    loss_module = OwnLoss()
    collector = Collector(make_vector_env("CartPole-v1", 2), loss_module.policy, frames_per_batch=32)
    trainer = Trainer(
        collector=collector,
        total_frames=total_frames,
        frame_skip=1,
        optim_steps_per_batch=2,
        loss_module=loss_module,
        optimizer=torch.optim.Adam(loss_module.parameters(), lr=1e-2),
        logger=get_logger("csv", logger_name=str(tmp_path), experiment_name="torchrl"),  # (TorchRL's signature)
        clip_grad_norm=True,
        clip_norm=1.0,
        progress_bar=False,
        seed=0,
        save_trainer_interval=32,
        log_interval=32,
        save_trainer_file=save_trainer_file,
    )
    hook = CountBatches()
    hook.register(trainer)
    return trainer, hook


def test_the_seed_api_takes_a_torchrl_script_s_arguments_or_refuses_them_at_once(tmp_path):
    from rlcore import Collector, Trainer, generate_exp_name, get_logger, make_vector_env

    builtins = rlcore.get_plugin_manager(only=[])
    logger = get_logger("csv", str(tmp_path / "logs"), "exp", csv_kwargs={"filename": "m.csv"}, plugin_manager=builtins)
    assert (logger.exp_name, Path(logger.log_dir), logger.path.name) == ("exp", tmp_path / "logs", "m.csv")
    with pytest.raises(TypeError, match=r"needs the run's name and directory: exp_name= and log_dir="):
        get_logger("csv", plugin_manager=builtins)
    name = generate_exp_name(model_name="ppo", experiment_name="cartpole")
    assert name.startswith("ppo_") and name.endswith("_cartpole")

    loss_module = OwnLoss()
    collector = Collector(make_vector_env("CartPole-v1", 2), loss_module.policy, frames_per_batch=32)
    trainer = Trainer(collector=collector, loss_module=loss_module, total_frames=64, optim_steps_per_batch=None, progress_bar=False)
    assert trainer.optim_steps_per_batch == 1  # (no steps of its own)
    loss_module.optim_steps_per_batch, loss_module.gamma = 6, 0.99  # an on-policy loss: epochs x minibatches
    assert isinstance(loss_module, rlcore.OnPolicyLoss)
    trainer = Trainer(collector=collector, loss_module=loss_module, total_frames=64, optim_steps_per_batch=None, progress_bar=False)
    assert trainer.optim_steps_per_batch == 6
    with pytest.raises(ValueError, match=r"^Trainer\(async_collection=True\): give the trainer an asynchronous collector instead"):
        Trainer(collector=collector, loss_module=loss_module, total_frames=64, async_collection=True)
    with pytest.raises(TypeError, match=r"the name is a string, got CountBatches \(the arguments swapped\?\)"):
        trainer.register_module(CountBatches(), "count")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"a module has state_dict\(\) and load_state_dict\(\); str has not"):
        trainer.register_module("count", "not a module")
    collector.shutdown()


@pytest.mark.parametrize("backend", ["torch", "torchsnapshot"])
def test_a_torchrl_script_runs_saves_and_resumes(tmp_path, backend):
    if backend == "torchsnapshot":
        pytest.importorskip("rl_plugin_torchsnapshot")
    file = tmp_path / ("trainer.pt" if backend == "torch" else "trainer_snapshot")
    trainer, hook = torchrl_script(tmp_path, file, total_frames=128)
    trainer.train()
    assert hook.seen == 4 and file.is_file() == (backend == "torch") and file.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tmp")]

    resumed, resumed_hook = torchrl_script(tmp_path, file, total_frames=192)
    resumed.load_from_file(file)
    assert resumed.collected_frames == 128 and resumed_hook.seen == 4
    for name, value in trainer.loss_module.state_dict().items():
        assert torch.equal(resumed.loss_module.state_dict()[name], value)
    resumed.train()
    assert resumed.collected_frames == 192 and resumed_hook.seen == 6
    _, state = resumed.checkpoint.load()
    assert state["counters"]["collected_frames"] == 192 and state["modules"]["count_batches"] == {"seen": 6}


def test_build_trainer_hands_make_env_to_the_constructor(tmp_path):
    config = {"algo": {"name": "ppo"}, "env": {"wrappers": {"normalize_observation": {}}}, "loggers": {"console": None}}
    trainer = rlcore.build_trainer(config, run_dir=tmp_path / "run")
    try:
        trainer.collector.collect()
        env = trainer.make_env(num_envs=1)
        assert env.num_envs == 1 and env.training is False
        assert torch.equal(torch.as_tensor(env.rms.mean), torch.as_tensor(trainer.collector.env.rms.mean))
        env.close()
    finally:
        trainer.collector.shutdown()


# --------------------------------------------------------------------------- typed options


@dataclass
class Options:
    count: Annotated[int, Range(ge=1)] = 4
    rate: Annotated[float, Range(gt=0, le=1)] = 0.5
    clip: float | None = None
    mode: Literal["fast", "slow"] = "fast"
    sizes: list[Annotated[int, Range(ge=1)]] = field(default_factory=lambda: [64, 64])
    table: dict[str, float] = field(default_factory=dict)
    schedule: dict[Literal["lr", "clip"], Annotated[float, Range(ge=0)] | None] = field(default_factory=dict)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"count": 0}, "opts.count: expected an integer >= 1, got 0"),
        ({"count": 2.5}, "opts.count: expected an integer >= 1, got 2.5"),
        ({"count": True}, "opts.count: expected an integer >= 1, got True"),
        ({"rate": float("nan")}, "opts.rate: expected a number > 0 and <= 1, got nan"),
        ({"rate": float("inf")}, "opts.rate: expected a number > 0 and <= 1, got inf"),
        ({"clip": "wide"}, "opts.clip: expected a number or null, got 'wide'"),
        ({"mode": "medium"}, "opts.mode: unknown value 'medium' (valid choices: fast, slow)"),
        ({"sizes": [64, 0]}, "opts.sizes: expected a list of integers >= 1, got [64, 0]"),
        ({"sizes": 64}, "opts.sizes: expected a list of integers >= 1, got 64"),
        ({"table": {"a": "x"}}, "opts.table.a: expected a number, got 'x'"),
        ({"table": [1]}, "opts.table: expected a mapping, got [1]"),
        ({"schedule": {"lr": 0, "cilp": 0}}, "unknown key opts.schedule.cilp (valid choices: lr, clip)"),
        ({"schedule": {"clip": -1}}, "opts.schedule.clip: expected a number >= 0 or null, got -1"),
        ({"cuont": 1}, "unknown key opts.cuont (valid choices: count, rate, clip, mode, sizes, table, schedule)"),
    ],
)
def test_validate_options_names_the_key_and_what_it_expected(values, message):
    with pytest.raises(rlcore.ConfigError) as raised:
        rlcore.validate_options("opts", Options, values)
    assert str(raised.value) == message


def test_validate_options_converts_numbers_as_people_write_them():
    assert rlcore.validate_options("opts", Options, {"count": 1e6, "rate": 1, "clip": None, "sizes": [32.0]}) == {
        "count": 1_000_000,
        "rate": 1.0,
        "clip": None,
        "sizes": [32],
    }


def test_a_factory_s_keyword_parameters_are_its_options():
    def make(exp_name: str, log_dir: str, every: Annotated[int, Range(ge=1)] = 10, name: str | None = None) -> None: ...

    assert rlcore.validate_options("loggers.mine", make, {"every": 2e3}, skip=("exp_name", "log_dir")) == {"every": 2000}
    with pytest.raises(rlcore.ConfigError, match=r"^loggers.mine.every: expected an integer >= 1, got 'x'$"):
        rlcore.validate_options("loggers.mine", make, {"every": "x"}, skip=("exp_name", "log_dir"))
    with pytest.raises(rlcore.ConfigError, match=r"^loggers.mine.exp_name: required \(no default\)$"):
        rlcore.validate_options("loggers.mine", make, {})


@dataclass
class SketchOptions:
    """Options of a sketch hook."""

    every: Annotated[int, Range(ge=1)] = 10
    policy: Any = None  # only from Python

    def __post_init__(self) -> None:
        rlcore.validate_fields(self, "hooks.sketch")


def test_a_hook_factory_checks_the_options_a_config_can_give_and_hands_on_the_python_only_ones():
    loads: list[int] = []

    def load() -> type:
        loads.append(1)
        return SketchOptions

    factory = rlcore.hook_factory("sketch", SketchOptions, load, python_only=("policy",))
    assert list(inspect.signature(factory).parameters) == ["every"] and factory.__doc__ == SketchOptions.__doc__ and not loads
    assert rlcore.validate_options("hooks.sketch", factory, {"every": 5}, defaults=True) == {"every": 5}  # what config.yaml records
    hook = factory(every=2e3, policy=print)
    assert (hook.every, hook.policy, len(loads)) == (2000, print, 1)
    with pytest.raises(rlcore.ConfigError, match=r"^unknown key hooks.sketch.bogus \(valid choices: every\)$"):
        factory(bogus=1)
    with pytest.raises(rlcore.ConfigError, match=r"^hooks.sketch.every: expected an integer >= 1, got 0$"):
        SketchOptions(every=0)  # the dataclass checks itself: a hook class built directly too


def test_a_callable_option_is_given_by_its_import_path_and_stays_a_string_in_the_config():
    def make(func: Callable[[float], float] | None = None, low: np.floating | np.ndarray = -1.0) -> None: ...

    checked = rlcore.validate_options("opts", make, {"func": "math:sqrt", "low": [-1, 2.5]})
    func = checked["func"]
    assert func == "math:sqrt" and func(16.0) == 4.0  # a string, and the function when called
    assert pickle.loads(pickle.dumps(func))(9.0) == 3.0
    assert rlcore.dump_config({"env": {"wrappers": {"w": {"func": func}}}}) == "env:\n  wrappers:\n    w:\n      func: math:sqrt\n"
    assert rlcore.validate_options("opts", make, {"func": math.sqrt})["func"] is math.sqrt  # (from Python: the callable itself)
    for value in [1, "math", "math:pi", "math:nope", "no_such_module:f"]:
        with pytest.raises(rlcore.ConfigError, match=rf"^opts.func: expected a callable \(its import path, module:name\) or null, got {value!r}$"):
            rlcore.validate_options("opts", make, {"func": value})
    assert rlcore.validate_options("opts", make, {"low": 2})["low"] == 2  # a number for a NumPy scalar or array
    for value in [True, "x", [1, "x"]]:
        with pytest.raises(rlcore.ConfigError, match=r"^opts.low: expected "):
            rlcore.validate_options("opts", make, {"low": value})


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(argv))
    return int(exited.value.code), capsys.readouterr().err


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("trainer.seed=abc", "trainer.seed: expected an integer >= 0 and <= 4294967295 or null, got 'abc'"),
        ("trainer.optim_steps_per_batch=[1]", "trainer.optim_steps_per_batch: expected an integer >= 1 and <= 1000000 or null, got [1]"),
        ("trainer.frame_skip=1e9", "trainer.frame_skip: expected an integer >= 1 and <= 1000, got 1000000000.0"),
        ("trainer.total_frames=1e13", "trainer.total_frames: expected an integer >= 1 and <= 1000000000000, got 10000000000000.0"),
        ("algo.value_clip_range=wide", "algo.value_clip_range: expected a number > 0 or null, got 'wide'"),
        ("optim.lr=-1", "optim.lr: expected a number > 0, got -1"),
        ("env.vectorization=threads", "env.vectorization: unknown vectorization 'threads' (valid choices: ale, async, envpool, sync)"),
    ],
)
def test_bad_types_are_one_line_and_exit_2_before_anything_is_built(capsys, tmp_path, override, message):
    pytest.importorskip("rl_plugin_pg")
    code, err = run_cli(capsys, "train", "--algo", "ppo", "--set", override, "--out", str(tmp_path / "run"))
    assert code == 2
    assert err == f"rlctl: error: {message}\n"
    assert not (tmp_path / "run").exists()


def test_numbers_as_people_write_them_from_set_and_from_a_file(tmp_path):
    pytest.importorskip("rl_plugin_pg")
    from_set = rlcore.load_config(algo={"name": "ppo"}, overrides=["optim.lr=3e-4", "optim.eps=1e-5", "trainer.total_frames=1e6"])
    assert from_set["optim"]["lr"] == 3e-4 and from_set["optim"]["eps"] == 1e-5
    assert from_set["trainer"]["total_frames"] == 1_000_000 and isinstance(from_set["trainer"]["total_frames"], int)
    file = tmp_path / "mine.yaml"
    file.write_text("optim: {lr: 3e-4, eps: 1E-5}\ntrainer: {total_frames: 1_000_000, save_trainer_interval: 5e4}\n")
    from_file = rlcore.load_config(file, algo={"name": "ppo"})
    assert from_file["optim"]["lr"] == 3e-4 and from_file["optim"]["eps"] == 1e-5
    assert from_file["trainer"]["total_frames"] == 1_000_000 and from_file["trainer"]["save_trainer_interval"] == 50_000
    assert rlcore.load_config(algo={"name": "ppo"}, overrides=["trainer.total_frames=2.5e3"])["trainer"]["total_frames"] == 2500


# --------------------------------------------------------------------------- the config workflow


def test_load_override_save_and_the_plugins_that_took_part(tmp_path, recwarn):
    pytest.importorskip("rl_plugin_pg")
    from importlib.metadata import version

    config = rlcore.default_config("ppo", env="Pendulum-v1")
    assert config["collector"]["frames_per_batch"] == 4096  # ppo's preset for Pendulum
    assert config["plugins"]["rl-plugin-pg"] == version("rl-plugin-pg") and config["plugins"]["rl-core"] == rlcore.__version__
    path = rlcore.save_config(config, tmp_path / "ppo.yaml")
    again = rlcore.load_config(path, overrides=["optim.lr=1e-3"])
    assert again["optim"]["lr"] == 1e-3 and again["collector"] == config["collector"]
    assert not [str(w.message) for w in recwarn if "was written with" in str(w.message)]

    recorded = yaml.safe_load(path.read_text())
    recorded["plugins"] = {"rl-plugin-pg": "0.0.0-old", "rl-plugin-gone": "1.0"}
    path.write_text(yaml.safe_dump(recorded))
    with pytest.warns(UserWarning) as caught:
        rlcore.load_config(path)
    messages = sorted(str(w.message) for w in caught if "was written with" in str(w.message))
    assert messages == [
        "the config was written with rl-plugin-gone 1.0, which is not installed",
        f"the config was written with rl-plugin-pg 0.0.0-old; {version('rl-plugin-pg')} is installed",
    ]


# --------------------------------------------------------------------------- install hints


def test_the_install_hint_data_matches_the_first_party_plugins():
    from rlcore._kernel.manager import first_party_data
    from rlcore.hookspecs import REGISTRIES

    data = first_party_data()
    dists = {}
    for project in sorted((ROOT / "plugins").glob("rl-plugin-*/pyproject.toml")):
        meta = tomllib.loads(project.read_text())["project"]
        assert meta["name"] == project.parent.name
        dists[meta["name"]] = meta["entry-points"]["rlcore.plugins"]
    pm = rlcore.get_plugin_manager()
    builtins = {i.name for i in pm.infos.values() if i.builtin}
    for kind, table in data["provides"].items():
        assert kind in REGISTRIES or kind == "commands"
        for name, provider in table.items():
            assert provider in dists or provider in builtins, f"{kind} {name!r}: {provider} is no first-party plugin"
    assert set(data["launchers"].values()) <= set(dists)
    provided = {}  # what the installed first-party plugins actually register
    for info in rlcore.describe_plugins(pm):
        if info.distribution in dists or info.builtin:
            for kind, names in info.provides.items():
                for name in names:
                    provided[(kind, name)] = info.name if info.builtin else info.distribution
    table_rows = {(kind, name): provider for kind, table in data["provides"].items() for name, provider in table.items()}
    assert provided == table_rows


def test_the_first_party_entry_point_names_are_those_of_plugins():
    from rlcore._kernel.manager import first_party_data

    names = set()
    for project in sorted((ROOT / "plugins").glob("rl-plugin-*/pyproject.toml")):
        meta = tomllib.loads(project.read_text())["project"]
        assert list(meta["entry-points"]["rlcore.plugins"]) == [meta["name"].removeprefix("rl-plugin-")]  # rl-plugin-<name>: <name>
        names.add(meta["name"].removeprefix("rl-plugin-"))
    assert names == set(first_party_data()["plugins"])


def test_a_command_of_a_plugin_that_is_not_installed_names_it(capsys):
    pytest.importorskip("rl_plugin_plot")
    code, err = run_cli(capsys, "--no-plugin", "rl-plugin-plot", "plot", "runs/x")
    assert code == 2 and err.splitlines()[-1] == "rlctl: plot comes with rl-plugin-plot: pip install rl-plugin-plot"


def test_a_batch_key_as_options_name_it():
    assert rlcore.as_key("next.reward") == rlcore.as_key(["next", "reward"]) == rlcore.as_key(("next", "reward")) == rlcore.REWARD_KEY
    assert rlcore.as_key("observation") == rlcore.as_key(["observation"]) == "observation"
    assert rlcore.key_name(rlcore.REWARD_KEY) == "next.reward" and rlcore.key_name("action") == "action"


def test_a_batch_lacking_a_key_its_reader_needs_is_refused_in_one_line():
    batch = TensorDict({"observation": torch.zeros(2, 3), "next": {"reward": torch.zeros(2, 1)}}, batch_size=[2])
    rlcore.require_keys(batch, ["observation", ("next", "reward")], "algo", "the loss")
    with pytest.raises(rlcore.ConfigError, match=r"^algo: the batch has no key 'next.done', which the loss reads \(the batch has: next.reward, observation\); "):
        rlcore.require_keys(batch, ["observation", ("next", "done")], "algo", "the loss")
