"""Data-parallel learners: ``torchrun --nproc_per_node 2 -m rlcore train`` with gloo on CPU, as a user runs it.

One run directory written by rank 0 alone (config, metrics, checkpoints), frames counted across
the ranks, every rank's parameters identical after training (the gradients were averaged), each
rank's own envs, and a resume with the same number of ranks that continues exactly where the run
stopped, with the torch backend (rank 0 gathers the ranks' states) and torchsnapshot's distributed
snapshot (each rank writes its own part). One process cannot resume a run of two. DQN's
exploration counts the frames of both ranks, and every other algorithm trains on two ranks too.
"""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml

import rlcore
from rlcore._kernel.checkpoint import content_checksum

pytestmark = [pytest.mark.timeout(300), pytest.mark.slow]  # torchrun: several processes, the slow tier

CONFIG = {
    "algo": {"name": "ppo", "hidden_sizes": [16], "epochs": 2, "minibatches": 2},
    "env": {"id": "CartPole-v1", "num_envs": 2},
    "collector": {"frames_per_batch": 64},
    "trainer": {"total_frames": 192, "seed": 5, "progress_bar": False, "save_trainer_interval": 64},
    "loggers": {"console": None},
    "checkpoint": {"keep_last": 10},
}
#: the frames of one batch of the run: 2 ranks x 32 frames (1 env each), as one process's 2 envs x 32 frames
BATCH = 64


def torchrun(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``torchrun --standalone --nproc_per_node 2 -m rlcore ARGS`` (``python -m torch.distributed.run`` is ``torchrun``)."""
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "-m", "rlcore", *args]
    env = {**os.environ, "RLCORE_TRACEBACK": "1", "RLCORE_DIST_TIMEOUT": "120", "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, capture_output=True, text=True, cwd=cwd, env=env, timeout=240)
    assert done.returncode == 0, done.stderr
    return done


def said(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.startswith("rlctl:")]


def checkpoint(run: Path, frames: int) -> dict[str, Any]:
    state: dict[str, Any] = torch.load(run / "checkpoints" / f"ckpt-{frames:012d}.pt", weights_only=True)
    return state


@pytest.fixture(scope="module")
def straight(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of 3 batches on 2 ranks, checkpointed after each one (torch backend)."""
    root = tmp_path_factory.mktemp("ddp")
    (root / "ppo.yaml").write_text(yaml.safe_dump(CONFIG))
    done = torchrun("train", "ppo.yaml", "--out", "runs/a", cwd=root)
    assert said(done) == ["rlctl: 192 frames, run directory runs/a"]  # one rank speaks
    return root


def test_one_run_directory_from_rank_0_frames_across_ranks_identical_parameters(straight: Path) -> None:
    run = straight / "runs" / "a"
    assert sorted(p.name for p in (straight / "runs").iterdir()) == ["a"]
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == [f"ckpt-{f:012d}.pt" for f in (64, 128, 192)]
    with open(run / "metrics.csv", newline="") as handle:
        rows = [(int(row["frames"]), row["name"]) for row in csv.DictReader(handle)]
    assert len(rows) == len(set(rows))  # each value logged once: rank 0 alone writes metrics
    assert [frames for frames, name in rows if name == "perf/fps"] == [BATCH, 2 * BATCH, 3 * BATCH]
    state = checkpoint(run, 192)
    assert state["counters"]["collected_frames"] == 192 and state["counters"]["batches"] == 3
    learners = state["distributed"]
    assert learners["world_size"] == 2
    assert learners["parameters_crc"] == [content_checksum(state["loss_module"])] * 2  # gradients averaged: the same parameters
    first, second = (rank["collector"]["observation"] for rank in learners["ranks"])
    assert first.shape == second.shape == (1, 4) and not torch.equal(first, second)  # each rank its own share of the envs
    assert yaml.safe_load((run / "config.yaml").read_text())["trainer"]["seed"] == 5


def test_a_resume_with_the_same_world_size_continues_exactly(straight: Path) -> None:
    run = straight / "runs" / "b"
    shutil.copytree(straight / "runs" / "a", run)
    for path in (run / "checkpoints").iterdir():
        if path.name != "ckpt-000000000064.pt":
            path.unlink()
    done = torchrun("train", "--resume", "runs/b", cwd=straight)
    assert said(done) == ["rlctl: resumed from runs/b/checkpoints/ckpt-000000000064.pt at 64 frames", "rlctl: 192 frames, run directory runs/b"]
    resumed, whole = checkpoint(run, 192), checkpoint(straight / "runs" / "a", 192)
    for key, value in whole["loss_module"].items():
        assert torch.equal(resumed["loss_module"][key], value), key  # every rank got its own envs, observations and RNG back

    with pytest.raises(rlcore.ConfigError) as refused:  # one process (no torchrun) cannot resume a run of two
        rlcore.build_trainer(rlcore.load_config(run / "config.yaml"), run_dir=run, resume=True)
    assert str(refused.value) == (
        "--resume: the checkpoint does not fit this config "
        "(the checkpoint was written by 2 data-parallel learner(s); resume it with as many processes)"
    )
    assert sorted(p.name for p in (run / "checkpoints").iterdir())[-1] == "ckpt-000000000192.pt"  # the run directory as it was


def test_max_episodes_counts_every_ranks_episodes_in_the_checkpoint_too_and_one_profile(straight: Path) -> None:
    """The last batch's episodes of every rank are in the checkpoint, so a resume of a run stopped by
    ``max_episodes`` stops at once, as in one process; ``--profile`` prints one table."""
    args = ("--set", "trainer.total_frames=6400", "--set", "trainer.max_episodes=7")  # (seed 5: the last batch's episodes of rank 1 reach it)
    done = torchrun("train", "ppo.yaml", "--out", "runs/e", *args, "--profile", cwd=straight)
    assert done.stderr.count("profile of the loop:") == 1  # rank 0's table only, as its messages
    stopped = said(done)[-1]
    frames = int(stopped.split()[1])
    assert stopped == f"rlctl: {frames} frames, run directory runs/e (stopped: trainer.max_episodes=7)"
    assert checkpoint(straight / "runs" / "e", frames)["counters"]["episodes"] >= 7
    resumed = said(torchrun("train", "--resume", "runs/e", cwd=straight))
    assert resumed[-1] == stopped, resumed  # nothing more to train


def test_the_video_plugins_hooks_write_once_and_the_rollouts_hold_every_ranks_envs(straight: Path) -> None:
    for module in ("rl_plugin_video", "rl_plugin_hooks", "imageio"):
        pytest.importorskip(module)
    hooks = {
        "evaluation": {"record_interval": 128, "episodes": 1, "video": True, "max_frames": 20},
        "log_validation_reward": {"record_interval": 2, "record_frames": 20, "video": True, "suffix": "validation"},
        "video_recorder": {"interval": 128, "max_frames": 20, "source": "render"},
        "tensordict_recorder": {"interval": 128},
    }
    args = [f"--set=hooks.{name}={yaml.safe_dump(options, default_flow_style=True).strip()}" for name, options in hooks.items()]
    torchrun("train", "ppo.yaml", "--out", "runs/v", "--set", "env.kwargs.render_mode=rgb_array", *args, cwd=straight)
    run = straight / "runs" / "v"
    videos = sorted(path.name for path in (run / "videos").iterdir())
    assert videos == [  # one of each, as in one process (a second rank's would be eval_000000128_1.mp4)
        "eval_000000128.mp4", "eval_000000192.mp4", "eval_validation_000000064.mp4", "eval_validation_000000192.mp4",
        "train_000000000.mp4", "train_000000128.mp4",
    ], videos  # fmt: skip
    from rl_plugin_video import load_rollouts

    rollouts = load_rollouts(run / "rollouts")
    assert [tuple(rollout.batch_size) for rollout in rollouts] == [(2, 32), (2, 32)]  # both ranks' envs, as one process's 2 envs
    first = rollouts[0]["observation"]
    assert not torch.equal(first[0], first[1])  # two envs of their own


def test_torchsnapshot_writes_one_snapshot_with_a_part_per_rank(straight: Path) -> None:
    pytest.importorskip("rl_plugin_torchsnapshot")
    torchrun("train", "ppo.yaml", "--out", "runs/s", "--set", "trainer.max_batches=2", "--set", "checkpoint.backend=torchsnapshot", cwd=straight)
    run = straight / "runs" / "s"
    manifest = yaml.safe_load((run / "checkpoints" / "ckpt-000000000128" / ".snapshot_metadata").read_text())
    assert manifest["world_size"] == 2 and {"0/rlcore", "1/rlcore"} <= set(manifest["manifest"])
    done = torchrun("train", "--resume", "runs/s", "--set", "trainer.max_batches=null", cwd=straight)
    assert said(done)[0] == "rlctl: resumed from runs/s/checkpoints/ckpt-000000000128 at 128 frames"
    backend = rlcore.get_plugin_manager().factory("checkpoint_backends", "torchsnapshot")(directory=run / "checkpoints", keep_last=10)
    _, state = backend.load()  # one process reads rank 0's part
    assert state["distributed"]["world_size"] == 2 and state["distributed"]["rank"] == 0
    assert state["distributed"]["parameters_crc"] == [content_checksum(state["loss_module"])] * 2
    whole = checkpoint(straight / "runs" / "a", 192)  # the same run without a stop, written by the torch backend
    for key, value in whole["loss_module"].items():
        assert torch.equal(state["loss_module"][key], value), key


def test_dqn_explores_on_the_frames_of_all_ranks(tmp_path: Path) -> None:
    pytest.importorskip("rl_plugin_dqn")
    config = {
        **CONFIG,
        "algo": {"name": "dqn", "hidden_sizes": [16], "eps_init": 1.0, "eps_end": 0.0, "eps_annealing_frames": 128, "init_random_frames": 64},
        "trainer": {**CONFIG["trainer"], "total_frames": 256, "optim_steps_per_batch": 2},
        "hooks": {"replay_buffer": {"capacity": 100, "batch_size": 16}},
    }
    (tmp_path / "dqn.yaml").write_text(yaml.safe_dump(config))
    torchrun("train", "dqn.yaml", "--out", "runs/dqn", cwd=tmp_path)
    run = tmp_path / "runs" / "dqn"
    with open(run / "metrics.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    epsilon = [(int(row["frames"]), float(row["value"])) for row in rows if row["name"] == "train/epsilon"]
    # epsilon anneals over 128 frames of both ranks (each rank steps 32 of every 64), not 128 of its own
    assert epsilon == [(f, max(1 - f / 128, 0.0)) for f in range(BATCH, 257, BATCH)]
    state = checkpoint(run, 256)
    assert state["loss_module"]["policy._extra_state"] == {"frames": 256, "frames_per_step": 2}
    # each rank keeps half the capacity, full after 256 frames; the logged size is the whole buffer's, as in one process
    assert [rank["modules"]["replay_buffer"]["replay_buffer"]["storage"]["size"] for rank in state["distributed"]["ranks"]] == [50, 50]
    assert [float(row["value"]) for row in rows if row["name"] == "train/buffer_size"][-1] == 100

    done = subprocess.run(  # a sample that does not split over the ranks
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "-m", "rlcore", "train", "dqn.yaml", "--out", "runs/odd",
         "--set", "hooks.replay_buffer.batch_size=15"],
        capture_output=True, text=True, cwd=tmp_path, env={**os.environ, "OMP_NUM_THREADS": "1"}, timeout=240,
    )  # fmt: skip
    assert done.returncode != 0 and said(done) == [
        "rlctl: error: hooks.replay_buffer.batch_size: 15 items a sample do not split over 2 data-parallel learners: make it a multiple of 2"
    ], done.stderr


#: a continuous on-policy loss with a state of its own (ppo-kl's KL coefficient) and the off-policy actor-critics (a2c, pg
#: and spg differ from ppo only in their objective, each reduced as any gradient; ddpg is td3's loss with other options)
OTHERS = [("ppo-kl", "Pendulum-v1"), ("sac", "Pendulum-v1"), ("td3", "Pendulum-v1")]


@pytest.mark.parametrize(("algo", "env_id"), OTHERS)
def test_every_other_algorithm_trains_on_two_ranks(algo: str, env_id: str, tmp_path: Path) -> None:
    """PPO and DQN have their own tests above; one algorithm of each other kind runs a short training on two ranks too."""
    off_policy = algo in ("sac", "td3")
    pytest.importorskip({"sac": "rl_plugin_sac", "td3": "rl_plugin_td3"}.get(algo, "rl_plugin_pg"))
    config: dict[str, Any] = {
        **CONFIG,
        "algo": {"name": algo, "hidden_sizes": [16], **({"init_random_frames": 32} if off_policy else {})},
        "env": {"id": env_id, "num_envs": 2},
        "trainer": {**CONFIG["trainer"], "total_frames": 128, "optim_steps_per_batch": 2 if off_policy else None},
    }
    if off_policy:
        config["hooks"] = {"replay_buffer": {"capacity": 1000, "batch_size": 16}}
    (tmp_path / "run.yaml").write_text(yaml.safe_dump(config))
    torchrun("train", "run.yaml", "--out", "runs/r", cwd=tmp_path)
    state = checkpoint(tmp_path / "runs" / "r", 128)
    assert state["counters"]["collected_frames"] == 128 and state["counters"]["optim_steps"] > 0
    assert state["distributed"]["parameters_crc"] == [content_checksum(state["loss_module"])] * 2  # the ranks agree
