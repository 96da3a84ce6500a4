"""Speed benchmark: rl-core PPO (rl-plugin-pg) against Stable-Baselines3 PPO on CartPole-v1.

Both train with the same hyperparameters (4 envs x 128 steps, 4 epochs of 4 minibatches,
Adam lr 2.5e-4 constant, gamma 0.99, GAE lambda 0.95, clip 0.2, no entropy bonus, value
coefficient 0.5, gradient norm 0.5, [64, 64] tanh actor and critic, one torch thread), one
after the other in fresh processes of this run, on this machine, in pairs (one run of each,
back to back, the order alternating). It prints each run's whole-loop frames/s (frames / wall
seconds of the training call) and the wall seconds at which the mean return of the last 20
training episodes first reached 475, then the median frames/s of each and their ratio, and
in how many runs each reached 475 and the median wall seconds it took.

Stable-Baselines3 is not a dependency of the project: when it cannot be imported, it is
installed with ``pip install --target`` into a throwaway folder under the temp dir, without
its dependencies (so no other torch is pulled); the few it needs beyond rl-core's own
(cloudpickle, pandas, matplotlib) are installed there too when missing.

    python benchmarks/pg_speed_vs_sb3.py                # 300k frames, seeds 0-4: ~8 minutes
    python benchmarks/pg_speed_vs_sb3.py --frames 150000 --seeds 0 1 2 --repeats 2
"""

from __future__ import annotations

import argparse
import concurrent.futures
import importlib.util
import multiprocessing
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pg_learning import EpisodeRecorder, train_recorded

THRESHOLD = 475.0
SB3_DIR = Path(tempfile.gettempdir()) / "rlcore-bench-sb3"
HYPER = {
    "num_envs": 4,
    "steps": 128,
    "epochs": 4,
    "minibatches": 4,
    "lr": 2.5e-4,
    "gamma": 0.99,
    "gae_lambda": 0.95,
    "clip_range": 0.2,
    "entropy_coef": 0.0,
    "value_coef": 0.5,
    "max_grad_norm": 0.5,
}


def ensure_sb3() -> None:
    """Make ``stable_baselines3`` importable, installing it into :data:`SB3_DIR` if needed."""
    if str(SB3_DIR) not in sys.path:
        sys.path.insert(0, str(SB3_DIR))
    if importlib.util.find_spec("stable_baselines3") is not None:
        return
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--target", str(SB3_DIR)]
    print(f"# installing stable-baselines3 into {SB3_DIR} (no dependencies)", file=sys.stderr)
    subprocess.run([*pip, "--no-deps", "stable-baselines3==2.9.2"], check=True)
    missing = [name for name in ("cloudpickle", "pandas", "matplotlib") if importlib.util.find_spec(name) is None]
    if missing:  # none of these depends on torch
        subprocess.run([*pip, *missing], check=True)
    importlib.invalidate_caches()


def run_rlcore(seed: int, frames: int) -> dict[str, Any]:
    """Train rl-core PPO; return frames/s and the seconds to the threshold."""
    import torch

    torch.set_num_threads(1)

    h = HYPER
    overrides = [
        "algo.name=ppo",
        "env.id=CartPole-v1",
        f"env.num_envs={h['num_envs']}",
        f"collector.frames_per_batch={h['num_envs'] * h['steps']}",
        f"algo.epochs={h['epochs']}",
        f"algo.minibatches={h['minibatches']}",
        f"algo.gamma={h['gamma']}",
        f"algo.gae_lambda={h['gae_lambda']}",
        f"algo.clip_range={h['clip_range']}",
        "algo.schedule.clip_range=null",  # rl-core's PPO anneals the clip range by default; SB3's stays constant
        f"algo.entropy_coef={h['entropy_coef']}",
        f"algo.value_coef={h['value_coef']}",
        "algo.hidden_sizes=[64, 64]",
        "algo.activation=tanh",
        "algo.normalize_advantage=true",
        f"optim.lr={h['lr']}",
        "optim.eps=0.00001",
        "optim.lr_schedule=constant",
        f"trainer.clip_norm={h['max_grad_norm']}",
        f"trainer.total_frames={frames}",
        f"trainer.seed={seed}",
    ]
    trainer, recorder, seconds = train_recorded(overrides)
    return _result("rl-core", seed, trainer.collected_frames, seconds, recorder)


def run_sb3(seed: int, frames: int) -> dict[str, Any]:
    """Train Stable-Baselines3 PPO with the same hyperparameters; return frames/s and the seconds to the threshold."""
    ensure_sb3()
    import torch

    torch.set_num_threads(1)
    from stable_baselines3 import PPO
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.env_util import make_vec_env

    recorder = EpisodeRecorder()

    class Record(BaseCallback):
        def _on_step(self) -> bool:
            now = time.perf_counter() - recorder._start
            for info in self.locals["infos"]:
                if "episode" in info:
                    recorder.returns.append(float(info["episode"]["r"]))
                    recorder.frames.append(self.num_timesteps)
                    recorder.seconds.append(now)
            return True

    h = HYPER
    env = make_vec_env("CartPole-v1", n_envs=h["num_envs"], seed=seed)
    model = PPO(
        "MlpPolicy",
        env,
        n_steps=h["steps"],
        batch_size=h["num_envs"] * h["steps"] // h["minibatches"],
        n_epochs=h["epochs"],
        learning_rate=h["lr"],
        gamma=h["gamma"],
        gae_lambda=h["gae_lambda"],
        clip_range=h["clip_range"],
        ent_coef=h["entropy_coef"],
        vf_coef=h["value_coef"],
        max_grad_norm=h["max_grad_norm"],
        policy_kwargs={"net_arch": {"pi": [64, 64], "vf": [64, 64]}, "activation_fn": torch.nn.Tanh},
        device="cpu",
        seed=seed,
        verbose=0,
    )
    start = recorder._start = time.perf_counter()
    model.learn(total_timesteps=frames, callback=Record())
    seconds = time.perf_counter() - start
    return _result("Stable-Baselines3", seed, model.num_timesteps, seconds, recorder)


def _result(name: str, seed: int, frames: int, seconds: float, recorder: EpisodeRecorder) -> dict[str, Any]:
    _, reached = recorder.first_reaching(THRESHOLD)
    row = {
        "name": name,
        "seed": seed,
        "frames": frames,
        "seconds": seconds,
        "fps": frames / seconds,
        "to_threshold": reached,
        "final": recorder.final_mean(),
    }
    print(f"# {name} seed={seed}: {row['fps']:.0f} frames/s, 475 at {reached} s, final {row['final']:.1f}", file=sys.stderr, flush=True)
    return row


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def describe_machine() -> str:
    """This machine in one line: the CPU, its cores, the vector instructions torch's kernels use, torch's version.

    The ratios of the SB3 comparisons depend on it: where the networks' matrix products are most of a step
    (the off-policy algorithms' [256, 256] layers), both frameworks wait on the same products.
    """
    import torch

    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as info:
            lines = info.read().splitlines()
        model = next((line.split(":", 1)[1].strip() for line in lines if line.startswith("model name")), model)
        flags = next((line.split(":", 1)[1].split() for line in lines if line.startswith("flags")), [])
        extra = [name for name in ("avx512f", "amx_tile", "amx_bf16") if name in flags]
    except OSError:  # not Linux
        extra = []
    capability = torch.backends.cpu.get_cpu_capability()
    return f"machine: {model}, {os.cpu_count()} cores, torch {torch.__version__} ({capability}{', ' + ', '.join(extra) if extra else ''})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--frames", type=int, default=300_000, help="frames per run")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--repeats", type=int, default=1, help="runs of each framework per seed")
    args = parser.parse_args(argv)
    ensure_sb3()
    # pairs run back to back, in alternating order, so that a slow spell of a shared machine hits both
    jobs = [
        (fn, seed)
        for seed in args.seeds
        for repeat in range(args.repeats)
        for fn in ([run_rlcore, run_sb3] if (seed + repeat) % 2 == 0 else [run_sb3, run_rlcore])
    ]
    rows = []
    context = multiprocessing.get_context("spawn")
    for fn, seed in jobs:  # one at a time, each in a fresh process
        with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
            rows.append(pool.submit(fn, seed, args.frames).result())

    print(describe_machine() + "\n")
    print("| framework | seed | frames | wall s | frames/s | wall s to 475 (mean of last 20 episodes) | final return |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        reached = f"{r['to_threshold']:.1f}" if r["to_threshold"] is not None else "not reached"
        print(f"| {r['name']} | {r['seed']} | {r['frames']} | {r['seconds']:.1f} | {r['fps']:.0f} | {reached} | {r['final']:.1f} |")
    ours = [r for r in rows if r["name"] == "rl-core"]
    theirs = [r for r in rows if r["name"] == "Stable-Baselines3"]
    fps_ours, fps_theirs = _median([r["fps"] for r in ours]), _median([r["fps"] for r in theirs])
    pair_ratios = [a["fps"] / b["fps"] for a, b in zip(ours, theirs, strict=True)]
    print()
    print(f"rl-core PPO: {fps_ours:.0f} frames/s; Stable-Baselines3 PPO: {fps_theirs:.0f} frames/s (medians of {len(ours)} runs)")
    print(f"ratio of medians {fps_ours / fps_theirs:.2f}x; per pair {', '.join(f'{r:.2f}' for r in pair_ratios)}; median {_median(pair_ratios):.2f}x")
    for seed in args.seeds:
        a = [r["to_threshold"] for r in ours if r["seed"] == seed and r["to_threshold"] is not None]
        b = [r["to_threshold"] for r in theirs if r["seed"] == seed and r["to_threshold"] is not None]
        fmt = lambda xs: f"{_mean(xs):.1f} s" if xs else "not reached"
        print(f"seed {seed}: 475 reached after rl-core {fmt(a)}, Stable-Baselines3 {fmt(b)}")
    for name, runs in (("rl-core", ours), ("Stable-Baselines3", theirs)):
        reached = [r["to_threshold"] for r in runs if r["to_threshold"] is not None]
        median = f", median {_median(reached):.1f} s" if reached else ""
        print(f"{name}: 475 reached in {len(reached)} of {len(runs)} runs{median}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
