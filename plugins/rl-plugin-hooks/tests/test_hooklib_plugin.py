"""The plugin as rl-core sees it: found by its entry point, listed lightly, its factories and their one-line errors."""

from __future__ import annotations

import inspect
from typing import Any

import pytest
from hooklib_helpers import TinyAlgorithm

import rl_plugin_hooks
import rlcore
from rlcore_testing import PluginConformance

NAMES = [
    "batch_subsampler",
    "clear_cuda_cache",
    "count_frames_log",
    "log_scalar",
    "log_validation_reward",
    "optimizer_hook",
    "reward_normalizer",
    "select_keys",
    "update_weights",
]


class TestHooksPlugin(PluginConformance):
    """Found through its entry point, listed by rlctl without importing torch or tensordict, blockable."""

    plugin = "hooks"
    distribution = "rl-plugin-hooks"
    provides = {"hooks": NAMES}
    hooks = ("rl_register_hooks",)
    heavy_modules = ("torch", "tensordict")


def _factory(name: str) -> Any:
    return rlcore.get_plugin_manager(only=["rl-plugin-hooks"]).factory("hooks", name)


def test_factories_take_torchrls_arguments_less_the_python_only_ones() -> None:
    signatures = {name: inspect.signature(_factory(name)).parameters for name in NAMES}
    defaults = {name: {k: p.default for k, p in params.items()} for name, params in signatures.items()}
    required = inspect.Parameter.empty
    assert defaults["batch_subsampler"] == {"batch_size": required, "sub_traj_len": 0, "min_sub_traj_len": 0}
    assert defaults["clear_cuda_cache"] == {"interval": required}
    assert defaults["count_frames_log"] == {"frame_skip": required, "log_pbar": False}
    assert defaults["log_scalar"] == {"logname": "r_training", "log_pbar": False, "reward_key": None}
    assert defaults["reward_normalizer"] == {"decay": 0.999, "scale": 1.0, "eps": None, "log_pbar": False, "reward_key": None}
    assert defaults["select_keys"] == {"keys": required}
    assert defaults["update_weights"] == {"update_weights_interval": 1}  # the collector is the trainer's
    assert defaults["optimizer_hook"] == {"groups": required}  # optimizers are built from the groups
    torchrl = {"record_interval": required, "record_frames": required, "frame_skip": 1, "environment": None, "exploration_type": "random"}
    torchrl |= {"log_keys": None, "out_keys": None, "suffix": None, "log_pbar": False}
    assert defaults["log_validation_reward"] == {**torchrl, "video": False, "fps": 30, "seed": None, "directory": None}


def test_the_python_classes_keep_torchrls_positional_order() -> None:
    assert rl_plugin_hooks.BatchSubSampler(64, 8, 2).sub_traj_len == 8
    assert rl_plugin_hooks.CountFramesLog(4, True).log_pbar is True
    assert rl_plugin_hooks.LogScalar("reward", True, "next.reward").reward_key == ("next", "reward")
    assert rl_plugin_hooks.RewardNormalizer(0.9, 2.0, 1e-6).eps == 1e-6
    assert rl_plugin_hooks.UpdateWeights(None, 3).update_weights_interval == 3
    with pytest.raises(TypeError):  # keyword-only, as TorchRL's
        rl_plugin_hooks.LogValidationReward(1, 10)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("name", "options", "message"),
    [
        ("batch_subsampler", {"batch_size": 0}, "hooks.batch_subsampler.batch_size: expected an integer >= 1, got 0"),
        ("clear_cuda_cache", {"interval": "often"}, "hooks.clear_cuda_cache.interval: expected an integer >= 1, got 'often'"),
        ("count_frames_log", {}, "hooks.count_frames_log.frame_skip: required (no default)"),
        ("log_scalar", {"log_pbar": "yes"}, "hooks.log_scalar.log_pbar: expected true or false, got 'yes'"),
        ("reward_normalizer", {"decay": 1.5}, "hooks.reward_normalizer.decay: expected a number >= 0 and <= 1, got 1.5"),
        ("select_keys", {"keys": "observation"}, "hooks.select_keys.keys: expected a list, each item a string or a list of strings, got 'observation'"),
        ("update_weights", {"update_weights_interval": 0}, "hooks.update_weights.update_weights_interval: expected an integer >= 1, got 0"),
        (
            "log_validation_reward",
            {"record_interval": 1, "record_frames": 100, "exploration_type": "greedy"},
            "hooks.log_validation_reward.exploration_type: unknown value 'greedy' (valid choices: deterministic, random, mode, mean, median)",
        ),
        ("optimizer_hook", {"groups": "actor"}, "hooks.optimizer_hook.groups: expected a mapping, got 'actor'"),
    ],
)
def test_bad_options_are_the_same_one_line_errors_from_python_and_config(name: str, options: dict[str, Any], message: str) -> None:
    with pytest.raises(rlcore.ConfigError) as from_python:
        _factory(name)(**options)
    assert str(from_python.value) == message
    pm = rlcore.get_plugin_manager(only=["rl-plugin-hooks"])
    pm.add_plugin(TinyAlgorithm(), "tiny-algorithm")
    with pytest.raises(rlcore.ConfigError) as from_config:
        rlcore.load_config(plugin_manager=pm, algo={"name": "tiny"}, hooks={name: options})
    assert str(from_config.value) == message


def test_objects_are_refused_by_the_config_and_named_in_python() -> None:
    pm = rlcore.get_plugin_manager(only=["rl-plugin-hooks"])
    pm.add_plugin(TinyAlgorithm(), "tiny-algorithm")
    with pytest.raises(rlcore.ConfigError, match=r"^unknown key hooks\.update_weights\.collector \(valid choices: update_weights_interval\)$"):
        rlcore.load_config(plugin_manager=pm, algo={"name": "tiny"}, hooks={"update_weights": {"collector": "remote"}})
    with pytest.raises(rlcore.ConfigError, match=r"^hooks\.optimizer_hook\.optimizer: expected a torch\.optim\.Optimizer, got str$"):
        rl_plugin_hooks.OptimizerHook("adam")
    with pytest.raises(rlcore.ConfigError, match=r"^hooks\.optimizer_hook\.groups\.actor\.lr: expected a number > 0 or null, got -1$"):
        _factory("optimizer_hook")(groups={"actor": {"lr": -1}})


def test_options_are_converted_as_people_write_them() -> None:
    hook = _factory("log_validation_reward")(record_interval=1e1, record_frames=1e3)
    assert (hook.record_interval, hook.record_frames) == (10, 1000) and isinstance(hook.record_frames, int)
    assert _factory("select_keys")(keys=["observation", "next.reward", ["next", "done"]]).keys == ["observation", ("next", "reward"), ("next", "done")]


def test_tensordicts_interaction_types_under_torchrls_names() -> None:
    from tensordict.nn import InteractionType, set_interaction_type

    assert rl_plugin_hooks.ExplorationType is InteractionType
    assert rl_plugin_hooks.set_exploration_type is set_interaction_type
