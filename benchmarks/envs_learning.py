"""Learning benchmark of the envs people study: PPO and DQN with the CNN on MinAtar, PPO on MuJoCo.

Each case trains several seeds of an algorithm (the overrides listed in ``CASES``; the CNN of
rl-plugin-nets is chosen for MinAtar's image observations by ``algo.encoder: auto``) and
reports, per seed, the mean return of the last 20 training episodes, the mean return of a
10-episode deterministic evaluation, and whether the seed passes the case's bar:

- ``ppo:MinAtar/Breakout-v1``: the final training return is at least 5x a uniformly random
  policy's mean return (measured here, 200 episodes, same env); 3 of 3 seeds.
- ``dqn:MinAtar/Breakout-v1``: the same bar, at 300k frames; 3 of 3 seeds.
- ``ppo:HalfCheetah-v5``: the final training return is at least 1500; 3 of 5 seeds.

    python benchmarks/envs_learning.py                                 # every case, its seeds
    python benchmarks/envs_learning.py --case ppo:MinAtar/Breakout-v1 --seeds 0 1 2
    python benchmarks/envs_learning.py --case ppo:HalfCheetah-v5 --frames 200000 --workers 1

It prints a markdown table and a summary (seeds passing against the seeds required). The
training loop and its episode recorder are pg_learning.py's.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pg_learning import deterministic_eval, run_jobs, train_case


@dataclass(frozen=True)
class Case:
    """One row group of the table: an algorithm on an env, and its bar."""

    algo: str
    env: str
    frames: int
    required: int
    seeds: tuple[int, ...]
    threshold: float | None = None  # an absolute bar; None: ``random_factor`` x a random policy's mean return
    random_factor: float = 5.0
    overrides: tuple[str, ...] = field(default_factory=tuple)


CASES = [
    Case(
        "ppo",
        "MinAtar/Breakout-v1",
        1_000_000,
        3,
        (0, 1, 2),
        overrides=(
            "env.num_envs=16",
            "collector.frames_per_batch=2048",
            "algo.encoder=auto",  # MinAtar's 10 x 10 x 4 boolean images: the CNN (MinAtar's small preset)
            "algo.gamma=0.99",
            "algo.gae_lambda=0.95",
            "algo.epochs=4",
            "algo.minibatches=8",
            "algo.entropy_coef=0.01",
            "algo.schedule.clip_range=null",
            "optim.lr=1e-3",
        ),
    ),
    Case(
        "dqn",
        "MinAtar/Breakout-v1",
        300_000,
        3,
        (0, 1, 2),
        overrides=(  # `rlctl config show dqn` with MinAtar's longer exploration (Young and Tian, 2019: 100k frames)
            "algo.eps_annealing_frames=100000",
            "algo.eps_end=0.01",
            "algo.init_random_frames=5000",
        ),
    ),
    Case(
        "ppo",
        "HalfCheetah-v5",
        1_000_000,
        3,
        (0, 1, 2, 3, 4),
        threshold=1500.0,
        overrides=(  # CleanRL's ppo_continuous_action.py
            "env.num_envs=1",
            "env.wrappers={normalize_observation: {}, normalize_reward: {gamma: 0.99}}",
            "collector.frames_per_batch=2048",
            "algo.gamma=0.99",
            "algo.gae_lambda=0.95",
            "algo.epochs=10",
            "algo.minibatches=32",
            "algo.value_clip_range=0.2",
            "algo.schedule.clip_range=null",
            "optim.lr=3e-4",
        ),
    ),
]


def random_policy_return(env_id: str, episodes: int = 200, seed: int = 0) -> float:
    """Mean return of ``episodes`` episodes of uniformly random actions (one env, the run's env id)."""
    env = rlcore_env(env_id)
    env.action_space.seed(seed)
    returns: list[float] = []
    total = 0.0
    env.reset(seed=seed)
    while len(returns) < episodes:
        _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        total += float(reward[0])
        if terminated[0] or truncated[0]:
            returns.append(total)
            total = 0.0
    env.close()
    return float(np.mean(returns))


def rlcore_env(env_id: str) -> Any:
    import rlcore

    return rlcore.make_vector_env(env_id, 1)


def run_one(case: Case, seed: int, frames: int | None, extra: tuple[str, ...]) -> dict[str, Any]:
    """Train one seed of ``case`` and return its row of the table."""
    trainer, recorder, seconds = train_case(case, seed, frames, extra)
    return {
        "algo": case.algo,
        "env": case.env,
        "seed": seed,
        "frames": trainer.collected_frames,
        "final": recorder.final_mean(),
        "eval": deterministic_eval(trainer),
        "seconds": seconds,
        "parameters": sum(p.numel() for p in trainer.loss_module.parameters()),
        "encoder": next((type(m).__name__ for m in trainer.loss_module.modules() if type(m).__name__ == "CNN"), "MLP"),
    }


def _run(args: tuple[Case, int, int | None, tuple[str, ...]]) -> dict[str, Any]:
    row = run_one(*args)
    print(
        f"# done {row['algo']} {row['env']} seed={row['seed']} final={row['final']:.1f} eval={row['eval']:.1f} in {row['seconds']:.0f}s",
        file=sys.stderr,
        flush=True,
    )
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    names = [f"{c.algo}:{c.env}" for c in CASES]
    parser.add_argument("--case", action="append", choices=names, help="ALGO:ENV (repeatable; default: all)")
    parser.add_argument("--seeds", type=int, nargs="+", help="default: each case's own seeds")
    parser.add_argument("--frames", type=int, help="override each case's frame budget")
    parser.add_argument("--set", dest="extra", action="append", default=[], metavar="KEY=VALUE", help="extra config override")
    parser.add_argument("--workers", type=int, default=1, help="parallel training processes (at most 2 advised)")
    args = parser.parse_args(argv)
    cases = [c for c in CASES if args.case is None or f"{c.algo}:{c.env}" in args.case]
    bars = {}
    for case in cases:
        if case.threshold is None:
            random_return = random_policy_return(case.env)
            bars[case.algo, case.env] = (case.random_factor * random_return, f"{case.random_factor:g} x random ({random_return:.3f})")
        else:
            bars[case.algo, case.env] = (case.threshold, f"{case.threshold:g}")
    jobs = [(case, seed, args.frames, tuple(args.extra)) for case in cases for seed in (args.seeds or case.seeds)]
    start = time.perf_counter()
    rows = run_jobs(_run, jobs, args.workers)

    print("| algo | env | encoder (parameters) | seed | frames | final return (last 20) | eval return (10, deterministic) | bar | passes? | seconds |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        bar, words = bars[row["algo"], row["env"]]
        row["passes"] = row["final"] >= bar
        print(
            f"| {row['algo']} | {row['env']} | {row['encoder']} ({row['parameters']:,}) | {row['seed']} | {row['frames']} | {row['final']:.2f} "
            f"| {row['eval']:.2f} | {words} = {bar:.2f} | {'yes' if row['passes'] else 'no'} | {row['seconds']:.0f} |"
        )
    print()
    for case in cases:
        mine = [r for r in rows if (r["algo"], r["env"]) == (case.algo, case.env)]
        passed = sum(r["passes"] for r in mine)
        print(f"{case.algo} {case.env}: {passed}/{len(mine)} seeds pass (required {case.required} of {len(case.seeds)})")
    print(f"total wall time {time.perf_counter() - start:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
