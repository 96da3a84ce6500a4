"""Every algorithm with the first-party plugins a user combines it with: the vectorizations (``async``,
rl-plugin-envs' ``envpool``), Ray collectors (rl-plugin-ray), the torchsnapshot checkpoint backend
(with a resume), and the hooks and wrappers added to a run (normalisation wrappers, evaluation,
videos, recorders, TorchRL's validation and frame-count hooks), each in a short real run.

A plugin passes its own tests with the algorithms it was written with; this is where it meets the
others (DQN and SAC on Ray collectors crashed until this module existed).
"""

from __future__ import annotations

import csv
import importlib.util
import logging
from pathlib import Path
from typing import Any

import pytest

import rlcore

#: each algorithm's env (DQN needs discrete actions, SAC continuous ones) and options that keep a run short
ALGORITHMS: dict[str, tuple[str, dict[str, Any]]] = {
    "ppo": ("CartPole-v1", {"hidden_sizes": [16], "epochs": 1}),
    "ppo-kl": ("Pendulum-v1", {"hidden_sizes": [16], "epochs": 1}),
    "a2c": ("CartPole-v1", {"hidden_sizes": [16]}),
    "pg": ("Pendulum-v1", {"hidden_sizes": [16]}),
    "spg": ("CartPole-v1", {"hidden_sizes": [16]}),
    "dqn": ("CartPole-v1", {"hidden_sizes": [16], "init_random_frames": 32, "eps_annealing_frames": 64}),
    "sac": ("Pendulum-v1", {"hidden_sizes": [16], "init_random_frames": 32}),
    "td3": ("Pendulum-v1", {"hidden_sizes": [16], "init_random_frames": 32}),
    "ddpg": ("Pendulum-v1", {"hidden_sizes": [16], "init_random_frames": 32}),
}
PLUGIN = {"ppo": "rl_plugin_pg", "ppo-kl": "rl_plugin_pg", "a2c": "rl_plugin_pg", "pg": "rl_plugin_pg", "spg": "rl_plugin_pg", "dqn": "rl_plugin_dqn", "sac": "rl_plugin_sac",
          "td3": "rl_plugin_td3", "ddpg": "rl_plugin_td3"}  # fmt: skip
FRAMES, BATCH = 128, 32


def config(algo: str, **sections: Any) -> dict[str, Any]:
    """A short run of ``algo`` on 2 envs, checkpointed every batch, with ``sections`` merged in."""
    pytest.importorskip(PLUGIN[algo])
    env_id, options = ALGORITHMS[algo]
    base: dict[str, Any] = {
        "algo": {"name": algo, **options},
        "env": {"id": env_id, "num_envs": 2},
        "collector": {"frames_per_batch": BATCH},
        "trainer": {"total_frames": FRAMES, "seed": 3, "progress_bar": False, "optim_steps_per_batch": 2, "save_trainer_interval": BATCH},
        "loggers": {"console": None},
    }
    if algo in ("dqn", "sac", "td3", "ddpg"):
        base["hooks"] = {"replay_buffer": {"capacity": 1000, "batch_size": 16}}
    for section, values in sections.items():
        base[section] = {**base.get(section, {}), **values}
    return rlcore.load_config(**base)


def trained(run: Path, cfg: dict[str, Any], resume: bool = False) -> rlcore.Trainer:
    trainer = rlcore.build_trainer(cfg, run_dir=run, resume=resume)
    trainer.train()
    return trainer


def logged(run: Path) -> set[str]:
    with open(run / "metrics.csv", newline="") as handle:
        return {row["name"] for row in csv.DictReader(handle)}


def check_run(run: Path, trainer: rlcore.Trainer) -> None:
    assert trainer.collected_frames == FRAMES
    assert any(name.startswith("loss") for name in logged(run)), sorted(logged(run))
    assert trainer.checkpoint.checkpoints()


@pytest.mark.parametrize("algo", ALGORITHMS)
@pytest.mark.parametrize("vectorization", ["async", "envpool"])
def test_vectorizations(algo: str, vectorization: str, tmp_path: Path) -> None:
    if vectorization == "envpool":
        pytest.importorskip("envpool")
        pytest.importorskip("rl_plugin_envs")
    run = tmp_path / "run"
    check_run(run, trained(run, config(algo, env={"vectorization": vectorization})))


@pytest.mark.parametrize("algo", ALGORITHMS)
def test_torchsnapshot_checkpoints_and_resume(algo: str, tmp_path: Path) -> None:
    pytest.importorskip("rl_plugin_torchsnapshot")
    run = tmp_path / "run"
    cfg = config(algo, checkpoint={"backend": "torchsnapshot"}, trainer={"total_frames": FRAMES // 2})
    trained(run, cfg)
    cfg["trainer"]["total_frames"] = FRAMES
    resumed = trained(run, cfg, resume=True)
    assert resumed.resumed_from is not None
    check_run(run, resumed)


@pytest.mark.slow
@pytest.mark.parametrize("algo", ALGORITHMS)
def test_with_the_first_party_hooks_and_wrappers_users_add(algo: str, tmp_path: Path) -> None:
    for module in ("rl_plugin_envs", "rl_plugin_video", "rl_plugin_hooks", "imageio"):
        pytest.importorskip(module)
    run = tmp_path / "run"
    cfg = config(
        algo,
        env={"wrappers": {"normalize_observation": {}, "normalize_reward": {}}, "kwargs": {"render_mode": "rgb_array"}},
        hooks={
            "evaluation": {"record_interval": 2, "episodes": 1, "max_frames": 50, "video": True},
            "video_recorder": {"source": "render", "interval": 2, "max_frames": 20},
            "tensordict_recorder": {"interval": 2},
            "log_validation_reward": {"record_interval": 2, "record_frames": 50, "video": True, "suffix": "validation"},
            "count_frames_log": {"frame_skip": 1},
        },
    )
    check_run(run, trained(run, cfg))
    names = logged(run)
    assert {"eval/episode_return", "eval_validation/episode_return", "r_evaluation", "n_frames"} <= names, sorted(names)
    videos = {path.name.rsplit("_", 1)[0] for path in (run / "videos").glob("*.mp4")}
    assert videos == {"eval", "eval_validation", "train"}, videos


@pytest.mark.slow
def test_two_evaluations_under_one_name_are_refused(rlctl_bare: Any, tmp_path: Path) -> None:
    """``evaluation`` and TorchRL's ``log_validation_reward`` would log the same metrics and overwrite each other's videos."""
    for module in ("rl_plugin_video", "rl_plugin_hooks", "rl_plugin_pg"):
        pytest.importorskip(module)
    hooks = ["--set", "hooks.evaluation={record_interval: 32}", "--set", "hooks.log_validation_reward={record_interval: 1, record_frames: 20}"]
    argv = ["train", "--algo", "ppo", "--frames", "64", "--set", "collector.frames_per_batch=32", *hooks]
    refused = rlctl_bare(*argv, "--out", str(tmp_path / "a"), env={"RLCORE_TRACEBACK": "0"})
    assert refused.returncode != 0 and "Traceback" not in refused.stderr, refused.stderr
    assert refused.stderr.strip() == (
        "rlctl: error: hooks.evaluation: hooks.log_validation_reward evaluates under the same name, eval (metrics eval/episode_return, "
        "videos eval_<frames>.mp4); set a different suffix on one of them"
    ), refused.stderr
    apart = rlctl_bare(*argv, "--set", "hooks.evaluation.suffix=greedy", "--out", str(tmp_path / "b"), env={"RLCORE_TRACEBACK": "0"})
    assert apart.returncode == 0, apart.stderr
    assert {"eval/episode_return", "eval_greedy/episode_return"} <= logged(tmp_path / "b")


@pytest.fixture(scope="module")
def ray_cluster() -> Any:
    ray = pytest.importorskip("ray")
    if importlib.util.find_spec("rl_plugin_ray") is None:
        pytest.skip("rl-plugin-ray is not installed")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    yield
    ray.shutdown()


#: one algorithm per policy and exploration (a2c, pg and spg act through ppo's and ppo-kl's policies, only their losses differ)
RAY_ALGORITHMS = ["ppo", "ppo-kl", "dqn", "sac", "td3", "ddpg"]


@pytest.mark.slow
@pytest.mark.parametrize("algo", RAY_ALGORITHMS)
def test_ray_collectors(algo: str, ray_cluster: Any, tmp_path: Path) -> None:
    run = tmp_path / "run"
    collector = {"name": "ray", "num_workers": 2, "frames_per_batch": BATCH, "num_cpus_per_worker": 0.5, "timeout": 240}
    check_run(run, trained(run, config(algo, collector=collector)))
