"""Scaling out: does the same PPO CartPole config learn on Ray and under torchrun, and what do Ray workers buy?

    python benchmarks/scale_out.py learn [--seeds 0 1 2] [--setup one --setup ray-sync ...]
    python benchmarks/scale_out.py throughput [--workers 1 2 4] [--batches 20] [--delay 0.005]

``learn`` trains ``rlctl config show ppo --env CartPole-v1`` (100k frames) as a user would, from the
command line, once per setup and seed, and evaluates the result (``rlctl eval``, 20 deterministic
episodes):

- ``one``: one process (``rlctl train``);
- ``ray-sync``: ``collector: {name: ray, num_workers: 2}`` (a local Ray cluster, the batch gathered from both workers);
- ``ray-async``: the same with ``mode: async`` (the first batch ready, policy lag and utd_ratio logged);
- ``torchrun``: ``torchrun --standalone --nproc_per_node 2 -m rlcore train`` (two data-parallel learners, gloo).

A seed learns when its deterministic evaluation, or the mean of its last 10 logged batch returns, is
at least 475. The table also gives the first frame count at which the mean of 10 consecutive logged
batch returns reached 475, and the wall seconds of the whole command (Ray's start-up included).

``throughput`` measures frames/s, once start-up is over, of collection alone (the collector iterated,
nothing trained) and of the whole PPO loop (8 envs, batches of 256 frames), for the local collector
(with the ``sync`` and the ``async`` vectorization) and for 1, 2 and 4 Ray workers in sync and async
mode, on CartPole and on a simulated slow simulator: CartPole whose ``step`` sleeps ``--delay``
seconds (``SlowCartPole-v1``, defined here, used as ``scale_out:SlowCartPole-v1``), where collecting
is waiting and workers overlap their waits whatever the number of cores. The local Ray cluster has 2
CPUs; 4 workers get half a CPU each.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import gymnasium
from gymnasium.envs.classic_control import CartPoleEnv

HERE = Path(__file__).resolve().parent
THRESHOLD = 475.0
SETUPS = ("one", "ray-sync", "ray-async", "torchrun")
RAY = ["--set", "collector.name=ray", "--set", "collector.num_workers=2"]


class SlowCartPole(CartPoleEnv):
    """CartPole whose every step takes ``delay`` seconds more, as a slow simulator's would (sleeping, not computing).

    :param delay: seconds each ``step`` sleeps.
    """

    def __init__(self, delay: float = 0.005, render_mode: str | None = None) -> None:
        super().__init__(render_mode=render_mode)
        self.delay = delay

    def step(self, action: Any) -> Any:
        time.sleep(self.delay)
        return super().step(action)


if "SlowCartPole-v1" not in gymnasium.registry:  # `scale_out:SlowCartPole-v1` imports this module in any process first
    gymnasium.register("SlowCartPole-v1", entry_point="scale_out:SlowCartPole", max_episode_steps=500)


# ---------------------------------------------------------------------------------------------- learn


def command(setup: str, seed: int, run_dir: Path) -> list[str]:
    """The command line of one learning run."""
    base = ["train", "--algo", "ppo", "--env", "CartPole-v1", "--seed", str(seed), "--out", str(run_dir)]
    base += ["--set", "loggers.console=null", "--set", "trainer.progress_bar=false"]
    if setup == "torchrun":
        return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "-m", "rlcore", *base]
    extra = {"one": [], "ray-sync": RAY, "ray-async": [*RAY, "--set", "collector.mode=async"]}[setup]
    return [sys.executable, "-m", "rlcore", *base, *extra]


def logged(run_dir: Path, name: str) -> list[tuple[int, float]]:
    with open(run_dir / "metrics.csv", newline="") as handle:
        return [(int(r["frames"]), float(r["value"])) for r in csv.DictReader(handle) if r["name"] == name]


def learn_one(setup: str, seed: int, root: Path) -> dict[str, Any]:
    run_dir = root / f"{setup}-{seed}"
    tic = time.perf_counter()
    done = subprocess.run(command(setup, seed, run_dir), capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    seconds = time.perf_counter() - tic
    if done.returncode != 0:
        raise SystemExit(f"{setup} seed {seed} failed:\n{done.stderr[-3000:]}")
    evaluation = subprocess.run([sys.executable, "-m", "rlcore", "eval", str(run_dir), "--episodes", "20"], capture_output=True, text=True)
    report = json.loads(evaluation.stdout)
    returns = logged(run_dir, "train/episode_return")
    values = [v for _, v in returns]
    reached = next((returns[i][0] for i in range(9, len(values)) if statistics.mean(values[i - 9 : i + 1]) >= THRESHOLD), None)
    final = statistics.mean(values[-10:])
    lags = [v for _, v in logged(run_dir, "collector/policy_lag")]
    utd = [v for _, v in logged(run_dir, "collector/utd_ratio")]
    row = {
        "setup": setup,
        "seed": seed,
        "frames": logged(run_dir, "perf/fps")[-1][0],
        "final": final,
        "eval": float(report["mean_return"]),
        "reached": reached,
        "learns": final >= THRESHOLD or float(report["mean_return"]) >= THRESHOLD,
        "seconds": seconds,
        "lag": statistics.mean(lags) if lags else None,
        "utd": utd[-1] if utd else None,
    }
    print(f"# {setup} seed={seed} final={final:.1f} eval={row['eval']:.1f} reached={reached} in {seconds:.0f}s", file=sys.stderr, flush=True)
    return row


def learn(args: argparse.Namespace) -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for setup in args.setup or SETUPS:
            for seed in args.seeds:
                rows.append(learn_one(setup, seed, Path(tmp)))
    print("| setup | seed | frames | final return (last 10 batches) | eval return (20, deterministic) | frames to 475 | learns? | wall s | mean policy lag | utd_ratio |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        lag = "-" if r["lag"] is None else f"{r['lag']:.2f}"
        utd = "-" if r["utd"] is None else f"{r['utd']:.1f}"
        print(
            f"| {r['setup']} | {r['seed']} | {r['frames']} | {r['final']:.1f} | {r['eval']:.1f} | {r['reached'] or '-'} | "
            f"{'yes' if r['learns'] else 'no'} | {r['seconds']:.0f} | {lag} | {utd} |"
        )
    for setup in args.setup or SETUPS:
        mine = [r for r in rows if r["setup"] == setup]
        print(f"\n{setup}: {sum(r['learns'] for r in mine)}/{len(mine)} seeds learn", end="")
    print()


# ----------------------------------------------------------------------------------------- throughput


#: ``(label, vectorization, Ray workers or None, mode)`` of each row
Setup = tuple[str, str, int | None, str]


def build(env_id: str, setup: Setup, delay: float, run_dir: Path) -> Any:
    """A PPO trainer on ``env_id`` (8 envs, batches of 256 frames) with the local collector or Ray's."""
    import rlcore

    _, vectorization, workers, mode = setup
    collector: dict[str, Any] = {"name": "local"}
    if workers is not None:
        collector = {"name": "ray", "num_workers": workers, "mode": mode, "num_cpus_per_worker": 2 / max(workers, 2)}
    kwargs = {"delay": delay} if "SlowCartPole" in env_id else {}
    config = rlcore.load_config(
        algo={"name": "ppo"},
        env={"id": env_id, "num_envs": 8, "kwargs": kwargs, "vectorization": vectorization},
        collector=collector,
        trainer={"seed": 0, "progress_bar": False, "save_trainer_interval": 10**9},
        loggers={"console": None, "csv": None},
    )
    return rlcore.build_trainer(config, run_dir=run_dir)


def collection_fps(trainer: Any, batches: int) -> float:
    """Frames/s of the collector alone, after one batch of warm-up."""
    batches_iter = iter(trainer.collector)
    next(batches_iter)
    tic = time.perf_counter()
    frames = sum(next(batches_iter).numel() for _ in range(batches))
    return frames / (time.perf_counter() - tic)


def loop_fps(trainer: Any, batches: int) -> float:
    """Frames/s of ``trainer.train()`` for ``batches`` batches (weights sent to the workers after each)."""
    trainer.total_frames = batches * 256
    tic = time.perf_counter()
    trainer.train()
    return trainer.collected_frames / (time.perf_counter() - tic)


def throughput(args: argparse.Namespace) -> None:
    import logging

    import ray

    sys.path.insert(0, str(HERE))
    os.environ["PYTHONPATH"] = os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")])  # Ray's workers import scale_out too
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
    setups: list[Setup] = [("local, 1 process", "sync", None, ""), ("local, env.vectorization=async (8 env processes)", "async", None, "")]
    setups += [(f"ray, {n} worker{'s' * (n > 1)}, {mode}", "sync", n, mode) for mode in args.modes for n in args.workers]
    envs = [("CartPole-v1", "CartPole-v1"), (f"scale_out:SlowCartPole-v1 (step sleeps {args.delay * 1000:g} ms)", "scale_out:SlowCartPole-v1")]
    rows = []
    try:
        for label, env_id in envs:
            for setup in setups:
                batches = args.batches if "Slow" not in env_id else max(args.batches // 2, 3)  # 1.3 s a batch of 256 frames
                with tempfile.TemporaryDirectory() as tmp:
                    trainer = build(env_id, setup, args.delay, Path(tmp) / "collect")
                    try:
                        collect = collection_fps(trainer, batches)
                    finally:
                        trainer.collector.shutdown()
                    trainer = build(env_id, setup, args.delay, Path(tmp) / "loop")
                    loop = loop_fps(trainer, batches)
                name = setup[0]
                rows.append((label, name, collect, loop))
                print(f"# {label} {name}: collection {collect:.0f} f/s, loop {loop:.0f} f/s", file=sys.stderr, flush=True)
    finally:
        ray.shutdown()
    print(f"| env | collector | collection frames/s | whole loop frames/s (PPO, {args.batches} batches of 256) |")
    print("| --- | --- | --- | --- |")
    for label, name, collect, loop in rows:
        print(f"| {label} | {name} | {collect:.0f} | {loop:.0f} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    p_learn = sub.add_parser("learn", help="PPO CartPole to 475 on each setup")
    p_learn.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p_learn.add_argument("--setup", action="append", choices=SETUPS, help="repeatable; default: all")
    p_through = sub.add_parser("throughput", help="frames/s with 1, 2, 4 Ray workers")
    p_through.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    p_through.add_argument("--modes", nargs="+", choices=["sync", "async"], default=["sync", "async"])
    p_through.add_argument("--batches", type=int, default=20)
    p_through.add_argument("--delay", type=float, default=0.005, help="seconds each SlowCartPole step sleeps")
    args = parser.parse_args(argv)
    if args.what == "learn":
        learn(args)
    else:
        throughput(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
