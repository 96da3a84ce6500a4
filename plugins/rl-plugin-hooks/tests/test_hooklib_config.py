"""The hooks by name in a run's config: ``rlcore.build_trainer`` with rl-plugin-pg's PPO, resumed from its checkpoint."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest
from hooklib_helpers import TinyAlgorithm

import rlcore
from rlcore_testing import assert_state_equal

HOOKS: dict[str, Any] = {
    "log_scalar": {"logname": "r_training", "reward_key": "next.reward"},
    "count_frames_log": {"frame_skip": 1},
    "reward_normalizer": {"decay": 0.99, "scale": 1.0},
    "clear_cuda_cache": {"interval": 1},
    "update_weights": {"update_weights_interval": 1},
    "log_validation_reward": {"record_interval": 1, "record_frames": 50, "exploration_type": "deterministic"},
    "optimizer_hook": {
        "groups": {
            "actor": {"params": ["policy.actor_net"], "loss_components": ["loss_policy", "loss_entropy"], "lr": 3e-4},
            "critic": {"params": ["policy.critic_net"], "loss_components": ["loss_value"], "lr": 1e-3, "clip_norm": 0.5},
        }
    },
}


def _config(algo: str, hooks: dict[str, Any], total_frames: int, **algo_options: Any) -> dict[str, Any]:
    return {
        "algo": {"name": algo, **algo_options},
        "env": {"id": "CartPole-v1", "num_envs": 2},
        "collector": {"frames_per_batch": 64},
        "trainer": {"total_frames": total_frames, "progress_bar": False, "seed": 0, "save_trainer_interval": 64},
        "loggers": {"console": None},
        "hooks": hooks,
    }


def _metrics(run_dir: Path) -> dict[str, list[tuple[int, float]]]:
    values: dict[str, list[tuple[int, float]]] = {}
    with open(run_dir / "metrics.csv", newline="", encoding="utf-8") as file:
        for row in csv.DictReader(file):
            values.setdefault(row["name"], []).append((int(row["frames"]), float(row["value"])))
    return values


@pytest.fixture
def pm() -> rlcore.PluginManager:
    pm = rlcore.get_plugin_manager(only=["rl-plugin-hooks", "rl-plugin-pg"])
    pm.add_plugin(TinyAlgorithm(), "tiny-algorithm")
    return pm


def test_ppo_with_the_hooks_by_name_resumes_with_their_state(tmp_path: Path, pm: rlcore.PluginManager) -> None:
    pytest.importorskip("rl_plugin_pg")
    run_dir = tmp_path / "run"
    trainer = rlcore.build_trainer(_config("ppo", HOOKS, 128, epochs=2), run_dir, plugin_manager=pm)
    trainer.train()
    metrics = _metrics(run_dir)
    assert [frames for frames, _ in metrics["n_frames"]] == [64, 128] and [v for _, v in metrics["n_frames"]] == [64.0, 128.0]
    assert [v for _, v in metrics["r_training"]] == [0.0, 0.0]  # CartPole's 1s, normalised (PPO learns from the normalised batch)
    assert [frames for frames, _ in metrics["r_evaluation"]] == [64, 128]
    assert {"optim/grad_norm_0", "optim/grad_norm_1", "total_r_evaluation"} <= set(metrics)
    modules = trainer.state_dict()["modules"]
    names = {"log_scalar", "count_frames_log", "reward_normalizer", "clear_cuda_cache", "update_weights", "log_validation_reward"}
    assert names | {"optimizer_hook.actor", "optimizer_hook.critic"} <= set(modules)
    actor, critic = modules["optimizer_hook.actor"]["optimizer"], modules["optimizer_hook.critic"]["optimizer"]
    assert actor["param_groups"][0]["lr"] == 3e-4 and critic["param_groups"][0]["lr"] == 1e-3
    assert len(actor["param_groups"][0]["params"]) == len(critic["param_groups"][0]["params"]) == 6  # 3 layers each
    assert int(actor["state"][0]["step"]) == 4  # 2 epochs x 2 batches
    assert trainer.optimizer is not None and trainer.optimizer.state == {}  # replaced by the two optimizers

    resumed = rlcore.build_trainer(_config("ppo", HOOKS, 192, epochs=2), run_dir, plugin_manager=pm, resume=True)
    assert_state_equal(modules, resumed.state_dict()["modules"])
    resumed.train()
    assert [v for _, v in _metrics(run_dir)["n_frames"]] == [64.0, 128.0, 192.0]


def test_select_keys_and_batch_subsampler_by_name(tmp_path: Path, pm: rlcore.PluginManager) -> None:
    hooks = {"select_keys": {"keys": ["observation", "action", "next.reward", "next.done"]}, "batch_subsampler": {"batch_size": 16, "sub_traj_len": 4}}
    trainer = rlcore.build_trainer(_config("tiny", hooks, 128), tmp_path / "run", plugin_manager=pm)
    shapes: list[tuple[int, ...]] = []
    trainer.register_op("process_optim_batch", lambda batch: shapes.append((*batch.shape, len(list(batch.keys(True, True))))))
    trainer.train()
    assert shapes and all(len(shape) == 3 and shape[0] * shape[1] <= 16 and shape[2] == 4 for shape in shapes)
    assert {"select_keys", "batch_subsampler"} <= set(trainer.state_dict()["modules"])


def test_select_keys_naming_a_key_the_batch_lacks_is_one_line(tmp_path: Path, pm: rlcore.PluginManager) -> None:
    trainer = rlcore.build_trainer(_config("tiny", {"select_keys": {"keys": ["observation", "next.rewrd"]}}, 128), tmp_path / "run", plugin_manager=pm)
    with pytest.raises(rlcore.ConfigError, match=r"^hooks.select_keys.keys: the batch has no key 'next.rewrd' \(valid choices: action, .*next.reward"):
        trainer.train()


def test_a_bad_optimizer_group_is_one_line_before_anything_runs(tmp_path: Path, pm: rlcore.PluginManager) -> None:
    hooks = {"optimizer_hook": {"groups": {"actor": {"params": ["policy.actor"]}}}}
    with pytest.raises(rlcore.ConfigError) as error:
        rlcore.build_trainer(_config("tiny", hooks, 64), tmp_path / "run", plugin_manager=pm)
    assert str(error.value) == "hooks.optimizer_hook.groups.actor.params: 'policy.actor' names no parameter of the loss module (valid choices: actor, critic)"
    assert not (tmp_path / "run").exists()


def test_reward_normalizer_changes_what_an_on_policy_algorithm_learns(tmp_path: Path) -> None:
    pytest.importorskip("rl_plugin_pg")
    import torch

    pm = rlcore.get_plugin_manager(only=["rl-plugin-hooks", "rl-plugin-pg", "rl-plugin-envs"])  # (PPO's preset for Pendulum wraps its envs)

    def trained(hooks: dict[str, Any], name: str) -> tuple[rlcore.Trainer, list[Any]]:
        config = {**_config("ppo", hooks, 128, epochs=2), "env": {"id": "Pendulum-v1", "num_envs": 2}}  # rewards that vary
        trainer = rlcore.build_trainer(config, tmp_path / name, plugin_manager=pm)
        seen: list[Any] = []
        trainer.plugin_manager.register(_SeenByLoss(seen), f"seen-{name}")
        trainer.train()
        return trainer, seen

    _, raw = trained({}, "plain")
    _, seen = trained({"reward_normalizer": {"decay": 0.9, "scale": 5.0}}, "normalised")
    first = raw[0]  # the first batch is the same in both runs (same seed, same policy before any update)
    assert torch.allclose(seen[0], (first - first.mean()) / first.std() * 5.0, atol=1e-4)  # PPO's advantages come from these
    assert not torch.allclose(seen[0], first, atol=1e-2)  # the loss learned from other rewards than the plain run's


class _SeenByLoss:
    """Records the rewards of each batch as the loss module's ``rl_batch_process`` receives them."""

    def __init__(self, seen: list[Any]) -> None:
        self.seen = seen

    @rlcore.hookimpl(trylast=True)  # (the loss module's runs last of all: its hook returns the batch flattened)
    def rl_batch_process(self, batch: Any) -> None:
        self.seen.append(batch["next", "reward"].clone())


def test_reward_normalizer_normalises_the_steps_of_n_step_transitions(tmp_path: Path) -> None:
    pytest.importorskip("rl_plugin_dqn")
    import torch

    pm = rlcore.get_plugin_manager(only=["rl-plugin-hooks", "rl-plugin-dqn", "rl-plugin-replay"])
    config = {
        "algo": {"name": "dqn", "n_step": 3, "init_random_frames": 128},
        "env": {"id": "CartPole-v1", "num_envs": 2},
        "collector": {"frames_per_batch": 64},
        "trainer": {"total_frames": 512, "progress_bar": False, "seed": 0, "optim_steps_per_batch": 4},
        "loggers": {"console": None},
        "hooks": {"reward_normalizer": {"decay": 0.9}},
    }
    trainer = rlcore.build_trainer(config, tmp_path / "run", plugin_manager=pm)
    sampled: list[Any] = []
    trainer.register_op("process_optim_batch", lambda batch: sampled.append(batch["next", "reward"].clone()))
    trainer.train()
    rewards = torch.cat(sampled)
    # CartPole pays 1 every step: normalised, each step's reward is 0, and so is a sum of three of them (it was
    # the sum, 2.97, normalised with one step's statistics: thousands)
    assert len(rewards) > 0 and rewards.abs().max() < 1e-2


def test_optimizer_groups_say_which_loss_components_no_group_optimises(tmp_path: Path) -> None:
    pytest.importorskip("rl_plugin_sac")
    pm = rlcore.get_plugin_manager(only=["rl-plugin-hooks", "rl-plugin-sac", "rl-plugin-replay"])
    groups = {"actor": {"params": ["actor"], "loss_components": ["loss_actor"]}, "critic": {"params": ["critic"], "loss_components": ["loss_qvalue"]}}
    config = {
        "algo": {"name": "sac", "init_random_frames": 32},
        "env": {"id": "Pendulum-v1", "num_envs": 1},
        "collector": {"frames_per_batch": 32},
        "trainer": {"total_frames": 64, "progress_bar": False, "seed": 0},
        "loggers": {"console": None},
        "hooks": {"optimizer_hook": {"groups": groups}, "replay_buffer": {"batch_size": 16}},
    }
    trainer = rlcore.build_trainer(config, tmp_path / "run", plugin_manager=pm)
    with pytest.warns(UserWarning, match=r"^hooks.optimizer_hook.groups: no group's loss_components names loss_alpha: ") as caught:
        trainer.train()
    assert sum("loss_components" in str(w.message) for w in caught) == 1  # said once
